// What a hostile batch can cost a replica: decoded memory proportional to the wire text
// (shared paths, at most MAX_PATH_SEGMENTS segments), and per-batch time bounded by the work
// budget (DEFAULT_LIMITS.maxWork). Nothing here measures time: the tests count work units,
// property accesses through proxies and calls, which do not depend on the machine or the heap.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  apply,
  checkOp,
  checkWireOp,
  ChordError,
  createDecoder,
  DEFAULT_LIMITS,
  MAX_ID_PATH_UNITS,
  MAX_IDS,
  MAX_PATH_SEGMENTS,
  Replica,
} from '../chord-replica.mjs';

const zeros = (n) => new Array(n).fill(0);
const keyOrder = (doc) =>
  JSON.stringify(doc, (k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : v));

/** Applies a batch that must be refused with `max_work`; the document must be exactly as before. */
function assertOverBudget(doc, ops, maxWork, opIndex) {
  const text = JSON.stringify(doc);
  const keys = keyOrder(doc);
  assert.throws(
    () => apply(doc, ops, maxWork === undefined ? undefined : { maxWork }),
    (e) =>
      e instanceof ChordError &&
      e.kind === 'LimitExceeded' &&
      e.limit === 'max_work' &&
      e.max === (maxWork ?? DEFAULT_LIMITS.maxWork) &&
      (opIndex === undefined || e.opIndex === opIndex) &&
      e.message.endsWith(`exceeds the max_work limit of ${e.max}`),
  );
  assert.equal(JSON.stringify(doc), text, 'value restored');
  assert.equal(keyOrder(doc), keys, 'key order restored');
}

/**
 * The work a batch does under the documented rule, counted independently of the applier (on
 * a private copy, with plain JavaScript edits): returns the running total after each op.
 * Expects ops that apply.
 */
function workOf(doc, ops) {
  let state = structuredClone(doc);
  const recorded = new Set(); // objects whose key order a delete recorded in this batch
  const at = (path) => path.reduce((node, seg) => node[seg], state);
  const totals = [];
  let work = 0;
  for (const op of ops) {
    if (op[0] === 'r') {
      state = structuredClone(op[1]);
      totals.push(work);
      continue;
    }
    const path = op[1];
    work += path.length;
    for (const seg of path) if (typeof seg === 'string') work += seg.length;
    const parent = at(path.slice(0, -1));
    const last = path[path.length - 1];
    switch (op[0]) {
      case 's':
        parent[last] = structuredClone(op[2]);
        break;
      case 'a':
        parent[last] += op[2];
        break;
      case 'd':
        if (Array.isArray(parent)) {
          work += parent.length - last - 1;
          parent.splice(last, 1);
        } else if (Object.hasOwn(parent, String(last))) {
          work += recorded.has(parent) ? 1 : Object.keys(parent).length;
          recorded.add(parent);
          delete parent[last];
        }
        break;
      case 't':
        work += Math.max(0, parent[last].length - op[2]);
        parent[last] = parent[last].slice(op[2]);
        break;
      case 'p': {
        const arr = at(path);
        const index = Math.min(op[2], arr.length);
        const remove = Math.min(op[3], arr.length - index);
        const k = op[4].length;
        work += remove + k + (k === remove ? 0 : arr.length - index - remove);
        arr.splice(index, remove, ...structuredClone(op[4]));
        break;
      }
    }
    totals.push(work);
  }
  return totals;
}

// ---- paths: shared when decoded, bounded everywhere ----

test('decoded ops share the resolved path: short forms and ids hold one frozen array', () => {
  const n = 20000;
  const long = Array.from({ length: 100 }, (_, i) => (i % 2 ? i : `k${i}`));
  const wire = [['r', {}], ['d', long], ...Array.from({ length: n }, () => ['d'])];
  const ops = createDecoder().decode(wire);
  assert.equal(ops.length, n + 2);
  const path = ops[1][1];
  assert.deepEqual(path, long);
  assert.notEqual(path, long, 'the wire array is copied once, not taken over');
  assert.ok(Object.isFrozen(path));
  assert.ok(ops.slice(2).every((op) => op[1] === path), 'every short form holds the same array');

  // Interned ids: one array per definition, shared by every use, across batches too.
  const dec = createDecoder();
  const first = dec.decodeText('[["r",{"a":{"b":""}}],["#",7,["a","b"]],["a",7,"x"],["a","y"],["t",7,1]]');
  const second = dec.decodeText('[["a",7,"z"],["s",7,"w"],["p",["xs"],0,0,[]],["a",7,"!"]]');
  const idPath = first[1][1];
  for (const op of [first[2], first[3], second[0], second[1], second[3]]) assert.equal(op[1], idPath);
  assert.notEqual(second[2][1], idPath);

  // A shared path is frozen, so no consumer can corrupt the others or the id table.
  assert.throws(() => idPath.push('c'), TypeError);
  assert.deepEqual(dec.decode([['s', 7, 1]]), [['s', ['a', 'b'], 1]]);
});

