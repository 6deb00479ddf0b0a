// chord's AI SDK example (chord/examples/ai_sdk_chat.rs) resumed by the AI SDK's own client:
// `@ai-sdk/react`'s `Chat` (what `useChat` holds) on `DefaultChatTransport`, whose
// `resumeStream()` GETs `/api/chat/{id}/stream` (no `Last-Event-ID`: the default transport
// sends none, and takes the answer as a replay of the message from its start). Through a TCP
// proxy that cuts the connection. Driven by chord/tests/ai_sdk_clients.rs, which starts the
// example:
//   CHORD_AI_SDK_ANSWER='...' node js/test-ai-sdk/resume.mjs cuts URL
//     cuts the POST's answer at several points (in the headers, early, mid-answer, and three
//     times in one run, the resumed answers cut too), resuming after each: the chat ends with
//     one assistant message, its text the answer once, one data-state part equal to
//     `GET .../state`, and the state kept from the data parts equal to it as well;
//   CHORD_AI_SDK_ANSWER='...' node js/test-ai-sdk/resume.mjs late URL
//     cuts the POST's answer inside its last chunks (the final data-state and finish, written
//     after the run ended): the resumed chat ends as in `cuts`, its data-state the final one;
//   CHORD_AI_SDK_ANSWER='...' node js/test-ai-sdk/resume.mjs killed URL
//     holds the connection mid-answer and prints `HOLDING`; the test kills the example
//     (SIGKILL: the run's producer dies with it) and starts it again on the same --dir and
//     port; the chat resumes (retrying while the server is down) and the resumed stream ends
//     with an `error` chunk saying the producer is gone; the message holds the text the log
//     holds, once, and the state kept from the data parts is `GET .../state`.
// Prints one JSON line (what it saw) and exits 0, or says what failed and exits 1.

import assert from 'node:assert/strict';

import { proxy } from '../test-ag-ui/shared.mjs';
import { checkChat, getJson, makeChat, QUESTION, sleep, textOf } from './shared.mjs';

const [mode, url, transport = 'default'] = process.argv.slice(2);
const answer = process.env.CHORD_AI_SDK_ANSWER;
assert.ok(['cuts', 'late', 'killed'].includes(mode) && url && answer && ['default', 'chord'].includes(transport), 'usage: CHORD_AI_SDK_ANSWER=... node resume.mjs cuts|late|killed URL [default|chord]');
// With chord's transport the transport resumes a cut itself (`Last-Event-ID`): the chat never
// sees it. With the default one the chat sees the cut and resumes (`resumeStream()`).
const chord = transport === 'chord';
const target = new URL(url);
const api = new URL('api/chat', url).href;

/** Whether the chat's error is the stream's own `error` chunk (`CODE: message`), not a cut. */
const chunkError = (chat) => chat.status === 'error' && /^[A-Z_]+: /.test(chat.error?.message ?? '');

/**
 * Sends the question, then `resumeStream()`s while the chat is in error from a cut or a
 * refused connection (at most `attempts` times, `pause` ms apart); returns the resumes.
 */
async function converse(chat, { attempts = 20, pause = 20 } = {}) {
  await chat.sendMessage({ text: QUESTION });
  let resumes = 0;
  while (chat.status === 'error' && !chunkError(chat)) {
    assert.ok(resumes < attempts, `still failing after ${attempts} resumes: ${chat.error}`);
    await sleep(pause);
    resumes += 1;
    await chat.resumeStream();
  }
  return resumes;
}

/** What the requests of a chat were: `POST 200`, `GET 200 (no Last-Event-ID)`, ... */
function requests(log) {
  return log.map((r) => `${r.method} ${r.status ?? 'refused'}${r.method === 'GET' ? (r.headers['last-event-id'] ? ` after ${r.headers['last-event-id']}` : '') : ''}`);
}

const report = { mode, transport };

