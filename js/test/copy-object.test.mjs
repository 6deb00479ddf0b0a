// The copies a batch makes of the objects on its path: the same own members in the same
// order as a spread makes, whatever the keys (`"__proto__"`, integer-like, many, changing
// from batch to batch at one depth, an enumerable key added to `Object.prototype`), with
// functions made from text and without them; the previous value untouched and every
// sibling kept.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { Replica, apply } from '../chord-replica.mjs';

/** Own keys and values of `o`, in order, with the prototype: what a copy must keep. */
const members = (o) => [Object.getPrototypeOf(o), Reflect.ownKeys(o).map((k) => [k, Object.getOwnPropertyDescriptor(o, k)])];

/** Checks that `after` is `before` with `path`'s last member set to `value`, copied along `path`. */
function checkCopy(before, after, path, value) {
  let b = before;
  let a = after;
  for (let i = 0; i < path.length; i++) {
    assert.notEqual(a, b, `the container at depth ${i} is a new object`);
    assert.equal(Object.getPrototypeOf(a), Array.isArray(b) ? Array.prototype : Object.prototype);
    const keys = Reflect.ownKeys(b);
    assert.deepEqual(Reflect.ownKeys(a), keys, `depth ${i} keeps its keys in their order`);
    for (const k of keys) {
      if (Array.isArray(b) && k === 'length') continue;
      const d = Object.getOwnPropertyDescriptor(a, k);
      assert.equal(d.enumerable && d.writable && d.configurable, true, `depth ${i} member ${String(k)} is a plain data member`);
      if (k === path[i] || (Array.isArray(b) && k === String(path[i]))) continue;
      assert.equal(a[k], b[k], `depth ${i} member ${String(k)} is the very same value`);
    }
    b = b[path[i]];
    a = a[path[i]];
  }
  assert.equal(a, value);
}

const SHAPES = [
  { plain: 1, n: 0, other: 'x' },
  JSON.parse('{"__proto__": {"inner": true}, "n": 1, "other": [1]}'),
  { 10: 'ten', 2: 'two', b: 'b', a: 'a', n: 1 },
  Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`key${i}`, i]).concat([['n', 1]])),
  { 'we"ird\\ key': 1, '\u2028': 2, 'é': 3, n: 1 },
  { a: { nested: true }, n: 1, z: null },
];

test('copies keep every member, in order, the prototype and the siblings, for keys of every kind', () => {
  for (const [k, shape] of SHAPES.entries()) {
    const doc = { top: { mid: [{ leaf: shape }, 'sibling'], side: { kept: true } }, other: [1, 2] };
    // From text, as a stream gives it (a `"__proto__"` key an own member).
    const replica = new Replica();
    replica.applyWireText(JSON.stringify([['r', doc]]));
    const before = replica.value;
    const snapshot = structuredClone(before);
    const snapshotMembers = members(before.top.mid[0].leaf);
    for (let i = 1; i <= 8; i++) {
      const prev = replica.value;
      replica.applyWireText(JSON.stringify([['s', ['top', 'mid', 0, 'leaf', 'n'], i + 1]]));
      checkCopy(prev, replica.value, ['top', 'mid', 0, 'leaf', 'n'], i + 1);
    }
    assert.deepEqual(before, snapshot, `shape ${k}: the first value is as it was`);
    assert.deepEqual(members(before.top.mid[0].leaf), snapshotMembers);
  }
});

test('a "__proto__" member of a copied object stays an own member and never becomes the prototype', () => {
  const target = JSON.parse('{"o": {"__proto__": {"polluted": true}, "n": 1}}');
  for (let i = 0; i < 10; i++) {
    const next = apply(target, [['s', ['o', 'n'], i]]);
    assert.equal(Object.getPrototypeOf(next.o), Object.prototype);
    assert.equal(Object.hasOwn(next.o, '__proto__'), true);
    assert.deepEqual(next.o['__proto__'], { polluted: true });
    assert.equal(next.o.polluted, undefined);
    assert.equal(target.o.n, 1);
  }
});

