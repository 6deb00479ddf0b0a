// `follow` sends credentials: an in-process Durable Streams server (node:http) refuses reads
// without the token it holds (401, or 403 for a revoked one), as chord's `Streams::reads`
// does, and rotates it. Over both transports (the default `sseTransport` and the official
// client through `durableStreamsTransport`): a `headers` function is called for every
// request, so the rotated token gets in after a refusal; fixed headers that are refused stop
// the follower with no value; `credentials` and a token in the query reach every request.
// chord/tests/js_auth.rs runs a Node follower against chord's server with a read hook.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import * as client from '@durable-streams/client';
import { baseOffset, durableStreamsTransport, follow, Replica, sseTransport, StreamHttpError } from '../chord-replica.mjs';

const hex = (n) => n.toString(16).padStart(16, '0');

/**
 * A stream of wire batches served over HTTP as chord's server serves them (HEAD with the
 * base offset, catch-up GET, `offset=base` included, long-poll, SSE), behind a read check: `authorize(request)`
 * answers `true`, 401 or 403; by default a request must carry `Authorization: Bearer`
 * with the current token (401 without one or with an unknown one, 403 with a revoked one).
 */
class AuthServer {
  constructor() {
    this.records = []; // wire batch texts; offset n is after the first n
    this.token = 't1';
    this.revoked = new Set();
    this.requests = []; // { kind, auth, token (query), offset, status }
    this.open = new Set();
    this.http = http.createServer((req, res) => this.#handle(req, res));
  }

  async start() {
    await new Promise((resolve) => this.http.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.http.address().port}/streams/lanes/main`;
    return this;
  }

  async close() {
    for (const c of [...this.open]) c.end();
    this.http.closeAllConnections();
    await new Promise((resolve) => this.http.close(resolve));
  }

  append(batch) {
    this.records.push(JSON.stringify(batch));
    for (const c of [...this.open]) c.push();
  }

  /** Takes a new token, refuses the old one (403) from now on, and ends open responses. */
  rotate(next) {
    this.revoked.add(this.token);
    this.token = next;
    for (const c of [...this.open]) c.end();
  }

  authorize(req) {
    const bearer = req.headers.authorization?.match(/^Bearer (.*)$/)?.[1];
    if (bearer === this.token) return true;
    return this.revoked.has(bearer) ? 403 : 401;
  }

  /** Requests of a kind (`HEAD`, `catch-up`, `long-poll`, `sse`). */
  of(kind) {
    return this.requests.filter((r) => r.kind === kind);
  }

  #handle(req, res) {
    const u = new URL(req.url, 'http://x');
    const kind = req.method === 'HEAD' ? 'HEAD' : (u.searchParams.get('live') ?? 'catch-up');
    const access = this.authorize(req, u);
    const status = access === true ? 200 : access;
    this.requests.push({
      kind,
      auth: req.headers.authorization ?? null,
      token: u.searchParams.get('token'),
      offset: u.searchParams.get('offset'),
      accept: req.headers.accept ?? null,
      tenant: req.headers['x-tenant'] ?? null,
      status,
    });
    if (access !== true) {
      // A refusal: an empty body and none of the stream's headers.
      res.writeHead(access, { 'cache-control': 'no-store', ...(access === 401 ? { 'www-authenticate': 'Bearer' } : {}) });
      res.end();
      return;
    }
    const last = this.records.length;
    const offset = u.searchParams.get('offset');
    if (req.method === 'HEAD') {
      const base = this.records.findLastIndex((t) => t.startsWith('[["r"'));
      res.writeHead(200, {
        'content-type': 'application/json',
        'stream-next-offset': hex(last),
        'chord-base-offset': hex(Math.max(base, 0)),
      });
      res.end();
      return;
    }
    const latestBase = Math.max(this.records.findLastIndex((t) => t.startsWith('[["r"')), 0);
    let at = offset === '-1' ? 0 : offset === 'base' ? latestBase : parseInt(offset, 16);
    if (!(at >= 0 && at <= last)) {
      res.writeHead(410, { 'chord-base-offset': hex(latestBase) }).end();
      return;
    }
    const json = (texts) => {
      at = this.records.length;
      res.writeHead(200, {
        'content-type': 'application/json',
        'stream-next-offset': hex(at),
        'stream-up-to-date': 'true',
        'cache-control': 'no-store',
      });
      res.end(`[${texts.join(',')}]`);
    };
    if (kind === 'catch-up') {
      json(this.records.slice(at));
      return;
    }
    const server = this;
    const conn = {
      push() {
        if (kind === 'long-poll') {
          if (server.records.length > at) {
            server.open.delete(conn);
            json(server.records.slice(at));
          }
          return;
        }
        const texts = server.records.slice(at);
        at = server.records.length;
        if (texts.length > 0) res.write(`event: data\ndata: [${texts.join(',')}]\n\n`);
        res.write(`event: control\ndata: {"streamNextOffset":"${hex(at)}","upToDate":true}\n\n`);
      },
      end() {
        server.open.delete(conn);
        if (kind === 'long-poll') {
          res.writeHead(204, { 'stream-next-offset': hex(at), 'stream-up-to-date': 'true' }).end();
        } else {
          res.end();
        }
      },
    };
    this.open.add(conn);
    res.on('close', () => this.open.delete(conn));
    if (kind === 'sse') res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    conn.push();
  }
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

const TRANSPORTS = [
  ['sseTransport', sseTransport],
  ['durableStreamsTransport', durableStreamsTransport(client)],
];

for (const [name, transport] of TRANSPORTS) {
  test(`${name}: a headers function is called for every request; a rotated token gets in after a refusal`, async () => {
    const server = await new AuthServer().start();
    try {
      server.append([['r', { n: 0 }]]);
      let token = 't1';
      const given = []; // the Authorization each call of the function returned
      const headers = async () => {
        const value = `Bearer ${token}`;
        given.push(value);
        return { Authorization: value };
      };
      const errors = [];
      const replica = new Replica();
      const f = follow(server.url, {
        replica,
        transport,
        headers,
        backoffMin: 5,
        backoffMax: 20,
        onError: (error, info) => errors.push({ error, info }),
      });
      await until('the base', () => replica.value?.n === 0);
      server.append([['s', ['n'], 1]]);
      await until('batch 1', () => replica.value?.n === 1);

      // The server takes t2 and refuses t1 (403); the follower, still sending t1, is
      // refused on each reconnect, and retries: its function may give a new token.
      const before = server.requests.length;
      server.rotate('t2');
      server.append([['s', ['n'], 2]]);
      await until('two refusals', () => server.requests.slice(before).filter((r) => r.status === 403).length >= 2);
      assert.equal(replica.value.n, 1, 'nothing read while refused');
      token = 't2';
      await until('batch 2, with the new token', () => replica.value?.n === 2);
      server.append([['s', ['n'], 3]]);
      await until('batch 3', () => replica.value?.n === 3);
      f.stop();
      await f.done;

      // Each request carried what one call of the function returned, in order (a last call
      // may have had its request aborted by stop()).
      const sent = server.requests.map((r) => r.auth);
      assert.ok(given.length - sent.length <= 1, `${given.length} calls, ${sent.length} requests`);
      assert.deepEqual(sent, given.slice(0, sent.length));
      const refusedAt = sent.indexOf('Bearer t1', before);
      assert.ok(refusedAt >= before, 'the follower came back with t1 after the rotation');
      for (const r of server.requests.slice(0, before)) assert.equal(r.auth, 'Bearer t1');
      for (const r of server.requests.slice(before)) assert.equal(r.status, r.auth === 'Bearer t2' ? 200 : 403, JSON.stringify(r));
      // Refused, then let in again, it resumed from its offset: one start, one catch-up
      // read of the latest base, no HEAD.
      assert.equal(f.stats.starts, 1, JSON.stringify(f.stats));
      assert.equal(f.stats.bases, 1);
      assert.equal(server.requests.filter((r) => r.kind === 'catch-up' && r.offset === 'base').length, 1);
      assert.equal(server.of('HEAD').length, 0);
      const refusals = errors.filter(({ error }) => error instanceof StreamHttpError && error.refused);
      assert.ok(refusals.length >= 2, JSON.stringify(errors.map(({ error }) => error.message)));
      for (const { error, info } of refusals) {
        assert.equal(error.status, 403);
        assert.match(error.message, /answered 403 Forbidden/);
        assert.deepEqual(info, { source: 'stream', stopped: false, restart: false });
      }
      assert.deepEqual(replica.value, { n: 3 });
    } finally {
      await server.close();
    }
  });

  test(`${name}: a refused reader with fixed credentials stops with the status and no value`, async () => {
    const server = await new AuthServer().start();
    try {
      server.append([['r', { secret: 'the stream' }]]);
      for (const [what, headers, status] of [
        ['no credential', undefined, 401],
        ['an unknown token', { authorization: 'Bearer wrong' }, 401],
      ]) {
        const changes = [];
        const replica = new Replica({ onChange: (value) => changes.push(value) });
        const errors = [];
        const f = follow(server.url, {
          replica,
          transport,
          headers,
          backoffMin: 1,
          onError: (error, info) => errors.push({ status: error.status, refused: error.refused, ...info }),
        });
        await assert.rejects(within(`done to reject (${what})`, f.done), { name: 'StreamHttpError', status, message: /answered 401 Unauthorized/ });
        assert.deepEqual(errors, [{ status, refused: true, source: 'stream', stopped: true, restart: false }], what);
        assert.equal(replica.value, undefined, what);
        assert.deepEqual(changes, [], what);
        assert.equal(f.stats.bytes, 0, what);
        assert.equal(f.stats.batches, 0, what);
      }
      // The catch-up read was the only request of each: refused, never retried.
      assert.deepEqual(server.requests.map((r) => [r.kind, r.offset, r.status]), [['catch-up', 'base', 401], ['catch-up', 'base', 401]]);

      // A server that answers the catch-up read but refuses the live read (the transport's
      // own request): the same stop, whatever the transport makes of the refusal, the value
      // read so far kept.
      server.authorize = (req, u) => u.searchParams.get('offset') === 'base' || 403;
      server.requests = [];
      const changes = [];
      const replica = new Replica({ onChange: (value) => changes.push(value) });
      const f = follow(server.url, { replica, transport, headers: { authorization: 'Bearer t1' }, backoffMin: 1, onError: () => {} });
      await assert.rejects(within('done to reject (the read refused)', f.done), { name: 'StreamHttpError', status: 403 });
      assert.deepEqual(replica.value, { secret: 'the stream' });
      assert.deepEqual(changes, [{ secret: 'the stream' }]);
      assert.deepEqual(server.requests.map((r) => r.status), [200, 403]);
    } finally {
      await server.close();
    }
  });

  test(`${name}: fixed headers revoked while following stop the follower at its reconnect, the value kept`, async () => {
    const server = await new AuthServer().start();
    try {
      server.append([['r', { n: 0 }]]);
      const replica = new Replica();
      const errors = [];
      const f = follow(server.url, {
        replica,
        transport,
        headers: { authorization: 'Bearer t1' },
        backoffMin: 1,
        onError: (error, info) => errors.push({ status: error.status, ...info }),
      });
      await until('the base', () => replica.value?.n === 0);
      server.rotate('t2');
      server.append([['s', ['n'], 1]]);
      await assert.rejects(within('done to reject', f.done), { name: 'StreamHttpError', status: 403 });
      assert.deepEqual(errors.filter((e) => e.status === 403), [{ status: 403, source: 'stream', stopped: true, restart: false }]);
      assert.deepEqual(replica.value, { n: 0 }, 'what it had read stays; nothing after the refusal');
      assert.equal(server.requests.filter((r) => r.status === 403).length, 1, 'not retried');
    } finally {
      await server.close();
    }
  });

  test(`${name}: credentials and a query token reach every request, reconnects included`, async () => {
    const server = await new AuthServer().start();
    try {
      server.authorize = (req, u) => u.searchParams.get('token') === 'q1' || 401;
      server.append([['r', { n: 0 }]]);
      const modes = [];
      const fetchImpl = (input, init) => {
        modes.push(init?.credentials);
        return fetch(input, init);
      };
      const replica = new Replica();
      const f = follow(`${server.url}?token=q1`, {
        replica,
        transport,
        fetch: fetchImpl,
        credentials: 'include',
        // A header the transport sets itself (sseTransport's accept) stays the transport's.
        headers: { accept: 'text/html', 'x-tenant': 'a' },
        backoffMin: 1,
        backoffMax: 5,
      });
      for (let n = 1; n <= 3; n++) {
        await until(`batch ${n - 1}`, () => replica.value?.n === n - 1);
        server.rotate('unused'); // ends the open responses: the follower reconnects
        server.append([['s', ['n'], n]]);
      }
      await until('batch 3', () => replica.value?.n === 3);
      f.stop();
      await f.done;
      assert.ok(server.requests.length >= 4, JSON.stringify(server.requests));
      for (const r of server.requests) {
        assert.equal(r.token, 'q1', JSON.stringify(r));
        assert.equal(r.status, 200, JSON.stringify(r));
        assert.equal(r.tenant, 'a', JSON.stringify(r));
        if (r.kind === 'sse' && transport === sseTransport) assert.equal(r.accept, 'text/event-stream');
        if (r.offset === 'base') assert.equal(r.accept, 'application/json');
      }
      assert.ok(modes.length >= server.requests.length);
      assert.ok(modes.every((m) => m === 'include'), JSON.stringify(modes));
      assert.equal(f.stats.starts, 1);
    } finally {
      await server.close();
    }
  });
}

test('a headers function that throws is reported and called again; its first answer gets in', async () => {
  const server = await new AuthServer().start();
  try {
    server.append([['r', { n: 0 }]]);
    let calls = 0;
    const headers = () => {
      calls += 1;
      if (calls <= 2) throw new Error('token service unavailable');
      return { authorization: 'Bearer t1' };
    };
    const errors = [];
    const replica = new Replica();
    const f = follow(server.url, { replica, headers, backoffMin: 1, backoffMax: 5, onError: (e, info) => errors.push([e.message, info.stopped]) });
    await until('the base, then the live read', () => replica.value?.n === 0 && server.of('sse').length === 1);
    f.stop();
    await f.done;
    assert.deepEqual(errors, [['token service unavailable', false], ['token service unavailable', false]]);
    // The requests that threw were never sent.
    assert.deepEqual(server.requests.map((r) => r.auth), ['Bearer t1', 'Bearer t1']);
  } finally {
    await server.close();
  }
});

test('a headers function is refused until it has a token (logged out, then in)', async () => {
  const server = await new AuthServer().start();
  try {
    server.append([['r', { n: 0 }]]);
    let token = null;
    const replica = new Replica();
    const statuses = [];
    const f = follow(server.url, {
      replica,
      headers: () => (token === null ? {} : { authorization: `Bearer ${token}` }),
      backoffMin: 1,
      backoffMax: 5,
      onError: (e, info) => statuses.push([e.status, info.stopped]),
    });
    await until('refusals', () => statuses.length >= 3);
    assert.equal(replica.value, undefined);
    assert.equal(f.stats.bytes, 0);
    token = 't1';
    // Started once the live read has answered too.
    await until('the base, and the live read', () => replica.value?.n === 0 && f.stats.starts === 1);
    f.stop();
    await f.done;
    assert.ok(statuses.every(([s, stopped]) => s === 401 && stopped === false), JSON.stringify(statuses));
    assert.equal(f.stats.starts, 1);
  } finally {
    await server.close();
  }
});

test('baseOffset sends headers and credentials, and rejects a refusal with its status', async () => {
  const seen = [];
  const fetchImpl = async (url, init) => {
    seen.push([init.method, init.headers, init.credentials]);
    return init.headers?.authorization === 'Bearer t1'
      ? new Response(null, { status: 200, headers: { 'chord-base-offset': '0000000000000007' } })
      : new Response(null, { status: 401, headers: { 'www-authenticate': 'Bearer' } });
  };
  const url = 'http://fake/streams/lanes/main';
  assert.equal(await baseOffset(url, { fetch: fetchImpl, headers: async () => ({ Authorization: 'Bearer t1' }), credentials: 'include' }), '0000000000000007');
  await assert.rejects(baseOffset(url, { fetch: fetchImpl }), { name: 'StreamHttpError', status: 401, refused: true });
  assert.deepEqual(seen, [
    ['HEAD', { authorization: 'Bearer t1' }, 'include'],
    ['HEAD', undefined, undefined],
  ]);
});

test('credential options of the wrong type throw at once', () => {
  const url = 'http://127.0.0.1:1/streams/lanes/main';
  assert.throws(() => follow(url, { headers: 'Bearer t1' }), { name: 'TypeError', message: /options\.headers must be an object of headers or a function returning one, found a string/ });
  assert.throws(() => follow(url, { headers: null }), { name: 'TypeError', message: /options\.headers .* found null/ });
  assert.throws(() => follow(url, { credentials: 'always' }), { name: 'TypeError', message: /options\.credentials must be one of 'omit', 'same-origin', 'include', found "always"/ });
  return assert.rejects(baseOffset(url, { credentials: true }), { name: 'TypeError', message: /^baseOffset: options\.credentials/ });
});