/** Each request after the first named the last event the client had (chord's transport). */
function checkLastEventIds(name, log) {
  for (const r of log.slice(1)) assert.ok(/^[0-9a-f]{16}:[0-9]+$/.test(r.headers['last-event-id'] ?? ''), `${name}: ${r.method} ${r.url} without Last-Event-ID: ${JSON.stringify(requests(log))}`);
}
if (mode === 'cuts') {
  // The size of a whole answer, through the proxy without a cut.
  const measure = await proxy(target, []);
  const plain = makeChat(`m-${process.pid}`, new URL('api/chat', measure.url).href, [], transport);
  assert.equal(await converse(plain.chat), 0);
  measure.server.close();
  await checkChat('uninterrupted', plain, api, { answer, runId: 't1' });
  const total = measure.connections[0].passed;
  report.total = total;
  // One cut at each of several points (in the response's headers, at the start, mid-answer),
  // then one run cut three times, the resumed answers cut too (each replays from the start).
  const plans = [[37], [Math.floor(total * 0.15)], [Math.floor(total * 0.5) + 7], [Math.floor(total * 0.2), 150, 900]];
  report.cuts = [];
  for (const [i, cuts] of plans.entries()) {
    const p = await proxy(target, cuts.map((cut) => ({ cut })));
    const got = makeChat(`cut-${i}-${process.pid}`, new URL('api/chat', p.url).href, [], transport);
    const resumes = await converse(got.chat);
    p.server.close();
    assert.equal(got.chat.status, 'ready', `cuts ${cuts}: ${got.chat.status} ${got.chat.error}`);
    assert.equal(p.connections.length, cuts.length + 1, `cuts ${cuts}: ${JSON.stringify(requests(got.log))}`);
    if (chord && cuts[0] === 37) {
      // Cut inside the POST's response headers: no stream yet, so nothing for the transport
      // to resume; the chat sees the failure and resumes the run from its start.
      assert.equal(resumes, 1, `cuts ${cuts}: ${JSON.stringify(requests(got.log))}`);
    } else if (chord) {
      assert.equal(resumes, 0, `cuts ${cuts}: the chat saw a cut: ${JSON.stringify(requests(got.log))}`);
      checkLastEventIds(`cuts ${cuts}`, got.log);
    } else {
      assert.equal(resumes, cuts.length, `cuts ${cuts}: resumes ${JSON.stringify(requests(got.log))}`);
    }
    await checkChat(`cuts ${cuts}`, got, api, { answer, runId: 't1' });
    assert.equal(got.chat.messages.length, 2, `cuts ${cuts}: ${JSON.stringify(got.chat.messages.map((m) => m.role))}`);
    report.cuts.push({ cuts, resumes, requests: requests(got.log), passed: p.connections.map((c) => c.passed) });
  }
} else if (mode === 'late') {
  // Cut inside the run's last chunks (its final data-state, finish, [DONE]), which the server
  // wrote after the run's end: the run is over when the chat resumes.
  const measure = await proxy(target, []);
  const plain = makeChat(`lm-${process.pid}`, new URL('api/chat', measure.url).href, [], transport);
  assert.equal(await converse(plain.chat), 0);
  measure.server.close();
  const total = measure.connections[0].passed;
  report.late = [];
  for (const back of [60, 200]) {
    const p = await proxy(target, [{ cut: total - back }]);
    const got = makeChat(`late-${back}-${process.pid}`, new URL('api/chat', p.url).href, [], transport);
    const resumes = await converse(got.chat);
    p.server.close();
    assert.equal(resumes, chord ? 0 : 1, `cut ${back} bytes before the end: ${JSON.stringify(requests(got.log))}`);
    if (chord) checkLastEventIds(`cut ${back} bytes before the end`, got.log);
    const last = got.log[0].events.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data).type);
    assert.ok(!last.includes('finish'), `cut ${back} bytes before the end: the finish chunk arrived`);
    assert.equal(got.chat.status, 'ready', `cut ${back} bytes before the end: ${got.chat.status} ${got.chat.error}`);
    await checkChat(`cut ${back} bytes before the end (requests ${JSON.stringify(requests(got.log))})`, got, api, { answer, runId: 't1' });
    report.late.push({ back, requests: requests(got.log) });
  }
} else {
  let held;
  const holding = new Promise((resolve) => (held = resolve));
  // Held mid-answer: the answer is being streamed when the server dies.
  const p = await proxy(target, [{ hold: 2600, onHold: () => held() }]);
  const got = makeChat(`killed-${process.pid}`, new URL('api/chat', p.url).href, [], transport);
  const running = converse(got.chat, { attempts: 100, pause: 100 });
  await holding;
  process.stdout.write('HOLDING\n');
  const resumes = await running;
  p.server.close();
  const { chat, live, log } = got;
  if (chord) {
    assert.equal(resumes, 0, `the chat saw the cut: ${JSON.stringify(requests(log))}`);
    checkLastEventIds('killed', log);
  } else {
    assert.ok(resumes >= 1, 'the chat never resumed');
  }
  assert.ok(chunkError(chat), `the chat did not end with the stream's error chunk: ${chat.status} ${chat.error}; its requests: ${JSON.stringify(requests(log))}`);
  assert.match(chat.error.message, /^PRODUCER_GONE: /);
  // The resumed stream's last chunk is that error, then [DONE].
  const last = log.findLast((r) => r.method === 'GET' && r.status === 200);
  assert.ok(last, `no resumed stream: ${JSON.stringify(requests(log))}`);
  const data = last.events.map((e) => e.data);
  assert.equal(data.at(-1), '[DONE]');
  const end = JSON.parse(data.at(-2));
  assert.equal(end.type, 'error', `the resumed stream ended with ${data.at(-2)}`);
  assert.match(end.errorText, /^PRODUCER_GONE: /);
  assert.ok(!data.some((d) => d !== '[DONE]' && JSON.parse(d).type === 'finish'), 'a run whose producer was killed finished');
  // The restarted server's state of the run: the log's, ended.
  const state = await getJson(`${api}/${encodeURIComponent(chat.id)}/state`);
  const assistant = chat.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistant.length, 1, `${assistant.length} assistant messages: ${JSON.stringify(chat.messages)}`);
  const [message] = assistant;
  assert.equal(message.id, 't1');
  const types = message.parts.map((p) => p.type);
  assert.ok(types.filter((t) => t === 'text').length <= 1, `text parts ${JSON.stringify(types)}`);
  assert.equal(types.filter((t) => t === 'data-state').length, 1, `data-state parts ${JSON.stringify(types)}`);
  const text = textOf(message);
  // Killed mid-answer: part of the text had gone out, not all of it; the message holds
  // exactly what the log holds, once.
  assert.ok(text.length > 0 && text.length < answer.length && answer.startsWith(text), `text ${JSON.stringify(text)}`);
  assert.equal(text, state.answer, 'the message\'s text is not the log\'s answer');
  assert.deepEqual(live.state, state, 'the state kept from the data parts is not GET .../state');
  report.killed = {
    resumes,
    reconnects: log.length - 1,
    requests: requests(log),
    error: chat.error.message,
    text: text.length,
    dataStateIsFinal: JSON.stringify(message.parts.find((p) => p.type === 'data-state').data) === JSON.stringify(state),
  };
}
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(0);
