// chord-replica/ag-ui's ResumableHttpAgent (the official HttpAgent, resuming) against chord's
// example agent through a TCP proxy that cuts the connection: each resumed client must end
// with the events, state and text of an uninterrupted reader of the same run.
// Driven by chord/tests/ag_ui_clients.rs, which starts the example:
//   CHORD_AG_UI_ANSWER='...' node js/test-ag-ui/resume.mjs cuts URL
//     cuts mid-run at several points (one cut, then three in one run), checks
//     `GET /runs/...` with `Last-Event-ID` against the whole view, and a bad id's 400;
//   CHORD_AG_UI_ANSWER='...' node js/test-ag-ui/resume.mjs restart URL
//     holds the connection after a few events, prints `FINISHED` once the run is over on the
//     server, then expects the server killed and started again on the same port and log
//     (the test does both): the client resumes from the restarted server;
//   CHORD_AG_UI_ANSWER='...' node js/test-ag-ui/resume.mjs killed URL
//     holds the connection after a few events and prints `HOLDING` while the run goes on;
//     the test kills the server then (the run's producer with it) and starts it again: the
//     client resumes and ends with the RUN_ERROR the restarted server gives a run whose
//     producer is gone, having seen each event of the run's log once.
// Prints one JSON line (what it saw) and exits 0, or says what failed and exits 1.

import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';

import { ResumableHttpAgent } from '../ag-ui.mjs';
import { checkLifecycle, collectWire, getJson, proxy, readView, textOf } from './shared.mjs';

const [mode, url] = process.argv.slice(2);
const answer = process.env.CHORD_AG_UI_ANSWER;
assert.ok(['cuts', 'restart', 'killed'].includes(mode) && url && answer, 'usage: CHORD_AG_UI_ANSWER=... node resume.mjs cuts|restart|killed URL');
const target = new URL(url);

/** Runs a ResumableHttpAgent at `agentUrl`; returns what it ended with. */
async function runResumable(agentUrl, runId, reconnect) {
  const wire = [];
  const agent = new ResumableHttpAgent({
    url: agentUrl,
    threadId: 'resume-thread',
    fetch: collectWire(wire, (input, init) => fetch(input, init)),
    reconnect: { backoffMin: 20, backoffMax: 200, ...reconnect },
  });
  agent.messages = [{ id: 'user-1', role: 'user', content: 'What does chord do for AG-UI?' }];
  const events = [];
  const failures = [];
  agent.subscribe({
    onEvent: ({ event }) => void events.push(event),
    onRunFailed: ({ error }) => void failures.push(String(error)),
  });
  await agent.runAgent({ runId });
  assert.deepEqual(failures, [], 'the run failed in the client');
  assert.equal(agent.resumeError, undefined, `the run could not be resumed: ${agent.resumeError}`);
  const lastEventIds = wire.requests.map((r) => r.headers.get('last-event-id'));
  return { agent, events, wire, lastEventIds };
}

/** The resumed client against an uninterrupted reader of the same run: the same in every way. */
async function compare(name, got, base, runId) {
  const { agent, events } = got;
  const view = await readView(base, agent.threadId, runId);
  const whole = view.map((v) => v.event);
  assert.ok(isDeepStrictEqual(events, whole), `${name}: the resumed client's events differ from the run's:\n${JSON.stringify(events.map((e) => e.type))}\n${JSON.stringify(whole.map((e) => e.type))}`);
  checkLifecycle(whole, view, { threadId: agent.threadId, runId });
  const state = await getJson(new URL(`runs/${agent.threadId}/${runId}/state`, base));
  assert.ok(isDeepStrictEqual(agent.state, state), `${name}: state ${JSON.stringify(agent.state)} is not the producer's ${JSON.stringify(state)}`);
  const assistant = agent.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistant.length, 1, `${name}: ${JSON.stringify(agent.messages)}`);
  assert.equal(assistant[0].content, answer, `${name}: the text is not the answer`);
  assert.equal(textOf(whole, assistant[0].id), answer);
  // Every request after the first named the last event the client had whole, and the
  // resumed answers carried no second RUN_STARTED.
  for (const id of got.lastEventIds.slice(1)) {
    assert.ok(id === null || view.some((v) => v.id === id), `${name}: Last-Event-ID ${id} is no event's id`);
  }
  return { events: whole.length, reconnects: agent.reconnects, lastEventIds: got.lastEventIds };
}

