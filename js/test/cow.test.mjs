// Values are copy on write: a batch leaves every subtree it did not change the same object
// and gives every container on a changed path (up to the root) a new one, copying each at
// most once per batch; a failed batch leaves the previous value the very object it was.
// `subscribe` fires only when its slice changed; `onChange` and `onEvent` see decoded ops.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { apply, ChordError, follow, Replica } from '../chord-replica.mjs';

const doc = () => ({
  lane: { status: 'idle', usage: { tokens: 1 } },
  transcript: [{ text: 'a' }, { text: 'b' }, { text: 'c' }],
  meta: { tags: ['x'] },
});

test('a batch gives the changed path new objects and keeps every other subtree', () => {
  const before = doc();
  const snapshot = structuredClone(before);
  const after = apply(before, [['a', ['transcript', 1, 'text'], '!'], ['s', ['lane', 'status'], 'busy']]);
  assert.deepEqual(before, snapshot, 'the target is untouched');
  assert.notEqual(after, before);
  assert.notEqual(after.transcript, before.transcript);
  assert.notEqual(after.transcript[1], before.transcript[1]);
  assert.notEqual(after.lane, before.lane);
  // Siblings of the changed paths are the same objects.
  assert.equal(after.transcript[0], before.transcript[0]);
  assert.equal(after.transcript[2], before.transcript[2]);
  assert.equal(after.lane.usage, before.lane.usage);
  assert.equal(after.meta, before.meta);
  assert.deepEqual(after.transcript[1], { text: 'b!' });
  // A splice shifts elements: the same objects, at their new places.
  const spliced = apply(before, [['p', ['transcript'], 0, 1, [{ text: 'z' }]], ['d', ['transcript', 1]]]);
  assert.deepEqual(spliced.transcript, [{ text: 'z' }, { text: 'c' }]);
  assert.equal(spliced.transcript[1], before.transcript[2]);
  assert.equal(spliced.lane, before.lane);
});

test('ops that change nothing keep the value itself', () => {
  const before = doc();
  for (const ops of [
    [],
    [['d', ['nope']]],
    [['a', ['lane', 'status'], '']],
    [['t', ['lane', 'status'], 0]],
    [['p', ['transcript'], 1, 0, []]],
    [['s', ['lane', 'status'], 'idle']],
    [['s', ['transcript', 0, 'text'], 'a'], ['d', ['meta', 'none']]],
  ]) {
    assert.equal(apply(before, ops), before, JSON.stringify(ops));
  }
  // A container written over an equal one is a change: values are compared by identity only.
  assert.notEqual(apply(before, [['s', ['meta'], { tags: ['x'] }]]).meta, before.meta);
});

test('a container is copied once per batch, however many ops change it', () => {
  const counts = { ownKeys: 0, writes: 0 };
  const target = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
  const traced = new Proxy(target, {
    ownKeys: (t) => {
      counts.ownKeys++;
      return Reflect.ownKeys(t);
    },
    set: (...args) => {
      counts.writes++;
      return Reflect.set(...args);
    },
    defineProperty: (...args) => {
      counts.writes++;
      return Reflect.defineProperty(...args);
    },
  });
  const ops = Array.from({ length: 100 }, (_, i) => ['s', ['o', `k${i}`], -i]);
  const out = apply({ o: traced, other: [1] }, [...ops, ['s', ['o', 'new'], 'x'], ['d', ['o', 'k0']]]);
  assert.equal(counts.ownKeys, 1);
  assert.equal(counts.writes, 0);
  assert.equal(out.o.k5, -5);
  assert.equal(out.o.new, 'x');
  assert.ok(!Object.hasOwn(out.o, 'k0'));
  assert.equal(target.k5, 5);
  // An array's copy is made by its `slice`, which builds the copy with the array's own
  // constructor: a subclass counts every copy, of the target and of copies alike.
  let copies = 0;
  class Counted extends Array {
    constructor(...args) {
      super(...args);
      copies += 1;
    }
  }
  const list = Counted.from([1, 2, 3, 4, 5]);
  copies = 0;
  // (Only `s` and `a` here: a native `splice` builds its removed elements that way too.)
  const ops2 = [...Array.from({ length: 50 }, (_, i) => ['s', ['xs', i % 5], `${i}`]), ['a', ['xs', 0], '!'], ['s', ['xs', 5], 0]];
  const out2 = apply({ xs: list }, ops2);
  assert.equal(copies, 1);
  assert.deepEqual([...out2.xs], ['45!', '46', '47', '48', '49', 0]);
  assert.deepEqual([...list], [1, 2, 3, 4, 5]);
});