test('objects of ever-changing keys at one depth are copied right, batch after batch', () => {
  const replica = new Replica();
  replica.applyWireText(JSON.stringify([['r', { list: [] }]]));
  // Forty entries of distinct keys, more than one depth's copiers, each written in turn.
  const entries = Array.from({ length: 40 }, (_, i) => Object.fromEntries(Array.from({ length: (i % 7) + 1 }, (_, j) => [`f${i}_${j}`, j]).concat([['n', 0]])));
  replica.applyWireText(JSON.stringify([['p', ['list'], 0, 0, entries]]));
  for (let round = 1; round <= 3; round++) {
    for (let i = 0; i < entries.length; i++) {
      const prev = replica.value;
      const snapshot = structuredClone(prev);
      replica.applyWireText(JSON.stringify([['s', ['list', i, 'n'], round]]));
      checkCopy(prev, replica.value, ['list', i, 'n'], round);
      assert.deepEqual(prev, snapshot, 'the previous value is as it was');
      assert.deepEqual(Object.keys(replica.value.list[i]), Object.keys(entries[i]));
    }
  }
});

test('an enumerable key added to Object.prototype is not copied into an object', () => {
  const doc = { a: { b: { n: 1, m: 2 } } };
  const replica = new Replica();
  replica.applyWireText(JSON.stringify([['r', doc]]));
  replica.applyWireText(JSON.stringify([['s', ['a', 'b', 'n'], 2]]));
  // eslint-disable-next-line no-extend-native
  Object.prototype.injected = 'inherited';
  try {
    for (let i = 3; i < 8; i++) {
      const prev = replica.value;
      replica.applyWireText(JSON.stringify([['s', ['a', 'b', 'n'], i]]));
      checkCopy(prev, replica.value, ['a', 'b', 'n'], i);
      assert.deepEqual(Object.keys(replica.value.a.b), ['n', 'm']);
    }
  } finally {
    delete Object.prototype.injected;
  }
  replica.applyWireText(JSON.stringify([['s', ['a', 'b', 'm'], 9]]));
  assert.deepEqual(replica.value, { a: { b: { n: 7, m: 9 } } });
});

test('without functions made from text (a Content Security Policy), objects are copied with a spread, the same', () => {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const script = `
    import { Replica } from '../chord-replica.mjs';
    import assert from 'node:assert/strict';
    assert.throws(() => new Function('return 1'));
    const r = new Replica();
    r.applyWireText(JSON.stringify([['r', { a: { b: { n: 1, m: [1] } }, side: { k: 1 } }]]));
    const before = r.value;
    for (let i = 2; i < 6; i++) r.applyWireText(JSON.stringify([['s', ['a', 'b', 'n'], i]]));
    assert.deepEqual(before, { a: { b: { n: 1, m: [1] } }, side: { k: 1 } });
    assert.deepEqual(r.value, { a: { b: { n: 5, m: [1] } }, side: { k: 1 } });
    assert.equal(r.value.side, before.side);
    assert.equal(r.value.a.b.m, before.a.b.m);
    console.log('ok');
  `;
  const out = execFileSync(process.execPath, ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script], { cwd: here, encoding: 'utf8' });
  assert.equal(out.trim(), 'ok');
});

test('objects whose keys would join alike are each copied with their own keys', () => {
  // Pairs of key lists that a separator-joined name confuses: no keys and one empty key; a
  // NUL inside a key and between keys.
  const pairs = [
    [{}, { '': 20 }],
    [{ 'a\0': 1, b: 2 }, { a: 3, '\0b': 4 }],
    [{ 'a\0b': 5 }, { a: 6, b: 7 }],
  ];
  for (const [first, second] of pairs) {
    for (const [one, other] of [[first, second], [second, first]]) {
      const r = new Replica();
      r.applyWire([['r', { x: { one, other } }]]);
      r.applyWire([['s', ['x', 'one', 'new'], 1]]);
      r.applyWire([['s', ['x', 'other', 'new'], 2]]);
      assert.deepEqual(r.value, { x: { one: { ...one, new: 1 }, other: { ...other, new: 2 } } });
    }
  }
});