test('the applier never mutates op paths: frozen decoded paths apply, fail and roll back', () => {
  const replica = new Replica();
  replica.applyWireText('[["r",{"o":{"a":1,"b":[1,2,3]},"s":"hello"}],["#",0,["o","b"]],["#",1,["s"]]]');
  replica.applyWireText('[["p",0,0,1,[9]],["d",["o","b",0]],["d"],["s",["o","a"],2],["a",1,"!"],["t",1,1],["d",["o","a"]]]');
  assert.deepEqual(replica.value, { o: { b: [3] }, s: 'ello!' });
  assert.throws(() => replica.applyWireText('[["a",1,"x"],["d",["o","b",5]]]'), (e) => e.kind === 'IndexOutOfRange');
  assert.deepEqual(replica.value, { o: { b: [3] }, s: 'ello!' });
});

test(`paths have at most ${MAX_PATH_SEGMENTS} segments, on both grammars and in apply`, () => {
  assert.equal(MAX_PATH_SEGMENTS, 128);
  const ok = zeros(128);
  const over = zeros(129);
  const refused = (f, found = 129) =>
    assert.throws(f, (e) =>
      e instanceof ChordError && e.kind === 'InvalidPath' &&
      e.message.includes(`invalid path: ${found} segments; a path has at most 128`));
  for (const make of [
    (p) => ['s', p, 1],
    (p) => ['d', p],
    (p) => ['a', p, 'x'],
    (p) => ['t', p, 1],
    (p) => ['p', p, 0, 0, []],
  ]) {
    assert.doesNotThrow(() => checkOp(make(ok)));
    assert.doesNotThrow(() => checkWireOp(make(ok)));
    refused(() => checkOp(make(over)));
    refused(() => checkWireOp(make(over)));
    refused(() => apply({}, [make(over)]));
  }
  assert.doesNotThrow(() => checkWireOp(['#', 0, ok]));
  refused(() => checkWireOp(['#', 0, over]));
  refused(() => createDecoder().decode([['r', {}], ['#', 0, over]]));
  refused(() => checkOp(['s', Array(100000).fill('k'), 1]), 100000);
  // The error names the op.
  assert.throws(() => apply({}, [['s', ['a'], 1], ['s', over, 1]]), (e) => e.opIndex === 1 && /^op 1: invalid path: 129 segments/.test(e.message));
});

test('a 100,000-segment path is refused by its length, before any segment is read', () => {
  // A proxy over the path counts how many of its properties the grammar reads.
  let reads = 0;
  const path = new Proxy(zeros(100000), {
    get(target, key, receiver) {
      reads++;
      return Reflect.get(target, key, receiver);
    },
  });
  for (const check of [() => checkOp(['d', path]), () => checkWireOp(['d', path]), () => checkWireOp(['#', 0, path])]) {
    reads = 0;
    assert.throws(check, (e) => e.kind === 'InvalidPath' && /100000 segments/.test(e.message));
    assert.ok(reads <= 2, `read ${reads} properties of the path`);
  }
  // The hostile wire batch (320 KB of text) is refused by the wire grammar, whole, at op 0.
  const hostile = `[["d",[${zeros(100000).join(',')}]]${',["d"]'.repeat(20000)}]`;
  assert.ok(hostile.length > 300000);
  const dec = createDecoder();
  assert.throws(() => dec.decodeText(hostile), (e) => e.kind === 'InvalidPath' && e.opIndex === 0);
  assert.ok(dec.poisoned);
  const replica = new Replica();
  replica.applyWireText('[["r",{}]]');
  assert.throws(() => replica.applyWireText(hostile), (e) => e.kind === 'InvalidPath');
  assert.deepEqual(replica.value, {});
});

// ---- the work budget ----

