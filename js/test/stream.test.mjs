// `Replica#applyWireText` reads a batch's text op by op (each op's text parsed on its own) and
// must end exactly as parsing the whole batch, then checking, decoding and applying it: the
// same error (kind, op, path, message), the same value, the same failed state, batch after
// batch. The reference here is `applyWire` on the whole batch as `JSON.parse` gives it.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { follow, MAX_WIRE_NESTING, Replica, sseTransport } from '../chord-replica.mjs';

/** A small deterministic generator, so a failure replays exactly. */
function rng(seed) {
  let s = BigInt(seed);
  return (n) => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return Number(s >> 33n) % n;
  };
}

/** The outcome of one call: what it returned or threw, and the replica after it. */
function outcome(replica, run) {
  let error = null;
  try {
    run();
  } catch (e) {
    error = { name: e.name, kind: e.kind, opIndex: e.opIndex, path: e.path, message: e.message };
  }
  return { error, value: JSON.stringify(replica.value), failed: replica.failed !== null };
}

/**
 * Objects naming a member twice, as the generator writes them (JSON.parse keeps the last;
 * chord refuses them, in Rust and here).
 */
const REPEATS = ['{"a":"\\ud800","a":1}', '{"a":1,"a":"\\ud800"}', '{"a":1,"\\u0061":2}', '{"b":{"a":1,"a":1}}'];

/** What a refused repeat says, its place aside. */
const REPEATED = 'invalid JSON: duplicate member name';

/** As the replica ended before streaming: the batch parsed whole, then decoded and applied. */
function whole(replica, text) {
  let parsed;
  const refuse = (message) => {
    // A syntax error fails the replica with the value as it was; `applyWire` of a batch
    // refused with a `Json` error before anything is decoded does the same.
    const error = { name: 'ChordError', kind: 'Json', opIndex: undefined, path: undefined, message };
    if (replica.failed === null) assert.throws(() => replica.applyWire([['s', ['x'], Infinity]]), (f) => f.kind === 'Json');
    return { error, value: JSON.stringify(replica.value), failed: true };
  };
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return refuse(`invalid JSON: ${e.message}`);
  }
  // A member named twice is refused as a syntax error is (JSON.parse kept the last).
  if (REPEATS.some((r) => text.includes(r))) return refuse(REPEATED);
  return outcome(replica, () => replica.applyWire(parsed));
}

/**
 * `got` with a refused repeat's message as `whole` words it, when the text has a repeat: the
 * streamed read stops at the repeat, before a syntax error after it that JSON.parse reports
 * for the whole text (both are `Json` errors).
 */
function repeatAside(got, text) {
  if (!got.error?.message?.startsWith(REPEATED) || !REPEATS.some((r) => text.includes(r))) return got;
  return { ...got, error: { ...got.error, message: REPEATED } };
}

const deep = (n) => `${'['.repeat(n)}0${']'.repeat(n)}`;

/** One wire op's text: valid most of the time, else wrong at one stage or another. */
function wireOp(next) {
  const path = () => [['a'], ['o', 'k'], ['xs', next(3)], ['s'], ['missing', 'x'], ['xs'], []][next(7)];
  const ref = () => (next(3) === 0 ? next(3) : path());
  const value = () => [1, 'x', null, { k: 'v' }, [1, 2], { s: 'y', xs: [] }][next(6)];
  const ops = [
    () => ['r', { a: 1, o: { k: 'v' }, xs: [1, 2, 3], s: 'hello' }],
    () => ['s', ref(), value()],
    () => ['s', value()],
    () => ['d', ref()],
    () => ['d'],
    () => ['a', ref(), 'z'],
    () => ['a', 'z'],
    () => ['t', ref(), next(4)],
    () => ['t', next(2)],
    () => ['p', ref(), next(4), next(3), [value()]],
    () => ['p', next(3), 1, []],
    () => ['#', next(3), path()],
    // Wrong in the wire grammar.
    () => [['zz'], ['s'], 5, [], ['t', ['a'], -1], ['p', 'x', 0, 0, []], ['d', 1, 2], ['#', 0]][next(8)],
    // Wrong at decoding: an id never defined, an empty path, the root of an `s`.
    () => [['s', 9, 1], ['s', [], 1], ['a', 7, 'x'], ['#', 5000, ['a']]][next(4)],
  ];
  const op = ops[next(ops.length)]();
  const text = JSON.stringify(op);
  switch (next(40)) {
    case 0:
      return `["r",${deep(MAX_WIRE_NESTING - 3 + next(3))}]`; // at, then over the nesting limit
    case 1:
      return '["s",["a"],"\\ud800"]'; // a lone surrogate
    case 2:
      return '["s",["a"],1e400]'; // out of range
    case 3:
      // A member named twice: refused, whichever of the two values is checkable.
      return `["s",["a"],${REPEATS[next(REPEATS.length)]}]`;
    case 4:
      return '["s",["a"],{"\\udfff":1}]'; // a lone surrogate in a key
    default:
      return text;
  }
}

