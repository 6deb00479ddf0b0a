// chord-replica/ag-ui against a fake of chord's AG-UI endpoint behind a `fetch`: a run's
// events, each with its `<offset>:<k>` id, answered from the start or after `Last-Event-ID`.
// Connections are cut at every few bytes (mid-event included), closed early, refused for a
// while; the official client (`@ag-ui/client`'s HttpAgent, through ResumableHttpAgent) must end
// with the state and messages of a run that never dropped. chord/tests/ag_ui_clients.rs runs
// the same helper against the real example server.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { EventParser } from '../chord-replica.mjs';
import { isAgUiTerminal, ResumableHttpAgent, ResumeError, resumableFetch } from '../ag-ui.mjs';

const encode = (text) => new TextEncoder().encode(text);
const hex = (n) => n.toString(16).padStart(16, '0');

/** A run's events as chord's endpoint groups them: one record per flush, ids `<offset>:<k>`. */
function scriptedRun(threadId, runId) {
  const records = [
    [
      { type: 'RUN_STARTED', threadId, runId },
      { type: 'STATE_SNAPSHOT', snapshot: { plan: [], tools: [] } },
    ],
    [{ type: 'STATE_DELTA', delta: [{ op: 'add', path: '/plan/-', value: { step: 'look', status: 'running' } }] }],
    [
      { type: 'STATE_DELTA', delta: [{ op: 'replace', path: '/plan/0/status', value: 'done' }, { op: 'add', path: '/tools/-', value: { name: 'search', output: 'é 😀 "q"\n' } }] },
      { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'The ' },
    ],
    ...['answer ', 'is ', '42 ', '€😀', '\n', 'done.'].map((delta) => [{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta }]),
    [
      { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
      { type: 'STATE_DELTA', delta: [{ op: 'add', path: '/answered', value: true }] },
    ],
    [{ type: 'RUN_FINISHED', threadId, runId }],
  ];
  const events = [];
  records.forEach((record, r) => record.forEach((event, k) => events.push({ id: `${hex(r + 1)}:${k}`, event })));
  return events;
}

/**
 * A fake endpoint: `fetch(url, init)` answers the run's SSE from the start, or after the
 * event whose id `Last-Event-ID` names (no RUN_STARTED again). `plan` says, per request, how
 * the answer goes: `{ cutAt: n }` (the connection fails after n bytes), `{ endAt: n }` (the
 * body ends cleanly after n bytes), `{ refuse: true }` (the request fails), `{ status: s }`.
 */
function fakeEndpoint(plan = []) {
  const requests = [];
  const runs = new Map();
  const fetch = async (url, init) => {
    const headers = new Headers(init.headers);
    const body = JSON.parse(init.body);
    requests.push({ url: String(url), method: init.method, headers, body });
    const how = plan[requests.length - 1] ?? {};
    if (how.refuse) throw new TypeError('fetch failed');
    if (how.status) return new Response('busy', { status: how.status, headers: { 'content-type': 'text/plain' } });
    const key = `${body.threadId}/${body.runId}`;
    if (!runs.has(key)) runs.set(key, scriptedRun(body.threadId, body.runId));
    const events = runs.get(key);
    const last = headers.get('last-event-id');
    let from = 0;
    if (last !== null) {
      const at = events.findIndex((e) => e.id === last);
      if (at < 0) return new Response(`unknown Last-Event-ID ${last}`, { status: 400 });
      from = at + 1;
    }
    const text = events
      .slice(from)
      .map(({ id, event }) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`)
      .join(': keep-alive\n\n');
    const bytes = encode(text);
    const stop = how.cutAt ?? how.endAt ?? bytes.length;
    let sent = 0;
    const stream = new ReadableStream({
      pull(controller) {
        if (sent >= stop) {
          if (how.cutAt !== undefined) controller.error(new TypeError('terminated'));
          else controller.close();
          return;
        }
        // Chunks of 5 bytes: events arrive split, as over a real connection.
        const end = Math.min(stop, sent + 5);
        controller.enqueue(bytes.slice(sent, end));
        sent = end;
      },
    });
    return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
  };
  return { fetch, requests, totalBytes: (threadId = 't', runId = 'r') => encode(scriptedRun(threadId, runId).map(({ id, event }) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`).join(': keep-alive\n\n')).length };
}

/** Runs a ResumableHttpAgent over `endpoint`; returns its end state, messages and events. */
async function run(endpoint, reconnect = {}) {
  const agent = new ResumableHttpAgent({
    url: 'http://agent.test/',
    threadId: 't',
    fetch: endpoint.fetch,
    reconnect: { backoffMin: 0, backoffMax: 0, ...reconnect },
  });
  const events = [];
  agent.subscribe({ onEvent: ({ event }) => void events.push(event) });
  await agent.runAgent({ runId: 'r' });
  return { state: agent.state, messages: agent.messages, events, reconnects: agent.reconnects };
}

const SILENT = { onRunFailed() {} };

