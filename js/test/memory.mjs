// Usage: node --expose-gc js/test/memory.mjs [ops]
//
// Measures the heap a Replica holds while `applyWireText` decodes and applies one wire batch
// of `ops` ops (default 1,000,000) of each verb, in full and short forms, over the batch's
// bytes of text: the peak of the live heap (after a full garbage collection) sampled while
// the batch streams, and, for comparison, the tree `JSON.parse` makes of the whole text
// (which the replica no longer builds). Then the same batch as `follow` receives it (one SSE
// event from a fake `fetch`) with an `onEvent` that does not read the ops, as the React
// store's: over the event's data. Prints one line per workload and the table js/README.md
// records.
//
// The samples: the replica parses each op's text with the global `JSON.parse`, which this
// script wraps to take a sample every `ops / 64` calls (every op's parse is a point where
// the text, the decoder, the value so far and the op in hand are all live), and once more
// after the batch applied with the value held.
//
// Without an argument (as `node --test js/test/` runs it), it asserts the ratios of a smaller
// run instead: the heap, never the time.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { follow, Replica } from '../chord-replica.mjs';

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

/** What each workload's value must be after its batch: the run is checked, not only measured. */
const EXPECTED = {
  'r': (n) => ({ a: n }),
  's': (n) => ({ a: n }),
  's short': (n) => ({ a: n }),
  'd': () => ({}),
  'd short': () => ({}),
  'a': (n) => ({ t: 'x'.repeat(n) }),
  'a short': (n) => ({ t: 'x'.repeat(n) }),
  't': () => ({ t: 'x' }),
  'p': (n) => ({ xs: Array.from({ length: n }, (_, i) => i + 1) }),
  'p short': (n) => ({ xs: Array.from({ length: n }, (_, i) => i + 1) }),
};

/**
 * The live heap, in bytes, over the batch's text length (ASCII: one byte a character):
 * `parsed`, the tree `JSON.parse` makes of the whole text; `peak`, the most the replica
 * held while `applyWireText` streamed the batch (the value included), over `samples`.
 * @param {string} name a key of WORKLOADS
 * @param {number} n ops
 * @param {boolean} [keepOps] with an `onChange`, for which the replica keeps the decoded ops
 * @returns {{ bytes: number, parsed: number, peak: number, samples: number }}
 */
export function measure(name, n, keepOps = false) {
  const [first, op] = WORKLOADS[name];
  const parts = [first];
  for (let i = 1; i <= n; i++) parts.push(op(i));
  let text = `[${parts.join(',')}]`;
  parts.length = 0;
  const bytes = text.length;
  text.charCodeAt(0); // made flat before the baseline: JSON.parse would copy it otherwise
  const before = live();
  let tree = JSON.parse(text);
  const parsed = live() - before;
  // Read after the sample, so that an optimized frame keeps the tree alive through it.
  const length = tree.length;
  tree = null;

  const parse = JSON.parse;
  const every = Math.max(1, Math.floor(n / 64));
  let calls = 0;
  let samples = 0;
  let peak = 0;
  const sample = () => {
    samples += 1;
    peak = Math.max(peak, live() - before);
  };
  JSON.parse = function sampled(...args) {
    if (++calls % every === 0) sample();
    return parse.apply(this, args);
  };
  const replica = new Replica(keepOps ? { onChange: (value, ops) => void [value, ops] } : {});
  try {
    replica.applyWireText(text);
  } finally {
    JSON.parse = parse;
  }
  sample();
  // Held to here, so that the figures above are of live memory; checked, so that a run that
  // applied something else cannot pass for one that held little.
  const expected = JSON.stringify(EXPECTED[name](n));
  if (JSON.stringify(replica.value) !== expected || calls < n || length !== n + first.split('],[').length) throw new Error(`${name}: unexpected value or parse count`);
  text = null;
  return { bytes, parsed: parsed / bytes, peak: peak / bytes, samples };
}

/**
 * The live heap, in bytes, over the event's data, while `follow` (the default transport, from
 * a fake `fetch` serving the SSE body) applies one event holding the workload's batch, with
 * an `onEvent` that reads each event's `type` and `value` but not its `batch` (the decoded
 * ops), as the React store's does. The batch's text and the SSE body's bytes, which the test
 * holds throughout, are not counted; the event's text the parser decodes from them is.
 * Sampled as `measure` does, at every `n / 64`-th `JSON.parse`, at the batch's event and
 * after the event applied. Checks that the event's `batch`, read after the measurement, holds
 * the batch's ops.
 * @param {string} name a key of WORKLOADS
 * @param {number} n ops
 * @returns {Promise<{ bytes: number, peak: number, samples: number }>}
 */