/** A batch text of `n` ops, with whitespace, sometimes corrupted by one character. */
function batchText(next, n) {
  const sep = () => [',', ' , ', ',\n', '\t,\r\n '][next(4)];
  const ops = Array.from({ length: n }, () => wireOp(next));
  let text = `${next(4) === 0 ? ' \n' : ''}[${ops.join(sep())}]${next(4) === 0 ? '\n' : ''}`;
  if (next(6) === 0) {
    const at = next(text.length + 1);
    const junk = ['[', ']', '{', '}', ',', '"', ':', 'x', '\\', ' ', '1', ''][next(12)];
    text = next(2) ? text.slice(0, at) + junk + text.slice(at) : text.slice(0, at) + text.slice(at + 1);
  }
  return text;
}

test('property: streaming a batch text ends as parsing it whole (error, value, failed state, batch after batch)', () => {
  for (let seed = 1; seed <= 400; seed++) {
    const next = rng(seed);
    const streamed = new Replica({ limits: { maxWork: 2000 } });
    const reference = new Replica({ limits: { maxWork: 2000 } });
    const base = '[["r",{"a":1,"o":{"k":"v"},"xs":[1,2,3],"s":"hello"}],["#",0,["xs"]],["#",1,["s"]]]';
    const texts = [base, ...Array.from({ length: 12 }, () => (next(8) === 0 ? base : batchText(next, 1 + next(next(5) === 0 ? 300 : 8))))];
    texts.forEach((text, i) => {
      const got = outcome(streamed, () => streamed.applyWireText(text));
      let want = whole(reference, text);
      const repeats = REPEATS.some((r) => text.includes(r));
      if (repeats && want.error?.kind === 'Json' && got.error?.message?.startsWith(REPEATED)) {
        want = { ...want, error: { ...want.error, message: REPEATED } };
      }
      assert.deepEqual(repeatAside(got, text), want, `seed ${seed}, batch ${i}: ${text.length > 400 ? `${text.slice(0, 400)}...` : text}`);
    });
  }
});

test('a syntax error anywhere wins, with the message JSON.parse gives for the whole text', () => {
  const op = '["s",["a"],{"k":"v","xs":[1,2,3]}]';
  const long = (tail) => `[["r",{"a":{}}],${`${op},\n`.repeat(2000)}${tail}`;
  const cases = [
    long(`${op}]x`), // after the batch
    long(`${op},]`), // a trailing comma
    long(`${op} ${op}]`), // a missing comma
    long(`["s",["a"],{"k":}]]`), // inside an op
    long(`["s",["a"],"\\x"]]`), // a bad escape
    long(`["zz"],["s",["a"],1,]]`), // after a grammar error
    long(`${op}`), // the end of the text
    long(`${op}}`), // a brace closing the batch
    '[["zz"],["s",["a"],1]', // short text: parsed whole
    ' \n',
    '[',
    '[]]',
    '["s"]garbage',
  ];
  for (const text of cases) {
    let expected;
    try {
      JSON.parse(text);
    } catch (e) {
      expected = `invalid JSON: ${e.message}`;
    }
    assert.ok(expected, text.slice(-40));
    const replica = new Replica();
    assert.throws(() => replica.applyWireText(text), (e) => e.kind === 'Json' && e.message === expected, text.slice(-60));
    assert.ok(replica.failed);
  }
});