const report = { mode };
if (mode === 'cuts') {
  // The size of a whole answer, through the proxy without a cut.
  const measure = await proxy(target, []);
  const plain = await runResumable(measure.url, `run-m-${process.pid}`);
  measure.server.close();
  assert.equal(plain.agent.reconnects, 0);
  const total = measure.connections[0].passed;
  report.total = total;
  report.uninterrupted = await compare('uninterrupted', plain, url, `run-m-${process.pid}`);
  // One cut at each of several points (in the headers, mid-run, inside RUN_FINISHED), then a run
  // cut three times.
  const plans = [[37], [Math.floor(total * 0.15)], [Math.floor(total * 0.5) + 7], [total - 70], [Math.floor(total * 0.2), 150, 900]];
  report.cuts = [];
  for (const [i, cuts] of plans.entries()) {
    const p = await proxy(target, cuts.map((cut) => ({ cut })));
    const runId = `run-${i}-${process.pid}`;
    const got = await runResumable(p.url, runId);
    p.server.close();
    const seen = await compare(`cuts ${cuts}`, got, url, runId);
    assert.equal(seen.reconnects, cuts.length, `cuts ${cuts}: reconnects`);
    report.cuts.push({ cuts, ...seen });
  }
  // The GET view after an id, mid-record included, is the whole view's rest.
  const runId = `run-m-${process.pid}`;
  const view = await readView(url, 'resume-thread', runId);
  for (const at of [0, 1, 2, Math.floor(view.length / 2), view.length - 2]) {
    const rest = await readView(url, 'resume-thread', runId, view[at].id);
    assert.deepEqual(rest, view.slice(at + 1), `GET after ${view[at].id}`);
  }
  for (const bad of ['nonsense', '0000000000000001', 'ffffffffffffffff:0']) {
    const response = await fetch(new URL(`runs/resume-thread/${runId}`, url), { headers: { 'last-event-id': bad } });
    assert.equal(response.status, 400, `Last-Event-ID ${bad}: ${response.status}`);
    assert.ok((await response.text()).length > 0, 'a 400 says why');
  }
} else if (mode === 'killed') {
  let held;
  const holding = new Promise((resolve) => (held = resolve));
  // Held mid-answer: a text message is in flight when the server dies.
  const p = await proxy(target, [{ hold: 2500, onHold: () => held() }]);
  const runId = `killed-${process.pid}`;
  const running = runResumable(p.url, runId, { retries: 60, backoffMin: 50, backoffMax: 250 });
  await holding;
  process.stdout.write('HOLDING\n');
  const got = await running;
  p.server.close();
  const { agent, events } = got;
  assert.ok(agent.reconnects >= 1, 'the client never reconnected');
  // The restarted server's view of the run: what the log held, then its RUN_ERROR.
  const view = await readView(url, agent.threadId, runId);
  assert.ok(isDeepStrictEqual(events, view.map((v) => v.event)), `the client's events differ from the run's:\n${JSON.stringify(events.map((e) => e.type))}\n${JSON.stringify(view.map((v) => v.event.type))}`);
  const last = events.at(-1);
  assert.equal(last.type, 'RUN_ERROR', `the run ended with ${JSON.stringify(last)}`);
  assert.ok(!events.some((e) => e.type === 'RUN_FINISHED'), 'a run whose producer was killed finished');
  assert.equal(events.filter((e) => e.type === 'RUN_STARTED').length, 1);
  const state = await getJson(new URL(`runs/${agent.threadId}/${runId}/state`, url));
  assert.ok(isDeepStrictEqual(agent.state, state), `state ${JSON.stringify(agent.state)} is not the log's ${JSON.stringify(state)}`);
  // The text so far is a beginning of the answer.
  const text = agent.messages.filter((m) => m.role === 'assistant').map((m) => m.content).join('');
  assert.ok(answer.startsWith(text), `text ${JSON.stringify(text)}`);
  report.killed = { events: events.length, reconnects: agent.reconnects, error: last.message, text: text.length };
} else {
  let held;
  const finished = new Promise((resolve) => (held = resolve));
  const p = await proxy(target, [{ hold: 600, onHold: () => held() }]);
  const runId = `restart-${process.pid}`;
  const running = runResumable(p.url, runId, { retries: 60, backoffMin: 50, backoffMax: 250 });
  await finished;
  // The run goes on on the server: wait until it is over there, then let the test restart it.
  const before = await readView(url, 'resume-thread', runId);
  assert.equal(before.at(-1).event.type, 'RUN_FINISHED');
  process.stdout.write('FINISHED\n');
  const got = await running;
  p.server.close();
  assert.ok(got.agent.reconnects >= 1, 'the client never reconnected');
  // The restarted server serves the run from its log: the same events, same ids.
  report.restart = await compare('restart', got, url, runId);
  const after = await readView(url, 'resume-thread', runId);
  assert.deepEqual(after, before, 'the restarted server serves another view of the run');
  report.held = p.connections[0].passed;
}
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(0);