test('the parser keeps the last event id across events and connections', () => {
  const parser = new EventParser();
  const events = parser.push(encode('id: 1:0\ndata: a\n\ndata: b\n\nid: 2\0x\ndata: c\n\nid: 3\n\n'));
  assert.deepEqual(events, [
    { name: 'message', data: 'a', id: '1:0' },
    { name: 'message', data: 'b', id: '1:0' },
    { name: 'message', data: 'c', id: '1:0' },
  ]);
  // An id on an event without data still counts, as browsers count it.
  assert.equal(parser.lastEventId, '3');
  const next = new EventParser({ lastEventId: parser.lastEventId });
  assert.deepEqual(next.push(encode('data: d\n\nid\ndata: e\n\n')), [
    { name: 'message', data: 'd', id: '3' },
    { name: 'message', data: 'e', id: '' },
  ]);
  assert.throws(() => new EventParser({ lastEventId: 3 }), TypeError);
});

test('terminal events are RUN_FINISHED and RUN_ERROR, whatever else mentions them', () => {
  assert.equal(isAgUiTerminal({ data: '{"type":"RUN_FINISHED","threadId":"t","runId":"r"}' }), true);
  assert.equal(isAgUiTerminal({ data: '{"type":"RUN_ERROR","message":"x"}' }), true);
  assert.equal(isAgUiTerminal({ data: '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"RUN_FINISHED"}' }), false);
  assert.equal(isAgUiTerminal({ data: 'RUN_FINISHED' }), false);
  assert.equal(isAgUiTerminal({ data: 'null' }), false);
});

test('an uninterrupted run: the official client assembles the state and the answer', async () => {
  const endpoint = fakeEndpoint();
  const got = await run(endpoint);
  assert.deepEqual(got.state, {
    plan: [{ step: 'look', status: 'done' }],
    tools: [{ name: 'search', output: 'é 😀 "q"\n' }],
    answered: true,
  });
  assert.equal(got.messages.length, 1);
  assert.equal(got.messages[0].role, 'assistant');
  assert.equal(got.messages[0].content, 'The answer is 42 €😀\ndone.');
  assert.deepEqual(got.events.map((e) => e.type).slice(0, 2), ['RUN_STARTED', 'STATE_SNAPSHOT']);
  assert.equal(got.events.at(-1).type, 'RUN_FINISHED');
  assert.equal(got.reconnects, 0);
  assert.equal(endpoint.requests.length, 1);
  assert.equal(endpoint.requests[0].headers.get('last-event-id'), null);
});

test('a connection cut at any byte resumes with Last-Event-ID: the same state, messages and events', async () => {
  const whole = await run(fakeEndpoint());
  const total = fakeEndpoint().totalBytes();
  let cuts = 0;
  for (let at = 0; at < total; at += 3) {
    const endpoint = fakeEndpoint([{ cutAt: at }]);
    const got = await run(endpoint);
    assert.deepEqual(got.state, whole.state, `cut at byte ${at}`);
    assert.deepEqual(got.messages, whole.messages, `cut at byte ${at}`);
    assert.deepEqual(got.events, whole.events, `cut at byte ${at}: each event once, in order`);
    assert.equal(got.reconnects, 1);
    const [first, again] = endpoint.requests;
    // The same request again (same runId, same body), after the last complete event.
    assert.deepEqual(again.body, first.body);
    assert.equal(again.method, 'POST');
    assert.equal(again.headers.get('content-type'), 'application/json');
    const last = again.headers.get('last-event-id');
    assert.ok(last === null || /^[0-9a-f]{16}:\d+$/.test(last), `Last-Event-ID ${last}`);
    cuts += 1;
  }
  assert.ok(cuts > 100, `${cuts} cuts`);
});

test('many cuts in one run, clean early ends and refused attempts still end equal', async () => {
  const whole = await run(fakeEndpoint());
  const plan = [
    { cutAt: 40 },
    { refuse: true },
    { status: 503 },
    { endAt: 200 },
    { cutAt: 1 },
    { cutAt: 333 },
    {},
  ];
  const endpoint = fakeEndpoint(plan);
  const seen = [];
  const got = await run(endpoint, { onReconnect: (info) => seen.push(info) });
  assert.deepEqual(got.state, whole.state);
  assert.deepEqual(got.messages, whole.messages);
  assert.deepEqual(got.events, whole.events);
  assert.equal(endpoint.requests.length, plan.length);
  assert.equal(got.reconnects, plan.length - 1);
  assert.deepEqual(seen.map((s) => s.attempt), [1, 2, 3, 1, 2, 1]);
  // Each request after the first names the last event the client had whole.
  const ids = endpoint.requests.map((r) => r.headers.get('last-event-id'));
  assert.equal(ids[0], null);
  for (let i = 2; i < ids.length; i++) assert.ok((ids[i] ?? '') >= (ids[i - 1] ?? ''), `ids go forward: ${ids}`);
  assert.equal(ids.at(-1), '0000000000000002:0');
});

