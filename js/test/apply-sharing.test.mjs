// The replica's apply from text, at depth: each verb 12 segments down keeps every sibling at
// every level the same object, gives each container on the path a new one, and leaves the
// previous value as it was; and a string appended to batch after batch holds about its own
// bytes of heap, not a chain of pieces.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { Replica } from '../chord-replica.mjs';

const DEPTH = 12;
const path = Array.from({ length: DEPTH }, (_, i) => `k${i}`);

/** A document with `leaf` at `path`, and a sibling object and array at every level. */
function deepDoc(leaf) {
  let node = leaf;
  for (let i = DEPTH - 1; i >= 0; i--) {
    node = { [path[i]]: node, [`side${i}`]: { level: i }, [`list${i}`]: [i, { at: i }] };
  }
  return node;
}

/** The value at `p` in `v`. */
const at = (v, p) => p.reduce((o, s) => o[s], v);

// Each verb's op at the leaf's container or the leaf, and what the leaf's container becomes
// (worked out by hand from the verb's meaning, not by the code under test).
const CASES = [
  ['s', { text: 'abc', n: 1 }, ['s', [...path, 'n'], 2], { text: 'abc', n: 2 }],
  ['d', { text: 'abc', n: 1 }, ['d', [...path, 'n']], { text: 'abc' }],
  ['a', { text: 'abc', n: 1 }, ['a', [...path, 'text'], 'dé'], { text: 'abcdé', n: 1 }],
  // `t` cuts units from the start (a window rolling forward).
  ['t', { text: 'abcdef', n: 1 }, ['t', [...path, 'text'], 2], { text: 'cdef', n: 1 }],
  ['p', { items: [1, 2, 3], n: 1 }, ['p', [...path, 'items'], 1, 1, ['x', 'y']], { items: [1, 'x', 'y', 3], n: 1 }],
];

for (const [verb, leaf, op, expected] of CASES) {
  test(`${verb} ${DEPTH} levels down from text: new containers on the path, every sibling kept, the previous value untouched`, () => {
    const replica = new Replica();
    replica.applyWireText(JSON.stringify([['r', deepDoc(leaf)]]));
    const before = replica.value;
    const snapshot = structuredClone(before);
    replica.applyWireText(JSON.stringify([op]));
    const after = replica.value;
    assert.deepEqual(before, snapshot, 'the previous value is as it was');
    assert.deepEqual(at(after, path), expected);
    let a = after;
    let b = before;
    for (let i = 0; i < DEPTH; i++) {
      assert.notEqual(a, b, `level ${i} is a new container`);
      assert.equal(a[`side${i}`], b[`side${i}`], `level ${i}'s sibling object is kept`);
      assert.equal(a[`list${i}`], b[`list${i}`], `level ${i}'s sibling array is kept`);
      a = a[path[i]];
      b = b[path[i]];
    }
    assert.notEqual(a, b, 'the changed container is new');
    // Applying it again to the old value's twin gives the same result: nothing leaked.
    const twin = new Replica();
    twin.applyWireText(JSON.stringify([['r', snapshot]]));
    twin.applyWireText(JSON.stringify([op]));
    assert.deepEqual(twin.value, after);
  });
}

test('a string appended to by 200,000 batches holds about its bytes of heap', () => {
  // tools/apply-cost.mjs's heap mode, in a node of its own (it collects garbage before it
  // measures): 4 bytes a batch, one string.
  const tool = fileURLToPath(new URL('../tools/apply-cost.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [tool, 'heap', '200000'], { encoding: 'utf8' });
  const { textBytes, heldBytes } = JSON.parse(out.trim().split('\n').pop());
  assert.equal(textBytes, 800_000);
  // A chain of 200,000 pieces holds about 7.7x its bytes; a flat string about 1.3x.
  assert.ok(heldBytes <= 3 * textBytes, `held ${heldBytes} bytes for ${textBytes} bytes of text`);
});