test('the work budget: the default, and the limits argument', () => {
  assert.equal(DEFAULT_LIMITS.maxWork, 16777216);
  assert.equal(DEFAULT_LIMITS.maxWork, 2 ** 24);
  // Each front delete walks "xs" (1 + 2) and 0 (1), then shifts the elements after it: 4 + 3
  // and 4 + 2, 13 units for the two (the example in chord's Limits::max_work).
  const front = ['d', ['xs', 0]];
  assert.deepEqual(workOf({ xs: [1, 2, 3, 4] }, [front, front]), [7, 13]);
  assertOverBudget({ xs: [1, 2, 3, 4] }, [front, front], 12, 1);
  assert.deepEqual(apply({ xs: [1, 2, 3, 4] }, [front, front], { maxWork: 13 }), { xs: [3, 4] });
  // A Replica passes its limits on.
  const replica = new Replica({ limits: { maxWork: 12 } });
  replica.applyWireText('[["r",{"xs":[1,2,3,4]}]]');
  assert.throws(() => replica.applyWireText('[["d",["xs",0]],["d"]]'), (e) => e.limit === 'max_work' && e.max === 12);
  assert.deepEqual(replica.value, { xs: [1, 2, 3, 4] });
});

test('the work budget: exactly the budget applies, one unit less refuses and rolls back', () => {
  const doc = () => ({
    xs: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    o: { b: 1, 2: 'two', a: [1], c: 'x', 日本: 'jp' },
    p: { q: { r: 'hello world' } },
    s: 'é😀bcdef',
    n: null,
  });
  const batches = {
    'array delete': [['d', ['xs', 0]], ['d', ['xs', 8]], ['d', ['xs', 3]]],
    'object deletes: the first records the order, later ones cost 1': [
      ['d', ['o', 'b']], ['d', ['o', 'c']], ['d', ['o', 'missing']], ['s', ['o', 'b'], 1], ['d', ['o', 'b']], ['d', ['o', 2]],
    ],
    'deletes on two objects, and a missing member first': [
      ['d', ['p', 'zz']], ['d', ['p', 'q', 'r']], ['d', ['o', '日本']], ['d', ['p', 'q']], ['d', ['o', 'a']],
    ],
    'splices: replace in place, grow, shrink, clamp': [
      ['p', ['xs'], 2, 1, ['x']],
      ['p', ['xs'], 0, 0, [1, 2, 3]],
      ['p', ['xs'], 5, 4, []],
      ['p', ['xs'], 99, 99, [7]],
      ['p', ['xs'], 1, 99, ['y', 'z']],
    ],
    'truncates, past the end too': [['t', ['s'], 1], ['t', ['s'], 2], ['t', ['p', 'q', 'r'], 20], ['t', ['s'], 0]],
    'sets and appends cost their walk': [['s', ['n'], { deep: [1, 2] }], ['s', ['xs', 10], 1], ['a', ['s'], 'more'], ['s', ['o', 'a', 0], 2]],
    'a root replacement costs nothing, the ops after it do': [['d', ['o', 'b']], ['r', [{ xs: [1, 2, 3] }]], ['d', [0, 'xs', 0]], ['p', [], 0, 0, [1]]],
  };
  for (const [name, ops] of Object.entries(batches)) {
    const totals = workOf(doc(), ops);
    const work = totals[totals.length - 1];
    assert.ok(work > 0, name);
    const expected = apply(doc(), ops, { maxWork: Infinity });
    assert.deepEqual(apply(doc(), ops, { maxWork: work }), expected, `${name}: ${work} units apply`);
    const lastCostly = totals.findIndex((t) => t === work);
    const d = doc();
    const inner = d.o;
    assertOverBudget(d, ops, work - 1, lastCostly);
    assert.equal(d.o, inner, 'containers keep their identity');
    assert.deepEqual(d, doc(), name);
  }
});

test('clearing a 10,000-member object costs about 2n units, well within the default budget', () => {
  const n = 10000;
  const members = () => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
  const ops = Array.from({ length: n }, (_, i) => ['d', ['o', `k${i}`]]);
  // n for the one order record, 1 for each later delete, and the walks.
  let walks = 0;
  for (const [, path] of ops) walks += 2 + 1 + path[1].length;
  const work = n + (n - 1) + walks;
  assert.equal(workOf({ o: members() }, ops).at(-1), work);
  assert.ok(work < DEFAULT_LIMITS.maxWork / 100, 'linear, not quadratic');
  assert.deepEqual(apply({ o: members() }, ops), { o: {} });
  assert.deepEqual(apply({ o: members() }, ops, { maxWork: work }), { o: {} });
  assertOverBudget({ o: members() }, ops, work - 1, n - 1);
  // A failure after the whole clear restores every member, in order.
  const doc = { o: members() };
  assert.throws(() => apply(doc, [...ops, ['s', ['missing', 'x'], 1]]), (e) => e.kind === 'Missing');
  assert.deepEqual(Object.keys(doc.o), Object.keys(members()));
  assert.deepEqual(doc, { o: members() });
});