test('the first error of the most serious stage wins, wherever it is in the batch', () => {
  const run = (text, setup = '[["r",{"a":1}]]') => {
    const replica = new Replica();
    replica.applyWireText(setup);
    try {
      replica.applyWireText(text);
    } catch (e) {
      return [e.kind, e.opIndex];
    }
    return ['ok'];
  };
  // An op that cannot apply (op 0) loses to a later decode error (op 1).
  assert.deepEqual(run('[["s",["no","x"],1],["s",9,1]]'), ['UnknownId', 1]);
  // A decode error (op 0) loses to a later grammar error (op 2), which loses to a later refusal in the JSON.
  assert.deepEqual(run('[["s",9,1],["s",["a"],1],["zz"]]'), ['UnknownVerb', 2]);
  assert.deepEqual(run('[["zz"],["s",["a"],"\\ud800"]]'), ['Json', undefined]);
  // Of two errors of one stage, the first.
  assert.deepEqual(run('[["s",["a"],2],["s",["no","x"],1],["t",["a"],1]]'), ['Missing', 1]);
  // An apply error's index counts decoded ops: definitions are not ops.
  assert.deepEqual(run('[["#",0,["no","x"]],["s",0,1]]'), ['Missing', 0]);
  // A failed replica takes only a base batch, and a syntax error still wins over that.
  const failed = new Replica();
  assert.throws(() => failed.applyWireText('[["s",["a"],1]]'), (e) => e.kind === 'NoValue');
  assert.throws(() => failed.applyWireText('[["s",["a"],1]]'), (e) => e.kind === 'ReplicaFailed');
  assert.throws(() => failed.applyWireText('[]'), (e) => e.kind === 'ReplicaFailed');
  assert.throws(() => failed.applyWireText('[["s",["a"],1],'), (e) => e.kind === 'Json');
  assert.deepEqual(failed.applyWireText('[["r",{"b":2}],["#",0,["b"]],["s",0,3]]'), { b: 3 });
  assert.deepEqual(failed.applyWireText('[["s",0,4]]'), { b: 4 });
});

test('the text is read op by op: an op is applied before the next one is parsed', () => {
  const parse = JSON.parse;
  const seen = [];
  const replica = new Replica();
  replica.subscribe((v) => v, () => {});
  JSON.parse = function traced(text, ...rest) {
    seen.push(text);
    return parse.call(this, text, ...rest);
  };
  try {
    replica.applyWireText('[["r",{"a":[]}], ["p",["a"],0,0,[1]] ,\n["p",0,0,[2]]]');
  } finally {
    JSON.parse = parse;
  }
  assert.deepEqual(seen, ['["r",{"a":[]}]', ' ["p",["a"],0,0,[1]] ', '\n["p",0,0,[2]]']);
  assert.deepEqual(replica.value, { a: [2, 1] });
});

test('nesting counts the batch and the op, as when the batch is checked whole', () => {
  // Under the limit it decodes, and apply's depth limit (120) refuses it; at the limit, the decoder.
  for (const [depth, kind] of [[MAX_WIRE_NESTING - 3, 'LimitExceeded'], [MAX_WIRE_NESTING - 2, 'Json']]) {
    const replica = new Replica();
    let got = 'ok';
    try {
      replica.applyWireText(`[["r",${deep(depth)}]]`);
    } catch (e) {
      got = e.kind;
    }
    assert.equal(got, kind, `depth ${depth}`);
  }
  // A million levels: refused, no stack overflow.
  assert.throws(() => new Replica().applyWireText(`[["r",${deep(1_000_000)}]]`), (e) => e.kind === 'Json');
});