test('a run that cannot be resumed ends with RUN_ERROR saying why, and resumeError', async () => {
  const ended = async (plan, retries) => {
    const endpoint = fakeEndpoint(plan);
    const agent = new ResumableHttpAgent({ url: 'http://agent.test/', fetch: endpoint.fetch, reconnect: { retries, backoffMin: 0, backoffMax: 0 } });
    const errors = [];
    // The run ends as the protocol ends a failed run: no rejection, a RUN_ERROR event.
    await agent.runAgent({ runId: 'r' }, { onRunErrorEvent: ({ event }) => void errors.push(event) });
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'RESUME_FAILED');
    assert.ok(agent.resumeError instanceof ResumeError);
    return { endpoint, error: errors[0], resumeError: agent.resumeError };
  };
  // Refused every time: the attempts run out.
  const refused = await ended([{ cutAt: 100 }, ...Array(5).fill({ refuse: true })], 3);
  assert.match(refused.error.message, /could not be resumed after 3 attempts/);
  assert.equal(refused.resumeError.attempts, 3);
  assert.equal(refused.endpoint.requests.length, 4);
  // A 4xx is not asked again.
  const bad = await ended([{ cutAt: 300 }, { status: 400 }, {}], 8);
  assert.match(bad.error.message, /HTTP 400/);
  assert.equal(bad.resumeError.status, 400);
  assert.match(bad.resumeError.lastEventId, /^0{15}[0-9a-f]:\d$/);
  assert.equal(bad.endpoint.requests.length, 2);
});

test('a stream without ids is not resumed once it handed events on; an error answer passes as it is', async () => {
  const fetch = async () => {
    let pulls = 0;
    return new Response(
      new ReadableStream({
        pull(c) {
          if (pulls++ === 0) c.enqueue(encode('data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'));
          else c.error(new TypeError('terminated'));
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    );
  };
  const response = await resumableFetch({ fetch, backoffMin: 0 })('http://x/', { method: 'POST', body: '{}' });
  const reader = response.body.getReader();
  assert.match(new TextDecoder().decode((await reader.read()).value), /RUN_STARTED/);
  await assert.rejects(reader.read(), (e) => e instanceof ResumeError && /no id/.test(e.message));

  const refused = await resumableFetch({ fetch: async () => new Response('no', { status: 415 }) })('http://x/', {});
  assert.equal(refused.status, 415);
  assert.equal(await refused.text(), 'no');
  assert.throws(() => resumableFetch({ retries: -1 }), TypeError);
});

test('aborting the run stops the retries at once', async () => {
  const endpoint = fakeEndpoint([{ cutAt: 100 }, ...Array(50).fill({ refuse: true })]);
  const agent = new ResumableHttpAgent({ url: 'http://agent.test/', fetch: endpoint.fetch, reconnect: { retries: 50, backoffMin: 20, backoffMax: 20 } });
  const running = agent.runAgent({ runId: 'r' }, SILENT);
  await new Promise((resolve) => setTimeout(resolve, 70));
  agent.abortRun();
  await running.catch(() => {});
  const count = endpoint.requests.length;
  assert.ok(count < 10, `${count} requests before the abort took effect`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(endpoint.requests.length, count, 'no request after the abort');
});

test('a clone resumes too, with its own count', async () => {
  const endpoint = fakeEndpoint([{ cutAt: 150 }, {}]);
  const agent = new ResumableHttpAgent({ url: 'http://agent.test/', fetch: endpoint.fetch, reconnect: { backoffMin: 0, backoffMax: 0 } });
  const clone = agent.clone();
  assert.ok(clone instanceof ResumableHttpAgent);
  await clone.runAgent({ runId: 'r' });
  assert.equal(clone.reconnects, 1);
  assert.equal(agent.reconnects, 0);
  assert.equal(clone.messages[0].content, 'The answer is 42 €😀\ndone.');
});

test('the first request is sent again when it fails or answers 503; a 4xx is the caller\'s', async () => {
  const whole = await run(fakeEndpoint());
  const endpoint = fakeEndpoint([{ refuse: true }, { status: 503 }, { cutAt: 500 }, {}]);
  const got = await run(endpoint);
  assert.deepEqual(got.events, whole.events);
  assert.deepEqual(got.state, whole.state);
  assert.equal(got.reconnects, 3);
  assert.deepEqual(endpoint.requests.map((r) => r.headers.get('last-event-id') !== null), [false, false, false, true]);
  // Refused every time: the run fails with the connection's error, as without resuming.
  const down = fakeEndpoint(Array(5).fill({ refuse: true }));
  const agent = new ResumableHttpAgent({ url: 'http://agent.test/', fetch: down.fetch, reconnect: { retries: 2, backoffMin: 0, backoffMax: 0 } });
  await assert.rejects(agent.runAgent({ runId: 'r' }, SILENT), /fetch failed/);
  assert.equal(down.requests.length, 3);
  // A 400 is answered to the client as it is, once.
  const bad = fakeEndpoint([{ status: 400 }, {}]);
  const agent2 = new ResumableHttpAgent({ url: 'http://agent.test/', fetch: bad.fetch, reconnect: { backoffMin: 0, backoffMax: 0 } });
  await assert.rejects(agent2.runAgent({ runId: 'r' }, SILENT), /HTTP 400/);
  assert.equal(bad.requests.length, 1);
});
