// ChordChatTransport (chord-replica/ai-sdk) against a fake chord AI SDK door behind a fake
// `fetch`: the run's chunks are a fixed script, each response serves them after the
// request's Last-Event-ID (as chord's server does) and is cut where a test says.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChordChatError, ChordChatTransport, ChordStreamCutError } from '../ai-sdk.mjs';

const API = 'http://chat.test/api/chat';

/** The chunks of one run, each with the SSE id chord gives it (`<16 hex offset>:<k>`). */
const RUN = [
  ['0000000000000010:0', { type: 'start', messageId: 't1' }],
  ['0000000000000010:1', { type: 'data-state', id: 'state', data: { answer: '', steps: 0 } }],
  ['0000000000000010:2', { type: 'text-start', id: 'm1' }],
  ['0000000000000011:0', { type: 'data-chord', data: [['a', ['answer'], 'Hé ']], transient: true }],
  ['0000000000000011:1', { type: 'text-delta', id: 'm1', delta: 'Hé ' }],
  ['0000000000000012:0', { type: 'data-chord', data: [['a', ['answer'], 'there 🎉'], ['s', ['steps'], 1]], transient: true }],
  ['0000000000000012:1', { type: 'text-delta', id: 'm1', delta: 'there 🎉' }],
  ['0000000000000013:0', { type: 'text-end', id: 'm1' }],
  ['0000000000000013:1', { type: 'data-state', id: 'state', data: { answer: 'Hé there 🎉', steps: 1 } }],
  ['0000000000000013:2', { type: 'finish' }],
];
const CHUNKS = RUN.map(([, chunk]) => chunk);

/** The SSE text of `run`'s chunks, `data: [DONE]` after a terminal one, as chord frames them. */
function sseText(run) {
  let text = '';
  for (const [id, chunk] of run) {
    text += `id: ${id}\ndata: ${JSON.stringify(chunk)}\n\n`;
    if (['finish', 'error', 'abort'].includes(chunk.type)) text += 'data: [DONE]\n\n';
  }
  return text;
}

/** The chunks after `lastId` (all without one), or null for an id the run never sent. */
function after(lastId) {
  if (lastId === null || lastId === '') return RUN;
  const i = RUN.findIndex(([id]) => id === lastId);
  return i < 0 ? null : RUN.slice(i + 1);
}

const encoder = new TextEncoder();

/**
 * A response body of `bytes` in pieces of `piece` bytes, ending after `cut` bytes (all when
 * undefined): with an error (`cutWith: 'error'`, a dropped connection) or a clean end
 * (`'close'`). Aborting `signal` errors it, as fetch does.
 */
function body(bytes, { piece = 1 << 20, cut, cutWith = 'error', signal } = {}) {
  const end = cut ?? bytes.length;
  let at = 0;
  let controller;
  signal?.addEventListener('abort', () => controller?.error(signal.reason), { once: true });
  return new ReadableStream({
    start(c) {
      controller = c;
    },
    pull(c) {
      if (signal?.aborted) return;
      if (at >= end) {
        if (cut === undefined || cutWith === 'close') c.close();
        else c.error(new TypeError('network error: the connection was reset'));
        return;
      }
      const next = Math.min(end, at + piece);
      c.enqueue(bytes.slice(at, next));
      at = next;
    },
  });
}