test('a failed batch leaves the replica\'s value the very object it was', () => {
  const replica = new Replica();
  replica.applyWireText(JSON.stringify([['r', doc()]]));
  const value = replica.value;
  const snapshot = structuredClone(value);
  assert.throws(
    () => replica.applyWireText('[["a",["transcript",0,"text"],"!"],["d",["lane"]],["s",["missing","x"],1]]'),
    (e) => e.kind === 'Missing' && e.opIndex === 2,
  );
  assert.equal(replica.value, value);
  assert.deepEqual(value, snapshot);
  // Also when the op that fails is an invalid one, or the decoder refuses a later op.
  const again = new Replica();
  again.applyWireText(JSON.stringify([['r', doc()]]));
  const held = again.value;
  assert.throws(() => again.applyWireText('[["s",["lane","status"],"x"],["s",9,1]]'), (e) => e.kind === 'UnknownId');
  assert.equal(again.value, held);
  assert.equal(held.lane.status, 'idle');
});

test('subscribe: the listener runs only when its slice changed, with the previous slice', () => {
  const replica = new Replica();
  const calls = [];
  const unsubscribe = replica.subscribe(
    (v) => v.transcript[0],
    (slice, previous) => calls.push([slice, previous]),
  );
  const statuses = [];
  replica.subscribe((v) => v.lane.status, (s) => statuses.push(s));
  replica.applyWireText(JSON.stringify([['r', doc()]]));
  assert.equal(calls.length, 1);
  assert.equal(calls[0][1], undefined);
  const first = replica.value.transcript[0];
  assert.equal(calls[0][0], first);
  replica.applyWireText('[["a",["transcript",1,"text"],"!"],["s",["lane","status"],"busy"]]');
  assert.equal(calls.length, 1, 'a sibling changed: no call');
  replica.applyWireText('[["a",["transcript",0,"text"],"?"]]');
  assert.equal(calls.length, 2);
  assert.deepEqual(calls[1][0], { text: 'a?' });
  assert.equal(calls[1][1], first);
  replica.applyWireText('[["d",["nope"]]]');
  assert.equal(calls.length, 2, 'nothing changed: no call');
  assert.throws(() => replica.applyWireText('[["a",["transcript",0,"text"],"?"],["zz"]]'));
  assert.equal(calls.length, 2, 'a failed batch: no call');
  unsubscribe();
  replica.applyWireText('[["r",{"transcript":[{"text":"new"}],"lane":{"status":"busy"}}]]');
  assert.equal(calls.length, 2, 'unsubscribed');
  assert.deepEqual(statuses, ['idle', 'busy'], 'busy twice in a row is one change');
  assert.throws(() => replica.subscribe('x', () => {}), TypeError);
});

test('subscribe: a throwing listener leaves the batch applied, the others run, the first error is rethrown', () => {
  const replica = new Replica();
  const ran = [];
  replica.subscribe((v) => v.n, () => {
    ran.push('first');
    throw new Error('render failed');
  });
  replica.subscribe((v) => v.n, (n) => ran.push(n));
  assert.throws(() => replica.applyWireText('[["r",{"n":1}]]'), /render failed/);
  assert.deepEqual(ran, ['first', 1]);
  assert.deepEqual(replica.value, { n: 1 });
  assert.equal(replica.failed, null);
  // A subscription made after a value exists selects from it at once.
  const later = [];
  replica.subscribe((v) => v.n, (n, previous) => later.push([n, previous]));
  assert.throws(() => replica.applyWireText('[["s",["n"],2]]'), /render failed/);
  assert.deepEqual(later, [[2, 1]]);
});