test('deleting members copies the object once per batch and never touches the target (counted through a proxy)', () => {
  const n = 2000;
  const counts = { ownKeys: 0, traps: 0, writes: 0 };
  const members = () => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
  const handler = {};
  for (const name of ['get', 'set', 'has', 'deleteProperty', 'defineProperty', 'getOwnPropertyDescriptor', 'ownKeys']) {
    handler[name] = (...args) => {
      counts.traps++;
      if (name === 'ownKeys') counts.ownKeys++;
      if (name === 'set' || name === 'deleteProperty' || name === 'defineProperty') counts.writes++;
      return Reflect[name](...args);
    };
  }
  const ops = Array.from({ length: n }, (_, i) => ['d', ['o', `k${i}`]]);

  // Applied: one copy for n deletes, which reads the keys twice (once to look for a copier
  // made for them, which an object of this many members has not, then the spread copying
  // it), a bounded number of traps per delete, and the deletes land in the copy.
  const applied = new Proxy(members(), handler);
  const out = apply({ o: applied }, ops);
  assert.equal(counts.ownKeys, 2);
  assert.equal(counts.writes, 0);
  assert.ok(counts.traps <= 8 * n, `${counts.traps} traps for ${n} deletes`);
  assert.deepEqual(Object.keys(out.o), []);
  assert.deepEqual(Object.keys(applied), Object.keys(members()));

  // Failed: still one copy, nothing written, nothing to restore.
  counts.ownKeys = counts.traps = counts.writes = 0;
  const target = members();
  const rolled = new Proxy(target, handler);
  assert.throws(() => apply({ o: rolled }, [...ops.slice(0, n / 2), ['s', ['o', 'k0'], 0], ['d', ['o', 'k0']], ['d', ['zz', 0]]]));
  assert.equal(counts.ownKeys, 2);
  assert.equal(counts.writes, 0);
  assert.ok(counts.traps <= 8 * n, `${counts.traps} traps for ${n / 2} deletes`);
  assert.deepEqual(target, members());
});

test('rollback restores key order after deletes, re-adds and integer-like keys on one object', () => {
  const doc = () => ({ o: { b: 1, 2: 'x', a: 2, 1: 'y', c: 3, d: { e: 1 } }, other: { z: 1, y: 2 } });
  const ops = [
    ['d', ['o', 'a']],
    ['s', ['o', 'a'], 5],
    ['d', ['o', 'b']],
    ['s', ['o', 'new'], 1],
    ['d', ['o', 'new']],
    ['d', ['o', 2]],
    ['s', ['o', 'b'], 9],
    ['d', ['other', 'z']],
    ['s', ['other', 'z'], 0],
    ['d', ['o', 'd', 'e']],
    ['d', ['o', 'd']],
    ['s', ['o', '2'], 'back'],
    ['d', ['o', 'c']],
  ];
  for (let cut = 1; cut <= ops.length; cut++) {
    const d = doc();
    const text = JSON.stringify(d);
    const keys = keyOrder(d);
    assert.throws(() => apply(d, [...ops.slice(0, cut), ['s', ['missing', 'x'], 1]]), (e) => e.kind === 'Missing' && e.opIndex === cut);
    assert.equal(JSON.stringify(d), text, `value after ${cut} ops`);
    assert.equal(keyOrder(d), keys, `key order after ${cut} ops`);
  }
});

test('50,000 front deletes on a 100,000-element array are refused with max_work', () => {
  const xs = Array.from({ length: 100000 }, (_, i) => i);
  const ops = Array.from({ length: 50000 }, () => ['d', ['xs', 0]]);
  // Op j walks "xs" and 0 (4 units), then shifts the 99,999 - j elements after it.
  let work = 0;
  let refusedAt = -1;
  for (let j = 0; j < ops.length && refusedAt < 0; j++) {
    work += 4 + (99999 - j);
    if (work > DEFAULT_LIMITS.maxWork) refusedAt = j;
  }
  assert.ok(refusedAt > 0 && refusedAt < 1000);
  assertOverBudget({ xs }, ops, undefined, refusedAt);
  // Deleting from the back instead is cheap: 50,000 deletes, about 4 units each.
  const back = Array.from({ length: 50000 }, (_, j) => ['d', ['xs', 99999 - j]]);
  assert.equal(apply({ xs: xs.slice() }, back).xs.length, 50000);
});