const sseHeaders = { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' };

/**
 * A fake chord door. `script` is a list of what each request gets, in order: `{ cut, cutWith,
 * piece }` (the run after the request's Last-Event-ID, cut there), `{ status, text }`,
 * `{ fail: true }` (fetch rejects), or `{ empty: true }` (a 204). Past the script: the run
 * whole after the id. Every request is recorded.
 */
function fakeDoor(script = []) {
  const requests = [];
  const fetch = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const request = {
      url: String(url),
      method: init.method ?? 'GET',
      headers,
      lastEventId: headers.get('last-event-id'),
      body: init.body === undefined ? undefined : JSON.parse(init.body),
      credentials: init.credentials,
    };
    requests.push(request);
    const step = script[requests.length - 1] ?? {};
    if (init.signal?.aborted) throw init.signal.reason;
    if (step.fail) throw new TypeError('fetch failed');
    if (step.empty) return new Response(null, { status: 204 });
    if (step.status !== undefined) return new Response(step.text ?? '', { status: step.status, headers: { 'content-type': 'text/plain' } });
    const rest = after(request.lastEventId);
    if (rest === null) return new Response('unknown Last-Event-ID', { status: 400 });
    const bytes = encoder.encode(sseText(rest));
    return new Response(body(bytes, { ...step, signal: init.signal }), { status: 200, headers: sseHeaders });
  };
  return { fetch, requests };
}

/** Every chunk of `stream`, and how it ended (`error` undefined for a clean end). */
async function drain(stream) {
  const chunks = [];
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { chunks, error: undefined };
      chunks.push(value);
    }
  } catch (error) {
    return { chunks, error };
  }
}

const userMessage = (id, text) => ({ id, role: 'user', parts: [{ type: 'text', text }] });
const history = [
  userMessage('u1', 'first'),
  { id: 't0', role: 'assistant', parts: [{ type: 'text', text: 'an earlier answer' }] },
  userMessage('u2', 'Hello'),
];

const send = (transport, extra = {}) =>
  transport.sendMessages({
    chatId: 'c1',
    messages: history,
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
    ...extra,
  });

test('a run is read whole: every chunk once, in order, no [DONE]; only the last message is posted', async () => {
  const door = fakeDoor();
  const transport = new ChordChatTransport({
    api: API,
    fetch: door.fetch,
    headers: { authorization: 'Bearer a' },
    body: { model: 'small' },
    credentials: 'include',
  });
  assert.equal(transport.resumeStreamIsReplay, false);
  const { chunks, error } = await drain(await send(transport, { headers: { 'x-call': '1' }, body: { temperature: 0 } }));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, CHUNKS);
  assert.equal(door.requests.length, 1);
  const [post] = door.requests;
  assert.equal(post.url, API);
  assert.equal(post.method, 'POST');
  assert.equal(post.headers.get('content-type'), 'application/json');
  assert.equal(post.headers.get('authorization'), 'Bearer a');
  assert.equal(post.headers.get('x-call'), '1');
  assert.equal(post.credentials, 'include');
  assert.deepEqual(post.body, {
    model: 'small',
    temperature: 0,
    id: 'c1',
    messages: [userMessage('u2', 'Hello')],
    trigger: 'submit-message',
  });
  // A finished run leaves nothing to resume after.
  assert.equal(transport.lastEventId('c1'), undefined);
});

test('headers, body and credentials may be functions, called for every request', async () => {
  const door = fakeDoor([{ cut: 40 }]);
  let token = 0;
  const transport = new ChordChatTransport({
    api: API,
    fetch: door.fetch,
    headers: async () => ({ authorization: `Bearer ${++token}` }),
    body: () => ({ n: token }),
    credentials: () => 'same-origin',
    retry: { delay: 1 },
  });
  const { chunks } = await drain(await send(transport));
  assert.deepEqual(chunks, CHUNKS);
  assert.deepEqual(door.requests.map((r) => r.headers.get('authorization')), ['Bearer 1', 'Bearer 2']);
  assert.equal(door.requests[0].body.n, 1);
  assert.deepEqual(door.requests.map((r) => r.credentials), ['same-origin', 'same-origin']);
});