test('onChange gets the decoded ops: full paths for short forms and ids, the appended text', () => {
  const seen = [];
  const replica = new Replica({ onChange: (value, ops) => seen.push(ops) });
  replica.applyWireText('[["r",{"out":"","xs":[]}],["#",0,["out"]],["a",0,"he"],["a","llo"],["p",["xs"],0,0,[1]],["p",1,0,[2]]]');
  assert.deepEqual(seen, [[
    ['r', { out: '', xs: [] }],
    ['a', ['out'], 'he'],
    ['a', ['out'], 'llo'],
    ['p', ['xs'], 0, 0, [1]],
    ['p', ['xs'], 1, 0, [2]],
  ]]);
  replica.applyWireText('[["a",0,"!"],["t",1]]');
  assert.deepEqual(seen[1], [['a', ['out'], '!'], ['t', ['out'], 1]]);
});

/** A transport serving these events once, then ending the connection for good. */
const serve = (events) =>
  async function* transport({ signal }) {
    for (const event of events) yield event;
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  };

test('follow: the handle subscribes, and onEvent gets each batch\'s decoded ops and value', async () => {
  const batches = [
    [['r', { n: 0, out: '' }], ['#', 0, ['out']]],
    [['a', 0, 'x'], ['a', 'y']],
    [['s', ['n'], 1]],
  ];
  const events = [];
  const follower = follow('http://x/streams/s', {
    // The catch-up read a follower joins with: nothing yet, so the transport brings the base.
    fetch: async () => new Response('[]', { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000000' } }),
    transport: serve([{ messages: batches, offset: '0000000000000003' }]),
    onEvent: (e) => events.push(e),
  });
  const outs = [];
  const stop = follower.subscribe((v) => v.out, (out) => outs.push(out));
  while (follower.offset === null) await new Promise((r) => setTimeout(r, 1));
  follower.stop();
  await follower.done;
  stop();
  const seen = events.filter((e) => e.type === 'batch');
  assert.deepEqual(seen.map((e) => e.batch), [
    [['r', { n: 0, out: '' }]],
    [['a', ['out'], 'x'], ['a', ['out'], 'y']],
    [['s', ['n'], 1]],
  ]);
  assert.deepEqual(seen.map((e) => e.base), [true, false, false]);
  assert.deepEqual(seen.at(-1).value, { n: 1, out: 'xy' });
  assert.deepEqual(outs, ['', 'xy'], 'the last batch left `out` alone');
  assert.equal(follower.stats.bases, 1);
});

/** A small deterministic generator, so a failure replays exactly. */
function rng(seed) {
  let s = BigInt(seed);
  return (n) => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return Number(s >> 33n) % n;
  };
}

/** A random JSON value of at most `depth` levels. */
function randomValue(next, depth) {
  const kind = next(depth > 0 ? 6 : 3);
  if (kind === 0) return next(100);
  if (kind === 1) return ['', 'ab', 'xyz'][next(3)];
  if (kind === 2) return [null, true][next(2)];
  if (kind <= 4) return Array.from({ length: next(4) }, () => randomValue(next, depth - 1));
  return Object.fromEntries(Array.from({ length: next(4) }, (_, i) => [`k${i}`, randomValue(next, depth - 1)]));
}

/** Every location in `v`, with its value. */
function locations(v, path = [], out = []) {
  out.push([path, v]);
  if (Array.isArray(v)) v.forEach((c, i) => locations(c, [...path, i], out));
  else if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) locations(v[k], [...path, k], out);
  return out;
}

const get = (v, path) => path.reduce((node, seg) => node[seg], v);

/**
 * The reference: applies one op to a deep copy in place, the plain way. Returns the new root
 * and the path of the container it wrote into.
 */
function referenceStep(root, op) {
  const [verb, path] = op;
  if (verb === 'r') return [structuredClone(op[1]), null];
  if (verb === 'p') {
    const arr = get(root, path);
    const index = Math.min(op[2], arr.length);
    arr.splice(index, Math.min(op[3], arr.length - index), ...structuredClone(op[4]));
    return [root, path];
  }
  const parent = get(root, path.slice(0, -1));
  const last = path.at(-1);
  if (verb === 's') parent[last] = structuredClone(op[2]);
  else if (verb === 'd') {
    if (Array.isArray(parent)) parent.splice(last, 1);
    else delete parent[last];
  } else if (verb === 'a') parent[last] += op[2];
  else parent[last] = parent[last].slice(op[2]);
  return [root, path.slice(0, -1)];
}