/** A `fetch` serving one SSE body per GET (the last one again when they run out). */
/** A catch-up read's answer for a stream with nothing in it yet. */
const emptyCatchUp = () =>
  new Response('[]', { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000000' } });

function serving(bodies) {
  let gets = 0;
  return async (url, init = {}) => {
    // The catch-up read a follower joins with: nothing yet, so the SSE bodies bring the base.
    if (!String(url).includes('live=')) return emptyCatchUp();
    gets += 1;
    const body = bodies[Math.min(gets, bodies.length) - 1];
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
}

const sse = (name, data) => `event: ${name}\ndata: ${data}\n\n`;

test('follow streams the default transport\'s batches op by op, never parsing an event or a batch whole', async () => {
  const base = '[["r",{"xs":[],"t":""}],["#",0,["xs"]]]';
  const ops = Array.from({ length: 200 }, (_, i) => `["p",0,${i},0,[${i}]]`).join(',');
  const event = `[${base},[${ops},["a",["t"],"x"],["a","y"]]]`;
  const body = sse('data', event) + sse('control', '{"streamNextOffset":"0000000000000002"}');
  const parse = JSON.parse;
  const parsed = [];
  JSON.parse = function traced(text, ...rest) {
    parsed.push(String(text));
    return parse.call(this, text, ...rest);
  };
  const batches = [];
  let follower;
  try {
    follower = follow('http://x/streams/s', {
      fetch: serving([body]),
      onEvent: (e) => e.type === 'batch' && batches.push(e.batch),
      backoffMin: 1,
      backoffMax: 2,
    });
    while (follower.offset === null) await new Promise((r) => setTimeout(r, 1));
  } finally {
    JSON.parse = parse;
  }
  follower.stop();
  await follower.done;
  assert.deepEqual(follower.replica.value, { xs: Array.from({ length: 200 }, (_, i) => i), t: 'xy' });
  assert.equal(batches.length, 2);
  assert.deepEqual(batches[1].at(-1), ['a', ['t'], 'y']);
  const longest = Math.max(...parsed.filter((t) => !t.includes('streamNextOffset')).map((t) => t.length));
  assert.ok(longest < 40, `the longest text parsed at once is ${longest} characters`);
  assert.ok(!parsed.includes(event));
});

test('follow: an event\'s batch, read after later batches changed the ids, holds the ops its batch decoded to', async () => {
  // The default transport keeps no ops for `onEvent`: `batch` is decoded from the batch's text
  // when read, with the ids as they were before that batch, whatever came after.
  const batches = [
    '[["r",{"a":"","b":"","c":[]}],["#",0,["a"]],["#",1,["c"]]]',
    '[["a",0,"x"],["#",0,["b"]],["a",0,"y"],["a","z"],["p",1,0,0,[1]]]',
    '[["a",0,"w"],["#",1,["a"]],["a",1,"v"],["d",["c",0]]]',
    '[["r",{"a":"new"}],["#",0,["a"]],["a",0,"!"]]',
    '[["t",0,1],["a","?"]]',
  ];
  const reference = new Replica({ onChange: (value, ops) => expected.push(JSON.parse(JSON.stringify(ops))) });
  const expected = [];
  for (const text of batches) reference.applyWireText(text);
  const body =
    sse('data', `[${batches.slice(0, 3).join(',')}]`) +
    sse('control', '{"streamNextOffset":"0000000000000003"}') +
    sse('data', `[${batches.slice(3).join(',')}]`) +
    sse('control', '{"streamNextOffset":"0000000000000005"}');
  const events = [];
  const follower = follow('http://x/streams/s', {
    fetch: serving([body, '']),
    onEvent: (e) => e.type === 'batch' && events.push(e),
    backoffMin: 1,
    backoffMax: 2,
  });
  while (follower.offset !== '0000000000000005') await new Promise((r) => setTimeout(r, 1));
  follower.stop();
  await follower.done;
  assert.deepEqual(follower.replica.value, reference.value);
  assert.deepEqual(events.map((e) => e.base), [true, false, false, true, false]);
  // Read last to first, long after each batch applied; each read is kept by its event.
  for (let i = events.length - 1; i >= 0; i--) assert.deepEqual(events[i].batch, expected[i], `batch ${i}`);
  assert.equal(events[1].batch, events[1].batch);
  // Spread or serialized, an event has its batch too.
  assert.deepEqual({ ...events[4] }.batch, expected[4]);
  assert.deepEqual(JSON.parse(JSON.stringify(events[2])).batch, expected[2]);
});

test('a syntax error anywhere in an event: none of its batches applies, and follow starts over', async () => {
  const good = sse('data', '[[["r",{"n":0}]]]') + sse('control', '{"streamNextOffset":"0000000000000001"}');
  const broken = sse('data', '[[["s",["n"],1]],[["s",["n"],2],]]') + sse('control', '{"streamNextOffset":"0000000000000003"}');
  const seen = [];
  const errors = [];
  const replica = new Replica({ onChange: (v) => seen.push(v.n) });
  const follower = follow('http://x/streams/s', {
    fetch: serving([good + broken, good]),
    replica,
    backoffMin: 1,
    backoffMax: 2,
    onError: (error, info) => errors.push([error, info]),
  });
  while (errors.length === 0 || follower.stats.starts < 2) await new Promise((r) => setTimeout(r, 1));
  follower.stop();
  await follower.done;
  const [error, info] = errors[0];
  let expected;
  try {
    JSON.parse('[[["s",["n"],1]],[["s",["n"],2],]]');
  } catch (e) {
    expected = `invalid JSON: ${e.message}`;
  }
  assert.equal(error.kind, 'Json');
  assert.equal(error.message, expected);
  assert.equal(info.restart, true);
  assert.equal(seen[0], 0);
  assert.ok(!seen.includes(1), 'the first batch of the broken event never applied');
});

test('sseTransport\'s chunks still give their batches parsed, to any other reader', async () => {
  const body = sse('data', '[[["r",1]],[["s",["a"],{"b":[1,"\\u00e9"]}]]]') + sse('control', '{"streamNextOffset":"0000000000000002"}');
  const chunks = [];
  for await (const chunk of sseTransport({ url: 'http://x/s', offset: '-1', fetch: serving([body, '']) })) chunks.push(chunk);
  assert.equal(chunks.length, 1);
  assert.deepEqual(chunks[0].messages, [[['r', 1]], [['s', ['a'], { b: [1, 'é'] }]]]);
  assert.equal(chunks[0].messages, chunks[0].messages, 'parsed once');
  assert.equal(chunks[0].offset, '0000000000000002');
});

test('values a streamed batch takes as parsed: depth limit, "__proto__" keys, no prototype reached', () => {
  for (const [text, kind] of [
    ['[["r",{"a":{"b":{"c":1}}}]]', 'ok'],
    ['[["r",{"a":{"b":{"c":[]}}}]]', 'LimitExceeded'],
    ['[["r",{"a":{}}],["s",["a","b"],{"c":1}]]', 'ok'],
    ['[["r",{"a":{}}],["s",["a","b"],{"c":{}}]]', 'LimitExceeded'],
    ['[["r",{"xs":[]}],["p",["xs"],0,0,[[1]]]]', 'ok'],
    ['[["r",{"xs":[]}],["p",["xs"],0,0,[[[1]]]]]', 'LimitExceeded'],
  ]) {
    // Streamed with no onChange (values taken as parsed) and with one (values copied): alike.
    for (const onChange of [undefined, () => {}]) {
      const replica = new Replica({ limits: { maxDepth: 3 }, onChange });
      let got = 'ok';
      try {
        replica.applyWireText(text);
      } catch (e) {
        got = e.kind;
      }
      assert.equal(got, kind, `${text} ${onChange ? 'with' : 'without'} onChange`);
    }
  }
  const replica = new Replica();
  replica.applyWireText('[["r",{"v":{"__proto__":{"polluted":true}},"xs":[]}],["p",["xs"],0,0,[{"__proto__":[1]}]]]');
  for (const o of [replica.value.v, replica.value.xs[0]]) {
    assert.ok(Object.hasOwn(o, '__proto__'));
    assert.equal(Object.getPrototypeOf(o), Object.prototype);
  }
  assert.equal(({}).polluted, undefined);
  replica.applyWireText('[["s",["v","x"],1]]');
  assert.ok(Object.hasOwn(replica.value.v, '__proto__'), 'a copied object keeps the key');
  assert.equal(({}).polluted, undefined);
});
