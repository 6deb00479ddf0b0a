// The official AG-UI client (`@ag-ui/client`'s HttpAgent, as a frontend uses it) runs chord's
// example agent; every event on the wire must parse with `@ag-ui/core`'s event schemas (and
// carry no property they do not describe), the client must say nothing of stripped material,
// the lifecycle must be in order, the client's state at the end must equal the producer's
// (`GET /runs/{threadId}/{runId}/state`) and the text it assembled must equal the answer.
// Driven by chord/tests/ag_ui_clients.rs, which starts the example:
//   CHORD_AG_UI_ANSWER='...' node js/test-ag-ui/official-client.mjs http://127.0.0.1:PORT/
// Prints one JSON line (what it saw) and exits 0, or says what failed and exits 1.

import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';

import { HttpAgent } from '@ag-ui/client';
import { EventType } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';

import { EventParser } from '../chord-replica.mjs';
import { checkLifecycle, collectWire, getJson, strictSchemas, textOf } from './shared.mjs';

const [url] = process.argv.slice(2);
const answer = process.env.CHORD_AG_UI_ANSWER;
assert.ok(url && answer, 'usage: CHORD_AG_UI_ANSWER=... node official-client.mjs URL');

// What the client says about events it had to repair: any such warning is a failure.
const warnings = [];
const warn = console.warn;
console.warn = (...args) => {
  warnings.push(args.map(String).join(' '));
  warn(...args);
};

const wire = [];
const agent = new HttpAgent({
  url,
  threadId: `thread-${process.pid}`,
  fetch: collectWire(wire, (input, init) => fetch(input, init)),
});
agent.messages = [{ id: 'user-1', role: 'user', content: 'What does chord do for AG-UI?' }];
const seen = [];
const failures = [];
const callbacks = {};
// Every event the client hands to a subscriber, and every typed callback too.
agent.subscribe({
  onEvent: ({ event }) => void seen.push(event),
  onRunFailed: ({ error }) => void failures.push(error),
  onStateChanged: () => void (callbacks.stateChanged = (callbacks.stateChanged ?? 0) + 1),
  onTextMessageEndEvent: ({ textMessageBuffer }) => void (callbacks.lastBuffer = textMessageBuffer),
});
const runId = `run-${process.pid}-${Date.now()}`;
const { newMessages } = await agent.runAgent({ runId });
assert.deepEqual(failures, [], 'the run failed in the client');

// 1. Every event as it came over the wire parses with @ag-ui/core's schemas, strictly.
const strict = strictSchemas(EventSchemas);
const events = wire.map(({ data }) => JSON.parse(data));
for (const [i, event] of events.entries()) {
  const parsed = EventSchemas.safeParse(event);
  assert.ok(parsed.success, `event ${i} (${event.type}) fails @ag-ui/core's EventSchemas: ${JSON.stringify(parsed.error?.issues)}\n${JSON.stringify(event)}`);
  const exact = strict.get(event.type)?.safeParse(event);
  assert.ok(exact?.success, `event ${i} (${event.type}) has properties the schema does not describe: ${JSON.stringify(exact?.error?.issues)}\n${JSON.stringify(event)}`);
}
assert.deepEqual(warnings.filter((w) => w.includes('[ag-ui]')), [], 'the client warned about the events');
// The client handed on exactly the events of the wire.
assert.deepEqual(seen, events, 'the client saw other events than the wire carried');

// 2. The lifecycle, the ids and the text events' order.
checkLifecycle(events, wire, { threadId: agent.threadId, runId });

// 3. The client's state is the producer's final state.
const stateUrl = new URL(`runs/${encodeURIComponent(agent.threadId)}/${encodeURIComponent(runId)}/state`, url);
const producerState = await getJson(stateUrl);
assert.ok(isDeepStrictEqual(agent.state, producerState), `the client's state differs from the producer's:\nclient:   ${JSON.stringify(agent.state)}\nproducer: ${JSON.stringify(producerState)}`);

// 4. The text it assembled is the answer, in one assistant message, as the deltas said.
const assistant = agent.messages.filter((m) => m.role === 'assistant');
assert.equal(assistant.length, 1, `assistant messages: ${JSON.stringify(agent.messages)}`);
assert.equal(assistant[0].content, answer, 'the text the client assembled is not the answer');
assert.equal(textOf(events, assistant[0].id), answer, 'the deltas do not spell the answer');
assert.equal(callbacks.lastBuffer, answer);
assert.deepEqual(newMessages.map((m) => m.id), [assistant[0].id]);

// 5. Every event ends up in the client: a second parser of the raw bytes agrees on the count.
const again = new EventParser();
let count = 0;
for (const chunk of wire.chunks) count += again.push(chunk).length;
assert.equal(count, events.length);

const types = {};
for (const e of events) types[e.type] = (types[e.type] ?? 0) + 1;
process.stdout.write(`${JSON.stringify({ events: events.length, types, bytes: wire.bytes, stateChanged: callbacks.stateChanged, state: agent.state, text: assistant[0].content, type: EventType.RUN_FINISHED })}\n`);