let unique = 1_000_000;

/** A random op that applies to `v` and changes it. */
function randomOp(next, v) {
  const all = locations(v);
  const containers = all.filter(([, x]) => x !== null && typeof x === 'object');
  const strings = all.filter(([p, x]) => typeof x === 'string' && p.length > 0);
  for (;;) {
    switch (next(6)) {
      case 0: {
        const [path, node] = containers[next(containers.length)];
        const keys = Array.isArray(node) ? Array.from({ length: node.length + 1 }, (_, i) => i) : [...Object.keys(node), 'new'];
        // A number never written before, or a new container: the op always changes the value.
        return ['s', [...path, keys[next(keys.length)]], next(3) ? (unique += 1) : [randomValue(next, 1)]];
      }
      case 1: {
        const [path, node] = containers[next(containers.length)];
        const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
        if (keys.length > 0) return ['d', [...path, keys[next(keys.length)]]];
        break;
      }
      case 2:
        if (strings.length > 0) return ['a', strings[next(strings.length)][0], 'q'];
        break;
      case 3: {
        const nonEmpty = strings.filter(([, s]) => s.length > 0);
        if (nonEmpty.length > 0) return ['t', nonEmpty[next(nonEmpty.length)][0], 1];
        break;
      }
      case 4: {
        const arrays = containers.filter(([, x]) => Array.isArray(x));
        if (arrays.length > 0) {
          const [path, arr] = arrays[next(arrays.length)];
          return ['p', path, next(arr.length + 2), next(3), [randomValue(next, 1)]];
        }
        break;
      }
      default:
        if (next(8) === 0) return ['r', { root: randomValue(next, 3), xs: [] }];
    }
  }
}

const isPrefix = (p, q) => p.length <= q.length && p.every((s, i) => String(s) === String(q[i]));

test('property: copy on write matches a deep-copy reference, shares what did not change, and never touches the target', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const next = rng(seed);
    let target = { root: randomValue(next, 3), xs: [randomValue(next, 2)], o: { k: 'ab' } };
    for (let round = 0; round < 5; round++) {
      const snapshot = structuredClone(target);
      let reference = structuredClone(target);
      const ops = [];
      const written = [];
      let replaced = false;
      for (let k = 1 + next(5); k > 0; k--) {
        const op = randomOp(next, reference);
        ops.push(op);
        const [root, at] = referenceStep(reference, op);
        reference = root;
        if (at === null) replaced = true;
        else if (!replaced) written.push(at);
      }
      const where = `seed ${seed}, round ${round}: ${JSON.stringify(ops)}`;
      if (next(4) === 0) {
        // Fails at its last op: the target is the same object, unchanged.
        assert.throws(() => apply(target, [...ops, ['s', ['no such', 'member'], 1]]), (e) => e instanceof ChordError && e.opIndex === ops.length, where);
        assert.deepEqual(target, snapshot, where);
        continue;
      }
      const result = apply(target, ops);
      assert.deepEqual(result, reference, where);
      assert.deepEqual(target, snapshot, `${where}: the target is untouched`);
      if (!replaced) {
        // Every container on a written path is new; every container neither on one nor
        // under a written container is the target's own object.
        for (const [path, node] of locations(result)) {
          if (node === null || typeof node !== 'object') continue;
          const onPath = written.some((w) => isPrefix(path, w));
          const under = written.some((w) => isPrefix(w, path) && w.length < path.length);
          if (under) continue; // an ancestor was written into: it may have moved
          if (onPath) assert.ok(node !== safeGet(target, path), `${where}: ${JSON.stringify(path)} is new`);
          else assert.equal(node, safeGet(target, path), `${where}: ${JSON.stringify(path)} is shared`);
        }
      }
      target = result;
    }
  }
});

/** `get`, or `undefined` where the path does not exist. */
function safeGet(v, path) {
  let node = v;
  for (const seg of path) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, seg)) return undefined;
    node = node[seg];
  }
  return node;
}