test('400,000 one-unit truncates of an 800 KB string are refused with max_work', () => {
  const s = 'x'.repeat(800000);
  const ops = Array.from({ length: 400000 }, () => ['t', ['s'], 1]);
  let work = 0;
  let refusedAt = -1;
  for (let j = 0; j < ops.length && refusedAt < 0; j++) {
    work += 2 + (800000 - 1 - j); // the walk, then what is left after the cut
    if (work > DEFAULT_LIMITS.maxWork) refusedAt = j;
  }
  const doc = { s };
  assertOverBudget(doc, ops, undefined, refusedAt);
  assert.equal(doc.s, s);
  // One truncate of the same amount is one op's work.
  assert.equal(apply({ s }, [['t', ['s'], 400000]]).s.length, 400000);
});

test('a same-length splice does not move the tail; a growing one pays for it', () => {
  const n = 100000;
  const ops = Array.from({ length: 1000 }, (_, i) => ['p', ['xs'], i, 1, [`v${i}`]]);
  const work = 1000 * (1 + 2 + 2); // walk "xs", one removed, one inserted, no tail
  assert.equal(workOf({ xs: [0, 1] }, [['p', ['xs'], 0, 1, [5]]]).at(-1), 5);
  const xs = Array.from({ length: n }, (_, i) => i);
  const out = apply({ xs }, ops, { maxWork: work }).xs;
  assert.equal(out.length, n);
  assert.deepEqual(out.slice(0, 3), ['v0', 'v1', 'v2']);
  assert.equal(out[n - 1], n - 1);
  assertOverBudget({ xs: Array.from({ length: n }, (_, i) => i) }, ops, work - 1, 999);
  // Inserting at the front moves the whole array each time.
  const grow = Array.from({ length: 1000 }, () => ['p', ['xs'], 0, 0, [1]]);
  assertOverBudget({ xs: Array.from({ length: n }, (_, i) => i) }, grow, 100 * n, 99);
});

test('appends to a long string count its UTF-8 bytes once per batch, not once per append', () => {
  // Over a third of maxStringLen, only bytes tell; counting them per append was quadratic.
  const limits = { maxStringLen: 3000 };
  const ops = Array.from({ length: 500 }, () => ['a', ['s'], 'é']);
  const original = String.prototype.charCodeAt;
  let reads = 0;
  String.prototype.charCodeAt = function (i) {
    reads++;
    return original.call(this, i);
  };
  let out;
  try {
    out = apply({ s: 'x'.repeat(1500) }, ops, limits);
  } finally {
    String.prototype.charCodeAt = original;
  }
  assert.equal(out.s.length, 2000); // 1,500 + 2 × 500 = 2,500 bytes
  assert.ok(reads <= 1500 + 2 * 500, `${reads} characters read`);
  // The limit still holds, across the cache: 1,500 + 2 × 751 bytes is over 3,000.
  const more = Array.from({ length: 751 }, () => ['a', ['s'], 'é']);
  assert.throws(() => apply({ s: 'x'.repeat(1500) }, more, limits), (e) => e.limit === 'max_string_len' && e.opIndex === 750);
  // A string changed by another op in between is counted again.
  assert.throws(
    () => apply({ s: 'x'.repeat(1500) }, [['a', ['s'], 'é'], ['s', ['s'], '€'.repeat(1000)], ['a', ['s'], 'é']], limits),
    (e) => e.limit === 'max_string_len' && e.opIndex === 2,
  );
});

test(`the id table is bounded: ids below ${MAX_IDS}, at most ${MAX_ID_PATH_UNITS} key units each`, () => {
  const define = (id, path) => [['#', id, path]];
  const limited = (e) => e instanceof ChordError && e.kind === 'LimitExceeded';
  assert.equal(createDecoder().decode(define(MAX_IDS - 1, ['a'])).length, 0);
  assert.throws(() => createDecoder().decode(define(MAX_IDS, ['a'])), limited);
  // The key text is counted in UTF-16 units over every key, indices not counted.
  const half = 'x'.repeat(MAX_ID_PATH_UNITS / 2);
  assert.equal(createDecoder().decode(define(0, [half, 7, half])).length, 0);
  assert.throws(() => createDecoder().decode(define(0, [half, half, 'x'])), limited);
  // A redefinition replaces the path: the table never holds more than MAX_IDS paths.
  const dec = createDecoder();
  dec.decode(define(3, ['a']));
  dec.decode(define(3, ['b']));
  assert.deepEqual(dec.decode([['s', 3, 1]]), [['s', ['b'], 1]]);
});