test('a cut mid-event resumes after the last whole event: nothing twice, nothing missing', async () => {
  const text = sseText(RUN);
  // Inside the fifth event's data (the first text-delta).
  const cut = text.indexOf('"delta":"Hé ') + 4;
  const door = fakeDoor([{ cut: encoder.encode(text.slice(0, cut)).length }]);
  const reconnects = [];
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { delay: 1 }, onReconnect: (info) => reconnects.push(info) });
  const { chunks, error } = await drain(await send(transport));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, CHUNKS);
  assert.equal(door.requests.length, 2);
  const [, resume] = door.requests;
  assert.equal(resume.url, `${API}/c1/stream`);
  assert.equal(resume.method, 'GET');
  assert.equal(resume.lastEventId, '0000000000000011:0');
  assert.equal(resume.headers.get('accept'), 'text/event-stream');
  assert.equal(reconnects.length, 1);
  assert.equal(reconnects[0].lastEventId, '0000000000000011:0');
  assert.equal(reconnects[0].attempt, 1);
});

test('a response that ends between events (no error) is resumed the same way', async () => {
  const text = sseText(RUN);
  const cut = text.indexOf('id: 0000000000000012:0');
  const door = fakeDoor([{ cut: encoder.encode(text.slice(0, cut)).length, cutWith: 'close' }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { delay: 1 } });
  const { chunks, error } = await drain(await send(transport));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, CHUNKS);
  assert.equal(door.requests[1].lastEventId, '0000000000000011:1');
});

test('read a byte at a time and cut at every byte, the run arrives whole and once', async () => {
  const text = sseText(RUN);
  const bytes = encoder.encode(text);
  // The id of the last event complete at each byte offset (its blank line read).
  const ends = [];
  let offset = 0;
  for (const [id, chunk] of RUN) {
    offset += encoder.encode(`id: ${id}\ndata: ${JSON.stringify(chunk)}\n\n`).length;
    ends.push([offset, id]);
    if (chunk.type === 'finish') offset += encoder.encode('data: [DONE]\n\n').length;
  }
  const terminalEnd = ends[ends.length - 1][0];
  for (let cut = 0; cut < terminalEnd; cut++) {
    const door = fakeDoor([{ cut, piece: 1 }, {}]);
    const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { delay: 0 } });
    const { chunks, error } = await drain(await send(transport));
    assert.equal(error, undefined, `cut at ${cut}`);
    assert.deepEqual(chunks, CHUNKS, `cut at ${cut}`);
    const expected = ends.filter(([end]) => end <= cut).at(-1)?.[1] ?? null;
    assert.equal(door.requests.length, 2, `cut at ${cut}`);
    assert.equal(door.requests[1].lastEventId, expected, `cut at ${cut}`);
  }
});

/** The id of the last event wholly within the first `cut` bytes of `run`'s SSE text, or `held`. */
function lastIdWithin(run, cut, held) {
  let offset = 0;
  let id = held;
  for (const [eventId, chunk] of run) {
    offset += encoder.encode(`id: ${eventId}\ndata: ${JSON.stringify(chunk)}\n\n`).length;
    if (offset > cut) break;
    id = eventId;
    if (chunk.type === 'finish') break;
  }
  return id;
}

test('cut three times in a row, each resume continues from the last id handed on', async () => {
  const door = fakeDoor([{ cut: 30 }, { cut: 150 }, { fail: true }, { cut: 100 }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { delay: 1, attempts: 2 } });
  const { chunks, error } = await drain(await send(transport));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, CHUNKS);
  // What each request must ask for, from the script: the first cut is inside the first
  // event (no id yet: the run from its start), the failed request asks again for the same.
  const first = lastIdWithin(RUN, 30, null);
  assert.equal(first, null);
  const second = lastIdWithin(after(first), 150, first);
  const third = lastIdWithin(after(second), 100, second);
  assert.notEqual(second, null);
  assert.notEqual(third, second);
  assert.deepEqual(door.requests.map((r) => r.lastEventId), [null, first, second, second, third]);
});

test('a 204 on a resume ends the stream where it is', async () => {
  const text = sseText(RUN);
  const cut = encoder.encode(text.slice(0, text.indexOf('id: 0000000000000012:0'))).length;
  const door = fakeDoor([{ cut }, { empty: true }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { delay: 1 } });
  const { chunks, error } = await drain(await send(transport));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, CHUNKS.slice(0, 5));
  assert.equal(door.requests.length, 2);
});

