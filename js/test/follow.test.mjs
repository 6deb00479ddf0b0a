// `follow` against an in-memory Durable Streams server behind a fake `fetch`: it starts at the
// latest base, resumes from its offset after cuts (no base batch again), and starts over on
// 410 or a batch that does not decode; its errors reach the caller (a URL it cannot fetch
// throws, an answer no retry changes stops it, retried errors and a throwing `onChange` are
// reported, by default on the console). chord/tests/js_follow.rs runs it against chord's server.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { follow, Replica, sseTransport } from '../chord-replica.mjs';

const hex = (n) => n.toString(16).padStart(16, '0');

/** A stream of wire batches served the way chord's server serves them, with faults. */
class FakeServer {
  constructor() {
    this.records = []; // { seq, batch (text), base }
    this.floor = 0; // offsets below it answer 410
    this.open = new Set();
    this.requests = [];
  }

  append(batch) {
    const seq = this.records.length + 1;
    const text = JSON.stringify(batch);
    this.records.push({ seq, text, base: batch[0]?.[0] === 'r' });
    for (const c of this.open) c.push();
  }

  get last() {
    return this.records.length;
  }

  baseOffset() {
    const base = this.records.findLast((r) => r.base);
    return hex(base ? base.seq - 1 : 0);
  }

  /** Ends every open response, `partial` bytes into an event when given. */
  cutAll(partial = 0) {
    for (const c of [...this.open]) c.cut(partial);
  }

