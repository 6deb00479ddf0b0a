// chord's AI SDK example (chord/examples/ai_sdk_chat.rs) read by the AI SDK itself
// (`ai` 7.0.173), driven by chord/tests/ai_sdk_clients.rs, which starts the example:
//   CHORD_AI_SDK_ANSWER='...' node js/test-ai-sdk/chunks.mjs URL
// A POSTed run read raw: the header useChat checks, every event with an id `<offset>:<k>`
// (increasing), every chunk accepted by `ai`'s exported `uiMessageChunkSchema` (and no member
// it does not list), `start` first, `finish` last, then `data: [DONE]`; the chunks assembled
// by `readUIMessageStream` into a message whose text is the state's `answer` and whose
// persistent `data-state` part is `GET /api/chat/{id}/state`; then a chat through
// `@ai-sdk/react`'s `Chat` on `DefaultChatTransport` (the SDK's own parsing, with the schema),
// ending the same. Prints one JSON line (what it saw) and exits 0, or says what failed and
// exits 1.

import assert from 'node:assert/strict';

import { readUIMessageStream } from 'ai';
import { apply } from 'chord-replica';

import { chatBody, checkChat, checkChunk, getJson, makeChat, QUESTION, readEvents, textOf } from './shared.mjs';

const [url] = process.argv.slice(2);
const answer = process.env.CHORD_AI_SDK_ANSWER;
assert.ok(url && answer, 'usage: CHORD_AI_SDK_ANSWER=... node chunks.mjs URL');
const api = new URL('api/chat', url).href;
const report = {};

// The raw stream of a POST.
const chatId = `raw-${process.pid}`;
const response = await fetch(api, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(chatBody(chatId)),
});
assert.equal(response.status, 200, `POST ${api}: ${response.status} ${await response.clone().text()}`);
assert.equal(response.headers.get('x-vercel-ai-ui-message-stream'), 'v1');
assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
const events = await readEvents(response);
assert.equal(events.at(-1).data, '[DONE]', 'the stream does not end with [DONE]');
assert.equal(events.filter((e) => e.data === '[DONE]').length, 1, '[DONE] twice');
const chunks = [];
let previous = null;
for (const [i, { id, data }] of events.slice(0, -1).entries()) {
  chunks.push(await checkChunk(data, `chunk ${i}`));
  const match = /^([0-9a-f]{16}):(0|[1-9][0-9]*)$/.exec(id ?? '');
  assert.ok(match, `chunk ${i}: id ${JSON.stringify(id)} is not <16 hex digits>:<k>`);
  const at = [match[1], Number(match[2])];
  if (previous) {
    const later = at[0] > previous[0] ? at[1] === 0 : at[0] === previous[0] && at[1] === previous[1] + 1;
    assert.ok(later, `chunk ${i}: id ${id} does not follow ${previous.join(':')}`);
  }
  previous = at;
}
const types = chunks.map((c) => c.type);
assert.deepEqual(chunks[0], { type: 'start', messageId: 't1' }, 'the first chunk');
assert.equal(types[1], 'data-state', 'the state follows start');
assert.deepEqual(types.slice(-2), ['data-state', 'finish'], 'the end');
assert.equal(types.filter((t) => t === 'start').length, 1);
assert.equal(types.filter((t) => t === 'text-start').length, 1);
assert.equal(types.filter((t) => t === 'text-end').length, 1);
const tokens = answer.split(/(?<= )/);
assert.equal(types.filter((t) => t === 'text-delta').length, tokens.length, 'one text-delta a token');
for (const c of chunks.filter((c) => c.type === 'data-chord')) assert.equal(c.transient, true, 'data-chord is transient');
for (const c of chunks.filter((c) => c.type === 'data-state')) assert.equal(c.id, 'state');
// The transient batches applied to the first data-state (before the AI SDK reads the chunks:
// readUIMessageStream writes the later data-state's data into the first chunk's part).
let replica = structuredClone(chunks[1].data);
for (const c of chunks.filter((c) => c.type === 'data-chord')) replica = apply(replica, c.data);
// The chunks as the AI SDK assembles them (copies: it changes what it is given).
let message;
for await (const m of readUIMessageStream({ stream: ReadableStream.from(structuredClone(chunks)), onError: (e) => assert.fail(`readUIMessageStream: ${e}`) })) message = m;
const state = await getJson(`${api}/${chatId}/state`);
assert.equal(message.id, 't1');
assert.equal(message.role, 'assistant');
assert.equal(textOf(message), answer, 'the assembled text is not the answer');
assert.equal(textOf(message), state.answer, 'the assembled text is not the state\'s answer');
const dataState = message.parts.filter((p) => p.type === 'data-state');
assert.equal(dataState.length, 1, 'the data-state part is kept once');
assert.deepEqual(dataState[0].data, state, 'the last data-state part is not GET .../state');
assert.ok(!message.parts.some((p) => p.type === 'data-chord'), 'a transient data-chord part was kept');
assert.equal(state.question, QUESTION);
assert.ok(state.plan.length === 3 && state.plan.every((s) => s.status === 'done'), `the plan: ${JSON.stringify(state.plan)}`);
assert.ok(state.tools[0].done && state.tools[0].output.split('\n').length > 2, `the tool: ${JSON.stringify(state.tools)}`);
assert.deepEqual(replica, state, 'the data-chord batches applied to the first data-state');
// A token appended to `answer` costs the token: its batch is one append op.
const appends = chunks.filter((c) => c.type === 'data-chord' && c.data.some((op) => op[0] === 'a' && op[1].at(-1) === 'answer'));
assert.equal(appends.length, tokens.length, 'one append to answer a token');
report.raw = { chunks: chunks.length, types: Object.fromEntries([...new Set(types)].map((t) => [t, types.filter((x) => x === t).length])) };

// The same through the SDK's Chat on its default transport.
const chat = makeChat(`chat-${process.pid}`, api);
await chat.chat.sendMessage({ text: QUESTION });
assert.equal(chat.chat.status, 'ready', `the chat's status: ${chat.chat.status} ${chat.chat.error}`);
const seen = await checkChat('Chat', chat, api, { answer, runId: 't1' });
assert.equal(chat.chat.messages.length, 2);
report.chat = { parts: seen.message.parts.map((p) => p.type), data: chat.live.data.length };
// A second turn of the same chat is its run t2.
await chat.chat.sendMessage({ text: 'And again?' });
assert.equal(chat.chat.status, 'ready', `the second turn: ${chat.chat.status} ${chat.chat.error}`);
assert.equal(chat.chat.messages.length, 4);
assert.equal(chat.chat.messages[3].id, 't2');
assert.equal(textOf(chat.chat.messages[3]), answer);
// Just ended: a resume without Last-Event-ID (the default transport's) gets the turn as it
// ended, within the door's replay window (a client cut before the end learns it); the chat
// takes it as a replay of the same message, and stays as it is. (Past the window it is 204:
// chord/tests/ai_sdk_door.rs.)
const before = JSON.stringify(chat.chat.messages);
await chat.chat.resumeStream();
assert.equal(chat.chat.status, 'ready');
assert.equal(chat.log.at(-1).status, 200, 'GET .../stream just after the turn ended');
assert.equal(JSON.stringify(chat.chat.messages), before, 'a replay of the turn changed the chat');
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(0);