test('a 409 (a run in progress) rejects sendMessages with the status and the server text', async () => {
  const door = fakeDoor([{ status: 409, text: 'chat "c1" has a run in progress: resume it with GET c1/stream' }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch });
  await assert.rejects(send(transport), (error) => {
    assert.ok(error instanceof ChordChatError);
    assert.equal(error.status, 409);
    assert.match(error.message, /409/);
    assert.match(error.message, /has a run in progress/);
    return true;
  });
  assert.equal(door.requests.length, 1, 'a POST is not sent again');
});

test('a POST that fails is not sent again (it may have started a run)', async () => {
  const door = fakeDoor([{ fail: true }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { delay: 1 } });
  await assert.rejects(send(transport), /fetch failed/);
  assert.equal(door.requests.length, 1);
});

test('retries are bounded: the stream ends with a ChordStreamCutError the SDK resumes, exactly', async () => {
  const text = sseText(RUN);
  const cut = encoder.encode(text.slice(0, text.indexOf('id: 0000000000000012:0'))).length;
  const door = fakeDoor([{ cut }, { fail: true }, { status: 503, text: 'busy' }, { fail: true }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { attempts: 3, delay: 1 } });
  const { chunks, error } = await drain(await send(transport));
  assert.deepEqual(chunks, CHUNKS.slice(0, 5));
  assert.ok(error instanceof ChordStreamCutError, String(error));
  // What the AI SDK's Chat takes for a dropped connection: it keeps the message to resume.
  assert.ok(error instanceof TypeError);
  assert.match(error.message, /^network/);
  assert.equal(error.lastEventId, '0000000000000011:1');
  assert.equal(error.attempts, 3);
  assert.equal(door.requests.length, 4, 'the POST and 3 attempts');
  // useChat's resume (reconnectToStream) then continues after the last chunk handed on.
  const resumed = await transport.reconnectToStream({ chatId: 'c1' });
  const rest = await drain(resumed);
  assert.equal(rest.error, undefined);
  assert.deepEqual(rest.chunks, CHUNKS.slice(5));
  assert.equal(door.requests[4].lastEventId, '0000000000000011:1');
  assert.equal(door.requests[4].url, `${API}/c1/stream`);
  // Finished: a later resume holds no id, and asks for a run in progress from its start.
  assert.equal(transport.lastEventId('c1'), undefined);
  await drain(await transport.reconnectToStream({ chatId: 'c1' }));
  assert.equal(door.requests[5].lastEventId, null);
});

test('a refusal on a resume (410: compacted away) ends the stream with that error, not retried', async () => {
  const door = fakeDoor([{ cut: 200 }, { status: 410, text: "the run's records at this Last-Event-ID were compacted away" }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { attempts: 5, delay: 1 } });
  const { error } = await drain(await send(transport));
  assert.ok(error instanceof ChordChatError);
  assert.ok(!(error instanceof TypeError));
  assert.equal(error.status, 410);
  assert.match(error.message, /compacted away/);
  assert.equal(door.requests.length, 2);
  // Not a cut the SDK resumes onto its message: a later resume starts from the run's start.
  await transport.reconnectToStream({ chatId: 'c1' });
  assert.equal(door.requests[2].lastEventId, null);
});

test('aborting stops reconnecting: no request after the abort', async () => {
  const door = fakeDoor([{ cut: 200 }, { fail: true }, { fail: true }, { fail: true }]);
  const controller = new AbortController();
  const reconnects = [];
  const transport = new ChordChatTransport({
    api: API,
    fetch: door.fetch,
    retry: { attempts: 10, delay: 20 },
    onReconnect: (info) => {
      reconnects.push(info);
      if (info.attempt === 2) setTimeout(() => controller.abort(), 5);
    },
  });
  const { error } = await drain(await send(transport, { abortSignal: controller.signal }));
  assert.equal(error?.name, 'AbortError');
  const sent = door.requests.length;
  assert.equal(sent, 3, 'the POST, attempt 1, attempt 2');
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(door.requests.length, sent, 'nothing sent after the abort');
  // An aborted run is not resumed onto: no id is held.
  assert.equal(transport.lastEventId('c1'), undefined);
});