export async function measureFollow(name, n) {
  const [first, op] = WORKLOADS[name];
  const parts = [first];
  for (let i = 1; i <= n; i++) parts.push(op(i));
  const batch = `[${parts.join(',')}]`;
  parts.length = 0;
  const bytes = batch.length + 2; // the event's data is `[batch]`
  const body = new TextEncoder().encode(
    `event: data\ndata: [${batch}]\n\nevent: control\ndata: {"streamNextOffset":"0000000000000001"}\n\n`,
  );
  let applied = false;
  const fetch = async (url, init = {}) => {
    // The catch-up read a follower joins with: nothing yet, so the SSE body brings the base.
    if (!String(url).includes('live=')) {
      return new Response('[]', { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000000' } });
    }
    // The event once; a reconnect after it (the body ended) gets an empty stream.
    return new Response(applied ? '' : body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
  // What an earlier run left to the event loop (a response's stream, a follower's last
  // promises) is let go first, so that the baseline holds none of it.
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  const before = live();
  let peak = 0;
  let samples = 0;
  const sample = () => {
    samples += 1;
    peak = Math.max(peak, live() - before);
  };
  const parse = JSON.parse;
  const every = Math.max(1, Math.floor(n / 64));
  let calls = 0;
  JSON.parse = function sampled(...args) {
    if (++calls % every === 0) sample();
    return parse.apply(this, args);
  };
  let last = null;
  let follower;
  try {
    follower = follow('http://127.0.0.1:1/streams/memory', {
      fetch,
      backoffMin: 60_000,
      onEvent: (event) => {
        if (event.type !== 'batch') return;
        applied = true;
        last = event;
        void event.value;
        sample();
      },
    });
    while (follower.offset === null) await new Promise((resolve) => setTimeout(resolve, 1));
  } finally {
    JSON.parse = parse;
  }
  sample();
  follower.stop();
  await follower.done;
  const expected = JSON.stringify(EXPECTED[name](n));
  if (JSON.stringify(follower.replica.value) !== expected || calls < n) throw new Error(`${name}: unexpected value or parse count`);
  // The ops, decoded when asked for: one an op, `#` definitions aside.
  const ops = last.batch;
  if (ops.length !== n + first.split('],[').length || ops !== last.batch) throw new Error(`${name}: the event's batch holds ${ops.length} ops`);
  // The event holds its ops now; the follower's last promises may hold the event a while.
  last = null;
  // Held to here, so that the baseline's strings are live throughout.
  if (body.length === 0 || batch.length === 0) throw new Error('held');
  return { bytes, peak: peak / bytes, samples };
}

if (process.argv[2] !== undefined) {
  const n = Number(process.argv[2]);
  console.log(`| workload (${n.toLocaleString('en')} ops) | text | JSON.parse of the whole text | \`applyWireText\` peak | peak with \`onChange\` (ops kept) | \`follow\` with an \`onEvent\` |`);
  console.log('|---|---:|---:|---:|---:|---:|');
  await measureFollow('r', 1000); // the first `fetch` loads its modules: not the follower's heap
  for (const name of Object.keys(WORKLOADS)) {
    const m = measure(name, n);
    const kept = measure(name, n, true);
    const followed = await measureFollow(name, n);
    const x = (r) => `${r.toFixed(2)}x`;
    console.log(`| \`${name}\` | ${(m.bytes / 2 ** 20).toFixed(1)} MiB | ${x(m.parsed)} | ${x(m.peak)} | ${x(kept.peak)} | ${x(followed.peak)} |`);
  }
} else {
  const { test } = await import('node:test');
  const assert = (await import('node:assert/strict')).default;
  test('applyWireText streams a batch: its peak live heap is at most 4x the text, for every verb', () => {
    const figures = [];
    for (const name of Object.keys(WORKLOADS)) {
      const m = measure(name, 100_000);
      figures.push(`${name}: peak ${m.peak.toFixed(2)}x (JSON.parse's tree ${m.parsed.toFixed(2)}x, ${m.samples} samples)`);
      assert.ok(m.samples >= 64, figures.at(-1));
      assert.ok(m.peak <= 4, figures.at(-1));
    }
    console.log(figures.join('\n'));
  });
  test('follow with an onEvent that does not read the ops: its peak live heap is at most 4x the event, for every verb', async () => {
    // An `onEvent` (the React store always passes one) must not make the follower keep every
    // batch's decoded ops (7x to 13x the event): they are decoded only if `batch` is read.
    const figures = [];
    await measureFollow('r', 1000); // the first `fetch` loads its modules: not the follower's heap
    for (const name of Object.keys(WORKLOADS)) {
      const m = await measureFollow(name, 100_000);
      figures.push(`${name}: follow with onEvent, peak ${m.peak.toFixed(2)}x (${m.samples} samples)`);
      assert.ok(m.samples >= 64, figures.at(-1));
      assert.ok(m.peak <= 4, figures.at(-1));
    }
    console.log(figures.join('\n'));
  });
}