  fetch = async (url, init = {}) => {
    const u = new URL(url, 'http://fake');
    this.requests.push(`${init.method ?? 'GET'} ${u.search}`);
    if (init.method === 'HEAD') {
      return new Response(null, { status: 200, headers: { 'chord-base-offset': this.baseOffset() } });
    }
    const offset = u.searchParams.get('offset');
    let at = offset === '-1' ? this.floor : offset === 'base' ? parseInt(this.baseOffset(), 16) : parseInt(offset, 16);
    if (at < this.floor || at > this.last) {
      return new Response('gone', { status: 410, headers: { 'chord-base-offset': this.baseOffset() } });
    }
    if (!u.searchParams.has('live')) {
      // A catch-up read: everything after the offset, in one JSON array.
      const texts = this.records.slice(at).map((r) => r.text);
      return new Response(`[${texts.join(',')}]`, {
        status: 200,
        headers: { 'content-type': 'application/json', 'stream-next-offset': hex(this.last) },
      });
    }
    const server = this;
    const encoder = new TextEncoder();
    let conn;
    const body = new ReadableStream({
      start(controller) {
        conn = {
          push() {
            const batches = server.records.slice(at).map((r) => r.text);
            if (batches.length === 0) return;
            at = server.last;
            const events = `event: data\ndata: [${batches.join(',')}]\n\nevent: control\ndata: {"streamNextOffset":"${hex(at)}","upToDate":true}\n\n`;
            controller.enqueue(encoder.encode(events));
          },
          cut(partial) {
            if (partial > 0) controller.enqueue(encoder.encode('event: data\ndata: [[["s",'.slice(0, partial)));
            server.open.delete(conn);
            controller.error(new TypeError('connection cut'));
          },
        };
        server.open.add(conn);
        controller.enqueue(encoder.encode(`event: control\ndata: {"streamNextOffset":"${hex(at)}","upToDate":true}\n\n`));
        conn.push();
      },
      cancel() {
        server.open.delete(conn);
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
}

async function until(what, done) {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > 30_000) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** `promise`, or a rejection naming `what` after 30 s: a test fails rather than hangs. */
function within(what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gave up waiting for ${what}`)), 30_000);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const options = (server, replica) => ({ replica, fetch: server.fetch, backoffMin: 1, backoffMax: 5, transport: sseTransport });

test('follow resumes from its offset after cuts and never receives a base batch again', async () => {
  const server = new FakeServer();
  server.append([['r', { text: '', n: 0 }]]);
  const replica = new Replica();
  const f = follow('http://fake/streams/lanes/main', options(server, replica));
  let text = '';
  for (let i = 1; i <= 40; i++) {
    text += `t${i} `;
    server.append([['a', ['text'], `t${i} `], ['s', ['n'], i]]);
    if (i % 10 === 0) {
      await until(`batch ${i}`, () => replica.value?.n === i);
      server.cutAll(i % 20); // mid-event, or between events
    }
  }
  // One more after the last cut: its connection resumed too.
  text += 'end';
  server.append([['a', ['text'], 'end'], ['s', ['n'], 41]]);
  await until('the last batch', () => replica.value?.n === 41);
  f.stop();
  await f.done;
  assert.deepEqual(replica.value, { text, n: 41 });
  assert.equal(f.stats.starts, 1);
  assert.equal(f.stats.bases, 1, 'no base after the first');
  assert.ok(f.stats.resumes >= 4, JSON.stringify(f.stats));
  // It joined with one catch-up read of the latest base, and no HEAD.
  assert.equal(server.requests.filter((r) => r === 'GET ?offset=base').length, 1, JSON.stringify(server.requests));
  assert.equal(server.requests.filter((r) => r.startsWith('HEAD')).length, 0);
});

test('follow starts over from the latest base on 410 and on a batch that does not decode', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 0 }]]);
  const replica = new Replica();
  const restarts = [];
  const f = follow('http://fake/streams/lanes/main', {
    ...options(server, replica),
    onError: (error, info) => {
      if (info.restart) restarts.push(error.message);
    },
  });
  await until('the base', () => replica.value?.n === 0);
  // Retention drops everything before a new base; the replica's offset is gone.
  server.cutAll();
  server.append([['s', ['n'], 1]]);
  server.append([['r', { n: 2 }]]);
  server.floor = 2;
  await until('the restart', () => replica.value?.n === 2);
  assert.equal(f.stats.starts, 2);
  // The 410 named the latest base; the restart read from it, not from `offset=base` (which a
  // cache may answer with something older).
  assert.deepEqual(server.requests.filter((r) => r.startsWith('GET ?offset=0') && !r.includes('live')), ['GET ?offset=0000000000000002']);
  // A batch naming a path id never defined: the decoder is poisoned, start over.
  server.append([['a', 7, 'x']]);
  server.append([['r', { n: 3 }]]);
  await until('the second restart', () => replica.value?.n === 3 && f.stats.starts === 3);
  f.stop();
  await f.done;
  assert.match(f.stats.lastBreak, /path id 7/);
  assert.equal(restarts.length, 2, JSON.stringify(restarts));
  assert.match(restarts[0], /answered 410/);
  assert.match(restarts[1], /path id 7/);
});

/** Subscribes a counter to each named part of the lane: how many times each listener ran. */
function countCalls(follower) {
  const calls = { transcript: 0, status: 0, usage: 0 };
  for (const name of Object.keys(calls)) follower.subscribe((v) => v?.[name], () => (calls[name] += 1));
  return calls;
}

const lane = (output) => ({ status: 'thinking', transcript: [{ text: 'a' }, { text: 'b' }], usage: { output } });

test('a producer restart: its base calls the listeners of the parts it changed, and no other', async () => {
  const server = new FakeServer();
  server.append([['r', lane(0)]]);
  let changes = 0;
  const replica = new Replica({ onChange: () => (changes += 1) });
  const f = follow('http://fake/streams/lanes/main', options(server, replica));
  await until('the base', () => replica.value !== undefined);
  const calls = countCalls(f);
  const held = replica.value;
  server.append([['s', ['usage', 'output'], 1]]);
  await until('the batch', () => replica.value.usage.output === 1);
  // The producer restarted: its first batch is a base of the value it recovered, which the
  // resumed reader gets as any batch; here with one part changed since.
  server.append([['r', lane(2)]]);
  await until('the restart base', () => replica.value.usage.output === 2);
  assert.deepEqual(calls, { transcript: 0, status: 0, usage: 2 });
  assert.equal(replica.value.transcript, held.transcript);
  // Restarted again, nothing changed: the value is the same object.
  const before = replica.value;
  server.append([['r', lane(2)]]);
  await until('the equal base', () => f.stats.bases === 3);
  assert.equal(replica.value, before);
  assert.deepEqual(calls, { transcript: 0, status: 0, usage: 2 });
  assert.equal(changes, 4, 'onChange ran once per batch (a base, a set, two bases), the equal base included');
  f.stop();
  await f.done;
  assert.equal(f.stats.starts, 1, 'the reader resumed through the restarts');
});

test('a 410 and a join with a value held: the base keeps the parts it did not change', async () => {
  const server = new FakeServer();
  server.append([['r', lane(0)]]);
  const replica = new Replica();
  const f = follow('http://fake/streams/lanes/main', options(server, replica));
  await until('the base', () => replica.value !== undefined);
  const calls = countCalls(f);
  const held = replica.value;
  // The reader's offset falls out of retention while it is away: it gets a 410, then the base.
  server.cutAll();
  server.append([['s', ['usage', 'output'], 0]]);
  server.append([['r', lane(0)]]);
  server.floor = 2;
  await until('the restart', () => f.stats.starts === 2);
  assert.equal(replica.value, held, 'a base equal to the value leaves it the same object');
  assert.deepEqual(calls, { transcript: 0, status: 0, usage: 0 });
  f.stop();
  await f.done;

  // A follower joining with that replica (a page that followed before): the base it joins
  // with keeps what it did not change.
  server.append([['r', lane(7)]]);
  const g = follow('http://fake/streams/lanes/main', options(server, replica));
  await until('the join', () => replica.value.usage.output === 7);
  assert.deepEqual(calls, { transcript: 0, status: 0, usage: 1 });
  assert.equal(replica.value.transcript, held.transcript);
  g.stop();
  await g.done;
});

test('follow says start and live only once its live read has answered, however silent it is', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 0 }]]);
  let answer = null;
  const answered = new Promise((resolve) => (answer = resolve));
  // The live read answers when the test says, with an event stream that sends nothing (a
  // server at the tail may send no event until the next batch).
  const fetch = async (url, init) => {
    if (!String(url).includes('live=')) return server.fetch(url, init);
    server.requests.push(`GET ${new URL(url).search}`);
    await answered;
    return new Response(new ReadableStream({}), { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
  const events = [];
  const replica = new Replica();
  const f = follow('http://fake/streams/lanes/main', {
    ...options(server, replica),
    fetch,
    onEvent: (event) => events.push(event.type === 'live' ? `live ${event.live}` : event.type),
  });
  await until('the catch-up and the live request', () => replica.value?.n === 0 && server.requests.length === 2);
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(events, ['open', 'batch'], 'not live before the live read answered');
  assert.equal(f.offset, hex(1), 'the offset the value is at, kept from the catch-up');
  assert.equal(f.stats.starts, 0);
  answer();
  await until('live', () => events.includes('live true'));
  assert.deepEqual(events, ['open', 'batch', 'start', 'live true']);
  assert.equal(f.stats.starts, 1);
  f.stop();
  await f.done;
});

test('a joiner whose catch-up a cache answered from an old base: one 410, one catch-up at the base it names, one live read, live only then', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 0 }]]);
  // What a cache kept of `?offset=base` while that base was the latest and the tail.
  const cached = await (await server.fetch('http://fake/s?offset=base')).text();
  server.requests.length = 0;
  server.append([['s', ['n'], 1]]);
  server.append([['r', { n: 2 }]]);
  server.append([['s', ['n'], 3]]);
  server.floor = 2; // the old base is no longer served
  const fetch = async (url, init) => {
    const u = new URL(url);
    if (u.searchParams.get('offset') === 'base' && !u.searchParams.has('live')) {
      server.requests.push(`GET ${u.search} (cached)`);
      return new Response(cached, { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': hex(1) } });
    }
    return server.fetch(url, init);
  };
  const replica = new Replica();
  const lives = [];
  const f = follow('http://fake/streams/lanes/main', {
    ...options(server, replica),
    fetch,
    onError: () => {},
    onEvent: (event) => {
      if (event.type === 'live' && event.live) lives.push(replica.value.n);
    },
  });
  await until('live', () => lives.length > 0);
  assert.deepEqual(lives, [3], 'live first with the served value, never with the cached one');
  assert.deepEqual(server.requests, [
    'GET ?offset=base (cached)',
    'GET ?offset=0000000000000001&live=sse', // answered 410, naming the base at 2
    'GET ?offset=0000000000000002',
    'GET ?offset=0000000000000004&live=sse',
  ]);
  assert.equal(f.stats.starts, 1);
  f.stop();
  await f.done;
});

test('follow throws at once on a URL it can never fetch', () => {
  const replica = new Replica();
  assert.equal(globalThis.location, undefined, 'Node has no page location');
  assert.throws(() => follow('/streams/lanes/main', { replica }), {
    name: 'TypeError',
    message: /"\/streams\/lanes\/main" is not an absolute URL.*in Node pass an absolute one/,
  });
  assert.throws(() => follow('ftp://host/streams/lanes/main'), { name: 'TypeError', message: /not an http: or https: URL/ });
  assert.throws(() => follow('http://fake/s', { replica: {} }), { name: 'TypeError', message: /options.replica must be a Replica/ });
  assert.throws(() => follow('http://fake/s', { onError: 'x' }), { name: 'TypeError', message: /options.onError must be a function/ });
});

test('follow resolves a relative URL against the page location in a browser', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 5 }]]);
  globalThis.location = new URL('http://fake/lane/index.html');
  let f;
  try {
    f = follow('/streams/lanes/main', options(server, new Replica()));
  } finally {
    delete globalThis.location;
  }
  assert.equal(f.url, 'http://fake/streams/lanes/main');
  await until('the base', () => f.replica.value?.n === 5);
  f.stop();
  await f.done;
});

test('a throwing onChange is reported, and following goes on without starting over', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 0 }]]);
  const seen = [];
  const replica = new Replica({
    onChange: (value) => {
      seen.push(value.n);
      if (value.n % 2 === 0) throw new ReferenceError(`render is not defined (n = ${value.n})`);
    },
  });
  const errors = [];
  const f = follow('http://fake/streams/lanes/main', {
    ...options(server, replica),
    onError: (error, info) => errors.push({ message: error.message, ...info }),
  });
  for (let n = 1; n <= 6; n++) server.append([['s', ['n'], n]]);
  await until('every batch', () => replica.value?.n === 6);
  f.stop();
  await f.done;
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6], 'onChange ran once for each batch, in order');
  assert.equal(f.stats.starts, 1, 'no start over from the base');
  assert.equal(f.stats.bases, 1);
  assert.equal(f.stats.breaks, 0, 'the connection was kept');
  assert.deepEqual(
    errors,
    [0, 2, 4, 6].map((n) => ({ message: `render is not defined (n = ${n})`, source: 'onChange', stopped: false, restart: false })),
  );
});

test('without onError, a throwing onChange goes to console.error once per distinct message', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 0 }]]);
  const replica = new Replica({
    onChange: () => {
      throw new ReferenceError('render is not defined');
    },
  });
  const printed = [];
  const saved = console.error;
  console.error = (...args) => printed.push(args);
  try {
    const f = follow('http://fake/streams/lanes/main', options(server, replica));
    for (let n = 1; n <= 3; n++) server.append([['s', ['n'], n]]);
    await until('every batch', () => replica.value?.n === 3);
    f.stop();
    await f.done;
    assert.equal(f.stats.starts, 1);
    assert.equal(f.stats.errors, 4);
  } finally {
    console.error = saved;
  }
  assert.equal(printed.length, 1, JSON.stringify(printed));
  assert.match(printed[0][0], /onChange threw; the batch applied, following http:\/\/fake\/streams\/lanes\/main goes on/);
  assert.equal(printed[0][1].message, 'render is not defined');
});

test('retried errors go to onError, and to console.warn once each without it', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 0 }]]);
  let down = 3; // the first three requests fail as a refused connection does
  const flaky = async (url, init) => {
    if (down > 0) {
      down -= 1;
      throw new TypeError('fetch failed');
    }
    return server.fetch(url, init);
  };
  const errors = [];
  const f = follow('http://fake/streams/lanes/main', {
    ...options(server, new Replica()),
    fetch: flaky,
    onError: (error, info) => errors.push({ message: error.message, ...info }),
  });
  await until('the base', () => f.replica.value?.n === 0);
  f.stop();
  await f.done;
  assert.deepEqual(errors, Array(3).fill({ message: 'fetch failed', source: 'stream', stopped: false, restart: false }));

  down = 3;
  const printed = [];
  const saved = console.warn;
  console.warn = (...args) => printed.push(args.join(' '));
  try {
    const g = follow('http://fake/streams/lanes/main', { ...options(server, new Replica()), fetch: flaky });
    await until('the base', () => g.replica.value?.n === 0);
    g.stop();
    await g.done;
    assert.equal(g.stats.errors, 3);
  } finally {
    console.warn = saved;
  }
  assert.equal(printed.length, 1, JSON.stringify(printed));
  assert.match(printed[0], /http:\/\/fake\/streams\/lanes\/main: fetch failed; retrying \(pass onError/);
});

test('an answer no retry changes stops the follower: done rejects, onError is told', async () => {
  const refused = async () => new Response('forbidden', { status: 403 });
  const errors = [];
  const f = follow('http://fake/streams/lanes/main', {
    backoffMin: 1,
    fetch: refused,
    onError: (error, info) => errors.push({ status: error.status, ...info }),
  });
  await assert.rejects(within('done to reject', f.done), { name: 'StreamHttpError', status: 403, message: /answered 403/ });
  assert.deepEqual(errors, [{ status: 403, source: 'stream', stopped: true, restart: false }]);

  // A server that answers, but not with an event stream: not a stream's URL.
  const page = async (url, init) =>
    init.method === 'HEAD'
      ? new Response(null, { status: 200 })
      : new Response('<html></html>', { status: 200, headers: { 'content-type': 'text/html' } });
  const printed = [];
  const saved = console.error;
  console.error = (...args) => printed.push(args.join(' '));
  try {
    const g = follow('http://fake/', { backoffMin: 1, fetch: page });
    await assert.rejects(within('done to reject', g.done), { message: /answered 200 with text\/html, not application\/json: is it a stream's URL\?/ });
  } finally {
    console.error = saved;
  }
  assert.equal(printed.length, 1);
  assert.match(printed[0], /stopped \(no retry can succeed\)/);
  assert.equal(printed[0].split('http://fake/').length, 2, `the URL once: ${printed[0]}`);
});