test('aborting mid-read ends the stream with the abort', async () => {
  const door = fakeDoor([{ piece: 1 }]);
  const controller = new AbortController();
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch });
  const reader = (await send(transport, { abortSignal: controller.signal })).getReader();
  assert.deepEqual((await reader.read()).value, CHUNKS[0]);
  controller.abort();
  await assert.rejects(reader.read(), { name: 'AbortError' });
  assert.equal(door.requests.length, 1);
});

test('reconnectToStream: null on 204, the run from its start without a held id, refusals thrown', async () => {
  const door = fakeDoor([{ empty: true }, {}, { status: 404, text: 'no such chat' }]);
  const transport = new ChordChatTransport({ api: `${API}?v=1`, fetch: door.fetch });
  assert.equal(await transport.reconnectToStream({ chatId: 'c 1/x' }), null);
  assert.equal(door.requests[0].url, `${API}/c%201%2Fx/stream?v=1`);
  assert.equal(door.requests[0].lastEventId, null);
  const { chunks } = await drain(await transport.reconnectToStream({ chatId: 'c1', headers: { 'x-h': 'y' } }));
  assert.deepEqual(chunks, CHUNKS);
  assert.equal(door.requests[1].headers.get('x-h'), 'y');
  await assert.rejects(transport.reconnectToStream({ chatId: 'c1' }), (e) => e instanceof ChordChatError && e.status === 404 && /no such chat/.test(e.message));
  await assert.rejects(transport.reconnectToStream({ chatId: '..' }), TypeError);
});

test('a held id is used only after a cut handed to the chat; a stream still read or finished holds none for reconnectToStream', async () => {
  const door = fakeDoor([{ piece: 1 }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch });
  const reader = (await send(transport)).getReader();
  for (let i = 0; i < 4; i++) await reader.read();
  assert.equal(transport.lastEventId('c1'), '0000000000000011:0');
  // A new Chat (a remount) resuming while the old stream is open has no message to continue:
  // it gets the run from its start.
  await reader.cancel();
  const { chunks } = await drain(await transport.reconnectToStream({ chatId: 'c1' }));
  assert.deepEqual(chunks, CHUNKS);
  assert.equal(door.requests[1].lastEventId, null);
});

test('a resume that answers another run (its start names another message) ends the stream', async () => {
  const text = sseText(RUN);
  const cut = encoder.encode(text.slice(0, text.indexOf('id: 0000000000000012:0'))).length;
  const other = [['0000000000000020:0', { type: 'start', messageId: 't2' }], ...RUN.slice(1)];
  const door = fakeDoor([{ cut }]);
  const fetch = async (url, init) => {
    if (door.requests.length === 1) {
      door.requests.push({ url, lastEventId: new Headers(init.headers).get('last-event-id') });
      return new Response(sseText(other), { status: 200, headers: sseHeaders });
    }
    return door.fetch(url, init);
  };
  const transport = new ChordChatTransport({ api: API, fetch, retry: { delay: 1 } });
  const { chunks, error } = await drain(await send(transport));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, CHUNKS.slice(0, 5));
});

test('an error chunk ends the run: nothing read after it, nothing resumed', async () => {
  const failed = [...RUN.slice(0, 5), ['0000000000000012:0', { type: 'error', errorText: 'AGENT_FAILED: boom' }]];
  const requests = [];
  const fetch = async (url, init) => {
    requests.push(url);
    // A response that goes on after [DONE] and never ends: the reader must stop at the error.
    const bytes = encoder.encode(sseText(failed));
    return new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(bytes);
        },
      }),
      { status: 200, headers: sseHeaders },
    );
  };
  const transport = new ChordChatTransport({ api: API, fetch });
  const { chunks, error } = await drain(await send(transport));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, [...CHUNKS.slice(0, 5), { type: 'error', errorText: 'AGENT_FAILED: boom' }]);
  assert.equal(requests.length, 1);
});

