// The catch-up read a follower joins with (`GET ?offset=base`): its body split into batches
// as it arrives, however it is cut into chunks; hostile bodies refused with typed errors;
// a body cut short or a batch over the bound retried from the start, nothing half-kept.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ArraySplitter } from '../src/batch-text.mjs';
import { follow, Replica, StreamEventError } from '../chord-replica.mjs';

const tooLarge = (max) => new StreamEventError('TooLarge', `over ${max}`, { max });

/** Splits `text` fed in the given pieces; throws what the splitter throws. */
function split(pieces, max = 1 << 20) {
  const splitter = new ArraySplitter(max, tooLarge);
  const out = [];
  for (const piece of pieces) out.push(...splitter.push(piece));
  splitter.end();
  return out;
}

/** A small deterministic generator (xorshift), so a failure names its seed. */
function rng(seed) {
  let x = seed || 1;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

/** A random JSON value with strings full of what a splitter must not count. */
function value(next, depth = 0) {
  const strings = ['', ',', ']', '[', '{', '}', '"', '\\', '\\"]', 'a,b]', 'é', '😀', ' \n\t'];
  switch (next(depth > 3 ? 4 : 6)) {
    case 0:
      return next(1000) - 500;
    case 1:
      return strings[next(strings.length)] + strings[next(strings.length)];
    case 2:
      return next(2) === 0;
    case 3:
      return null;
    case 4:
      return Array.from({ length: next(4) }, () => value(next, depth + 1));
    default: {
      const o = {};
      for (let i = next(4); i > 0; i--) o[strings[next(strings.length)] + i] = value(next, depth + 1);
      return o;
    }
  }
}

test('a body split anywhere gives the same elements as JSON.parse of the whole', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const next = rng(seed);
    const elements = Array.from({ length: next(6) }, () => value(next));
    const spaces = [' ', '\n', '\r\n', '\t', ''];
    const body =
      spaces[next(5)] + '[' + spaces[next(5)] +
      elements.map((e) => JSON.stringify(e, null, next(2) ? 1 : 0)).join(spaces[next(5)] + ',' + spaces[next(5)]) +
      spaces[next(5)] + ']' + spaces[next(5)];
    const pieces = [];
    for (let at = 0; at < body.length;) {
      const n = 1 + next(8);
      pieces.push(body.slice(at, at + n));
      at += n;
    }
    const out = split(pieces);
    assert.deepEqual(out.map((t) => JSON.parse(t)), JSON.parse(body), `seed ${seed}: ${body}`);
  }
});

test('hostile bodies are refused with a Json error naming where; a long element with TooLarge', () => {
  for (const [body, where] of [
    ['', /ends before its array does/],
    ['{"a":1}', /no JSON array at character 0/],
    ['[1,,2]', /an empty element at character 3/],
    ['[,1]', /an empty element at character 1/],
    ['[1,]', /an empty element at character 3/],
    ['[1]]', /text after the array at character 3/],
    ['[1] x', /text after the array at character 4/],
    ['[1}', /a "}" closing the array at character 2/],
    ['[[1', /ends before its array does/],
    ['["a]', /ends before its array does/],
  ]) {
    assert.throws(() => split([body]), (e) => e.name === 'ChordError' && e.kind === 'Json' && where.test(e.message), body);
  }
  // Counted as it arrives: an element never ending is refused once over the bound, however
  // it is cut, holding no more than that.
  assert.throws(() => split(['["', 'x'.repeat(60), 'x'.repeat(60)], 100), (e) => e instanceof StreamEventError && e.kind === 'TooLarge' && e.max === 100);
  assert.deepEqual(split(['[', `"${'x'.repeat(98)}"`, ']'], 100), [`"${'x'.repeat(98)}"`]);
});

/** A fake fetch: the catch-up reads get `catchUps` in turn (the last repeated), live reads SSE. */
function server(catchUps) {
  const requests = [];
  let n = 0;
  const fetch = async (url, init = {}) => {
    const u = new URL(url);
    requests.push(u.search);
    if (!u.searchParams.has('live')) {
      const body = catchUps[Math.min(n++, catchUps.length - 1)];
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000002' } });
    }
    // Live: nothing more, ever (until the follower stops).
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('event: control\ndata: {"streamNextOffset":"0000000000000002","upToDate":true}\n\n'));
        init.signal?.addEventListener('abort', () => c.error(new DOMException('aborted', 'AbortError')), { once: true });
      },
    });
    return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
  return { fetch, requests };
}

async function until(what, done) {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > 30_000) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

test('a catch-up body cut short, or with a batch over maxEvent, is retried from the start', async () => {
  const good = '[[["r",{"n":0}]],[["s",["n"],1]]]';
  for (const [first, kind] of [
    ['[[["r",{"n":0}]],[["s",["n"],', 'Json'],
    [`[[["r",{"n":"${'x'.repeat(200)}"}]]]`, 'TooLarge'],
    ['[[["s",["n"],1]]]', 'NotBase'],
  ]) {
    const { fetch, requests } = server([first, good]);
    const errors = [];
    const f = follow('http://x/streams/s', {
      fetch,
      replica: new Replica(),
      maxEvent: 100,
      backoffMin: 1,
      backoffMax: 2,
      onError: (error, info) => errors.push([error, info]),
    });
    await until('the value', () => f.replica.value?.n === 1 && f.offset !== null);
    f.stop();
    await f.done;
    assert.equal(errors.length, 1, kind);
    assert.equal(errors[0][0].kind, kind);
    assert.equal(errors[0][1].stopped, false);
    // Both joins read the latest base; the first kept nothing (no offset, one start).
    assert.deepEqual(requests.slice(0, 2), ['?offset=base', '?offset=base'], kind);
    assert.equal(f.stats.starts, 1);
  }
});

test('an empty stream: the catch-up read is empty and the live read brings the first base', async () => {
  const requests = [];
  const fetch = async (url) => {
    const u = new URL(url);
    requests.push(u.search);
    if (!u.searchParams.has('live')) {
      return new Response(' [ ] ', { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000000' } });
    }
    const body = 'event: data\ndata: [[["r",{"n":7}]]]\n\nevent: control\ndata: {"streamNextOffset":"0000000000000001"}\n\n';
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
  const f = follow('http://x/streams/s', { fetch, backoffMin: 1, backoffMax: 2, onError: () => {} });
  await until('the base', () => f.replica.value?.n === 7 && f.offset === '0000000000000001');
  f.stop();
  await f.done;
  assert.deepEqual(requests.slice(0, 2), ['?offset=base', '?offset=0000000000000000&live=sse']);
  assert.equal(f.stats.starts, 1);
});

test('no callback runs before follow has returned its handle', async () => {
  const fetch = async () =>
    new Response('[[["r",{"n":1}]]]', { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000001' } });
  const opened = [];
  const errors = [];
  // `f` is used by the callback: reading it before `follow` returned would throw.
  const f = follow('http://x/streams/s', {
    fetch,
    transport: async function* ({ signal }) {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    },
    onEvent: (e) => e.type === 'open' && opened.push(f.url),
    onError: (error) => errors.push(error.message),
  });
  await until('the value', () => f.replica.value?.n === 1);
  f.stop();
  await f.done;
  assert.deepEqual(errors, []);
  assert.deepEqual(opened, ['http://x/streams/s']);
});
