// What the scripts chord/tests/ag_ui_clients.rs drives share: the wire as it came, the
// schemas made strict, the lifecycle checks, a run's view read whole.

import assert from 'node:assert/strict';
import net from 'node:net';

import { EventParser } from '../chord-replica.mjs';

/**
 * A `fetch` over `inner` that records each event-stream response's events in `wire` (each
 * `{ id, data }`, in order, before the client reads them), its raw chunks in `wire.chunks`
 * and their size in `wire.bytes`.
 */
export function collectWire(wire, inner) {
  wire.chunks = [];
  wire.bytes = 0;
  wire.requests = [];
  return async (input, init) => {
    wire.requests.push({ headers: new Headers(init?.headers), body: init?.body });
    const response = await inner(input, init);
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response;
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    assert.equal(response.headers.get('x-accel-buffering'), 'no');
    const parser = new EventParser();
    const body = response.body.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          wire.chunks.push(chunk);
          wire.bytes += chunk.length;
          for (const { id, data } of parser.push(chunk)) wire.push({ id, data });
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

/** Each event type's schema of `union` (`@ag-ui/core`'s EventSchemas), refusing unknown properties. */
export function strictSchemas(union) {
  const byType = new Map();
  for (const option of union.options) byType.set(option.shape.type.value, option.strict());
  return byType;
}

/** An event id as chord's endpoint spells it: `<offset>:<k>`, as [offset, k] to compare. */
export function parseId(id) {
  const match = /^([0-9a-f]{16}):(0|[1-9][0-9]*)$/.exec(id);
  assert.ok(match, `event id ${JSON.stringify(id)} is not <16 hex digits>:<k>`);
  return [match[1], Number(match[2])];
}

/**
 * The lifecycle of a whole run's events (`wire` holds their ids): RUN_STARTED first with
 * the run's ids, a STATE_SNAPSHOT next, RUN_FINISHED last with the same ids, nothing after;
 * every event with an id, the ids increasing; each message started once (assistant), its
 * content non-empty deltas between its start and its end, every message ended.
 */
export function checkLifecycle(events, wire, { threadId, runId }) {
  assert.ok(events.length >= 4, `only ${events.length} events`);
  assert.deepEqual(events[0], { type: 'RUN_STARTED', threadId, runId });
  assert.equal(events[1].type, 'STATE_SNAPSHOT', 'the second event is not the state snapshot');
  assert.deepEqual(events.at(-1), { type: 'RUN_FINISHED', threadId, runId });
  const types = events.map((e) => e.type);
  assert.equal(types.filter((t) => t === 'RUN_STARTED').length, 1);
  assert.equal(types.filter((t) => t === 'RUN_FINISHED' || t === 'RUN_ERROR').length, 1);
  assert.equal(types.filter((t) => t === 'STATE_SNAPSHOT').length, 1, 'a snapshot mid-run');
  assert.ok(types.includes('STATE_DELTA'), 'no STATE_DELTA');
  let previous = null;
  for (const [i, { id }] of wire.entries()) {
    const [offset, k] = parseId(id);
    if (previous !== null) {
      const later = offset > previous[0] || (offset === previous[0] && k === previous[1] + 1);
      assert.ok(later, `event ${i}'s id ${id} does not follow ${previous.join(':')}`);
      if (offset > previous[0]) assert.equal(k, 0, `event ${i}: a record's first event has k 0`);
    }
    previous = [offset, k];
  }
  const open = new Map();
  const ended = new Set();
  for (const [i, e] of events.entries()) {
    if (e.type === 'TEXT_MESSAGE_START') {
      assert.ok(!open.has(e.messageId) && !ended.has(e.messageId), `event ${i}: message ${e.messageId} started twice`);
      assert.equal(e.role, 'assistant');
      open.set(e.messageId, i);
    } else if (e.type === 'TEXT_MESSAGE_CONTENT') {
      assert.ok(open.has(e.messageId), `event ${i}: content of message ${e.messageId}, not open`);
      assert.ok(typeof e.delta === 'string' && e.delta.length > 0, `event ${i}: an empty delta`);
    } else if (e.type === 'TEXT_MESSAGE_END') {
      assert.ok(open.delete(e.messageId), `event ${i}: end of message ${e.messageId}, not open`);
      ended.add(e.messageId);
    }
  }
  assert.deepEqual([...open.keys()], [], 'messages never ended');
  assert.ok(ended.size >= 1, 'no text message');
}

/** The text the deltas of message `messageId` spell. */
export function textOf(events, messageId) {
  return events
    .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.messageId === messageId)
    .map((e) => e.delta)
    .join('');
}

/** GETs `url` as JSON, failing on any status but 200. */
export async function getJson(url) {
  const response = await fetch(url);
  const text = await response.text();
  assert.equal(response.status, 200, `GET ${url}: ${response.status} ${text}`);
  return JSON.parse(text);
}

/**
 * A run's whole view, `GET /runs/{threadId}/{runId}` from the start (or after
 * `lastEventId`), read to its terminal event: `{ id, event }` each.
 */
export async function readView(base, threadId, runId, lastEventId) {
  const url = new URL(`runs/${encodeURIComponent(threadId)}/${encodeURIComponent(runId)}`, base);
  const headers = lastEventId ? { 'last-event-id': lastEventId } : {};
  const response = await fetch(url, { headers });
  assert.equal(response.status, 200, `GET ${url}: ${response.status} ${await response.clone().text()}`);
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const parser = new EventParser();
  const events = [];
  for await (const chunk of response.body) {
    for (const { id, data } of parser.push(chunk)) events.push({ id, event: JSON.parse(data) });
  }
  return events;
}

/**
 * A TCP proxy to `target` (a URL). Each connection takes the next plan from `plans` (none: pass
 * everything): `{ cut: n }` passes n bytes of the answer, then closes both sides;
 * `{ hold: n, onHold }` passes n bytes, then stops passing until the server side closes.
 */
export function proxy(target, plans) {
  const connections = [];
  const server = net.createServer((client) => {
    const plan = plans.shift() ?? {};
    const record = { plan, passed: 0 };
    connections.push(record);
    const upstream = net.connect(Number(target.port), target.hostname);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', close);
    upstream.on('close', close);
    // What the client sent (its request, for tests that read the run's ids from it).
    record.request = '';
    client.on('data', (chunk) => void (record.request += chunk.toString('utf8')));
    client.pipe(upstream);
    const budget = plan.cut ?? plan.hold ?? Infinity;
    let holding = false;
    upstream.on('data', (chunk) => {
      if (holding) return;
      const room = budget - record.passed;
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      record.passed += part.length;
      client.write(part);
      if (record.passed < budget) return;
      if (plan.cut !== undefined) {
        // Cut after the bytes are written: the client sees them, then the connection ends.
        client.end(() => close());
      } else if (plan.hold !== undefined) {
        holding = true;
        plan.onHold?.();
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, connections, url: `http://127.0.0.1:${server.address().port}${target.pathname}` })),
  );
}