test('options are checked at construction', () => {
  assert.throws(() => new ChordChatTransport({ fetch: 3 }), TypeError);
  assert.throws(() => new ChordChatTransport({ retry: { attempts: -1 } }), /retry.attempts/);
  assert.throws(() => new ChordChatTransport({ api: '' }), /api/);
  assert.throws(() => new ChordChatTransport({ maxEvent: 0 }), /maxEvent/);
});

test('a transport made anew (useChat reads it at each render) resumes what an earlier one of the same api read', async () => {
  const text = sseText(RUN);
  const cut = encoder.encode(text.slice(0, text.indexOf('id: 0000000000000012:0'))).length;
  const door = fakeDoor([{ cut }, { fail: true }]);
  const first = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { attempts: 1, delay: 1 } });
  const { chunks, error } = await drain(await send(first, { chatId: 'c9' }));
  assert.ok(error instanceof ChordStreamCutError);
  assert.deepEqual(chunks, CHUNKS.slice(0, 5));
  const second = new ChordChatTransport({ api: API, fetch: door.fetch });
  assert.equal(second.lastEventId('c9'), '0000000000000011:1');
  // Another api holds nothing for the chat.
  assert.equal(new ChordChatTransport({ api: `${API}2`, fetch: door.fetch }).lastEventId('c9'), undefined);
  const rest = await drain(await second.reconnectToStream({ chatId: 'c9' }));
  assert.deepEqual(rest.chunks, CHUNKS.slice(5));
  assert.equal(door.requests[2].lastEventId, '0000000000000011:1');
  assert.equal(door.requests[2].url, `${API}/c9/stream`);
});

test('cancelling the stream while it waits to resume sends nothing more', async () => {
  const door = fakeDoor([{ cut: 200 }, { fail: true }]);
  const transport = new ChordChatTransport({ api: API, fetch: door.fetch, retry: { attempts: 10, delay: 30 } });
  const reader = (await send(transport)).getReader();
  // Reads until the first failed resume has been sent (the transport then waits 60 ms).
  const reading = (async () => {
    for (;;) {
      const { done } = await reader.read();
      if (done) return;
    }
  })().catch(() => {});
  while (door.requests.length < 2) await new Promise((r) => setTimeout(r, 5));
  await reader.cancel();
  await reading;
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(door.requests.length, 2);
  assert.equal(transport.lastEventId('c1'), undefined);
});

test('a refused resume (401) is asked again only when the headers are a function', async () => {
  const script = () => [{ cut: 200 }, { status: 401, text: 'token expired' }];
  let token = 0;
  const renewing = fakeDoor(script());
  const transport = new ChordChatTransport({ api: API, fetch: renewing.fetch, headers: () => ({ authorization: `Bearer ${++token}` }), retry: { delay: 1 } });
  const { chunks, error } = await drain(await send(transport, { chatId: 'c5' }));
  assert.equal(error, undefined);
  assert.deepEqual(chunks, CHUNKS);
  assert.deepEqual(renewing.requests.map((r) => r.headers.get('authorization')), ['Bearer 1', 'Bearer 2', 'Bearer 3']);
  const fixed = fakeDoor(script());
  const refused = await drain(await send(new ChordChatTransport({ api: API, fetch: fixed.fetch, headers: { authorization: 'Bearer x' }, retry: { delay: 1 } }), { chatId: 'c6' }));
  assert.ok(refused.error instanceof ChordChatError);
  assert.equal(refused.error.status, 401);
  assert.match(refused.error.message, /token expired/);
  assert.equal(fixed.requests.length, 2);
});
