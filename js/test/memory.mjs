// Usage: node --expose-gc js/test/memory.mjs [ops]
//
// Measures the heap a Replica holds while it decodes and applies one wire batch of `ops` ops
// (default 1,000,000) of each verb, in full and short forms: the live heap (after a full
// garbage collection) once parsed, once decoded, and at the peak inside `apply` (the parsed
// batch, the decoded ops, the value and the batch's undo log all held), over the batch's
// bytes of text. Prints one line per workload and the table
// js/README.md records.
//
// Without an argument (as `node --test js/test/` runs it), it asserts the ratios of a smaller
// run instead, with a margin: the heap, never the time.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { apply, createDecoder } from '../chord-replica.mjs';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const live = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

/** The workloads: a base batch's first op, then `n` ops made by `op(i)`. */
export const WORKLOADS = {
  'r': ['["r",{"a":0}]', (i) => `["r",{"a":${i}}]`],
  's': ['["r",{"a":0}]', (i) => `["s",["a"],${i}]`],
  's short': ['["r",{"a":0}],["s",["a"],0]', (i) => `["s",${i}]`],
  'd': ['["r",{"a":0}]', () => '["d",["a"]]'],
  'd short': ['["r",{"a":0}],["d",["a"]]', () => '["d"]'],
  'a': ['["r",{"t":""}]', () => '["a",["t"],"x"]'],
  'a short': ['["r",{"t":""}],["a",["t"],""]', () => '["a","x"]'],
  't': ['["r",{"t":"x"}]', () => '["t",["t"],0]'],
  'p': ['["r",{"xs":[]}]', (i) => `["p",["xs"],${i},0,[${i}]]`],
  'p short': ['["r",{"xs":[]}],["p",["xs"],0,0,[]]', (i) => `["p",${i},0,[${i}]]`],
};

/**
 * The live heap, in bytes, at each stage of decoding and applying one batch of `n` ops of a
 * workload, over the batch's text length (ASCII: one byte a character).
 * @param {string} name a key of WORKLOADS
 * @param {number} n ops
 * @returns {{ bytes: number, parsed: number, decoded: number, applied: number }} heap over bytes
 */
export function measure(name, n) {
  const [first, op] = WORKLOADS[name];
  const parts = [first];
  for (let i = 1; i <= n; i++) parts.push(op(i));
  let text = `[${parts.join(',')}]`;
  parts.length = 0;
  const bytes = text.length;
  text.charCodeAt(0); // made flat before the baseline: JSON.parse would copy it otherwise
  const before = live();
  let batch = JSON.parse(text);
  const parsed = live() - before;
  const length = batch.length;
  batch = null;
  // As a Replica decodes an event's text: parsed, then decoded in place.
  let ops = createDecoder().decodeText(text);
  const decoded = live() - before;
  // The peak is inside `apply`, with the batch's undo log: one more op, whose path measures
  // the heap whenever `apply` reads its length (when it checks the op and when it walks it,
  // after every other op has applied), and then fails.
  let applied = 0;
  const probe = new Proxy(['no such', 'member'], {
    get(target, key, receiver) {
      if (key === 'length') applied = Math.max(applied, live() - before);
      return Reflect.get(target, key, receiver);
    },
  });
  ops.push(['s', probe, 0]);
  try {
    apply(undefined, ops);
    throw new Error(`${name}: the probe applied`);
  } catch (e) {
    if (e.kind !== 'Missing' || e.opIndex !== ops.length - 1) throw e;
  }
  // Held to here, so that the figures above are of live memory.
  if (length !== n + first.split('],[').length || ops.length !== length + 1) {
    throw new Error(`${name}: unexpected batch`);
  }
  text = ops = null;
  return { bytes, parsed: parsed / bytes, decoded: decoded / bytes, applied: applied / bytes };
}

if (process.argv[2] !== undefined) {
  const n = Number(process.argv[2]);
  console.log(`| workload (${n.toLocaleString('en')} ops) | text | JSON.parse | + decode | + apply (peak) |`);
  console.log('|---|---:|---:|---:|---:|');
  for (const name of Object.keys(WORKLOADS)) {
    const m = measure(name, n);
    const x = (r) => `${r.toFixed(1)}x`;
    console.log(`| \`${name}\` | ${(m.bytes / 2 ** 20).toFixed(1)} MiB | ${x(m.parsed)} | ${x(m.decoded)} | ${x(m.applied)} |`);
  }
} else {
  const { test } = await import('node:test');
  const assert = (await import('node:assert/strict')).default;
  test('decoding adds little to JSON.parse\'s tree, and applying holds a bounded multiple of the text', () => {
    for (const name of Object.keys(WORKLOADS)) {
      const m = measure(name, 100_000);
      const figures = `${name}: ${JSON.stringify(m)}`;
      // Decoded in place: the ops are the parsed tuples (a short form's op replaces its tuple).
      assert.ok(m.decoded <= 1.25 * m.parsed, figures);
      // The value and a flat undo log of a few words an op, on top of the parse tree.
      assert.ok(m.applied <= 2.2 * m.parsed, figures);
      assert.ok(m.applied <= 16, figures);
    }
  });
}
