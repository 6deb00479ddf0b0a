// Replays every case of the shared conformance vectors (generated from the TypeScript
// reference implementation; format in ../../testdata/conformance/README.md) against the
// JavaScript replica, the way chord/tests/conformance.rs replays them against chord.
//
// Producer-side commands (encode, overlap, diff) are skipped and counted. Where chord
// deliberately differs from the reference, the replica differs the same way: the case is in
// DEVIATIONS, and chord's behaviour is checked instead.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { apply, checkOp, checkWireOp, ChordError, createDecoder, isBase, validOp, validWireOp } from '../chord-replica.mjs';

const vectorsFile = fileURLToPath(new URL('../../testdata/conformance/vectors.jsonl', import.meta.url));

const cases = readFileSync(vectorsFile, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line));

/** chord's deviations from the reference (chord/tests/conformance.rs), which the replica shares. */
const DEVIATIONS = new Map([
  [
    't counts UTF-16 code units',
    "The reference's `t` cuts a surrogate pair in half and leaves a lone surrogate, which no Rust " +
      'String or strict JSON parser can hold. chord refuses a cut inside a pair (SplitsCharacter), ' +
      'so the replica does too: a chord replica and a JavaScript replica must hold the same text.',
  ],
  [
    'encode: does not validate ops',
    'The reference encodes ["s", [], 1] without validating; in chord a root set cannot be ' +
      'constructed. Encoding is producer-side and skipped here; the replica refuses the op as ' +
      'chord does when it is parsed (EmptyPath).',
  ],
]);

const EXPECTED_RUN = { apply: 97, applyImmutable: 1, decode: 22, isBase: 15, validOp: 51, validWireOp: 55 };
const EXPECTED_SKIPPED = { encode: 15, overlap: 12, diff: 8 };

const ran = {};
const skipped = {};
const bump = (counts, cmd) => (counts[cmd] = (counts[cmd] ?? 0) + 1);

/** The value and key order of a document, for "left exactly as it was" checks. */
const snapshot = (v) => (v === undefined ? 'undefined' : JSON.stringify(v));

/** Runs a command; `{ok}` or `{err}` as the vectors put it. */
function run(c) {
  const attempt = (f) => {
    try {
      return { ok: f() };
    } catch (e) {
      assert.ok(e instanceof ChordError, `a ChordError, not ${e}`);
      assert.equal(typeof e.kind, 'string');
      return { err: e };
    }
  };
  switch (c.cmd) {
    case 'apply':
    case 'applyImmutable': {
      const target = c.targetIsNull ? null : (c.target ?? undefined);
      const before = snapshot(target);
      const opsBefore = JSON.stringify(c.ops);
      const out = attempt(() => apply(target, c.ops));
      // The ops are never modified (applyImmutable's point), whatever happened.
      assert.equal(JSON.stringify(c.ops), opsBefore, 'apply modified its ops');
      if (out.err) assert.equal(snapshot(target), before, 'a failed batch must leave the target unchanged');
      if (c.cmd === 'applyImmutable') assert.equal(snapshot(target), before, 'applyImmutable modified its input');
      if (out.ok === undefined && !out.err) out.ok = null;
      return out;
    }
    case 'validOp': {
      const out = attempt(() => (checkOp(c.op), true));
      assert.equal(validOp(c.op), !out.err);
      return out;
    }
    case 'validWireOp': {
      const out = attempt(() => (checkWireOp(c.op), true));
      assert.equal(validWireOp(c.op), !out.err);
      return out;
    }
    case 'decode': {
      // Through text, as a replica does, and from parsed batches: the same outcome.
      const text = createDecoder();
      const parsed = createDecoder();
      const out = attempt(() => c.batches.map((b) => text.decodeText(JSON.stringify(b))));
      const again = attempt(() => c.batches.map((b) => parsed.decode(b)));
      assert.deepEqual(again.ok, out.ok);
      assert.equal(again.err?.kind, out.err?.kind);
      if (out.err) assert.ok(text.poisoned && parsed.poisoned, 'a failed decoder is poisoned');
      return out;
    }
    case 'isBase':
      return { ok: isBase(c.ops) };
    default:
      throw new Error(`unexpected command ${c.cmd}`);
  }
}

function checkDeviation(c, got) {
  switch (c.name) {
    case 't counts UTF-16 code units': {
      // The reference leaves "\udc00b"; chord and the replica refuse to split the pair.
      assert.deepEqual(c.expect, { ok: { s: '\udc00b' } }, 'the vector changed: review the deviation');
      assert.equal(got.err?.kind, 'SplitsCharacter');
      assert.equal(got.err.count, 1);
      assert.equal(got.err.opIndex, 0);
      assert.deepEqual(got.err.path, ['s']);
      assert.deepEqual(apply({ s: '\u{10000}b' }, [['t', ['s'], 2]]), { s: 'b' });
      assert.deepEqual(apply({ s: '\u{10000}b' }, [['t', ['s'], 3]]), { s: '' });
      return;
    }
    case 'encode: does not validate ops': {
      const ops = c.batches.flat();
      assert.ok(ops.some((op) => !validOp(op)));
      assert.throws(() => ops.forEach(checkOp), (e) => e.kind === 'EmptyPath' && /non-empty path/.test(e.message));
      return;
    }
    default:
      assert.fail(`deviation ${c.name} has no check`);
  }
}

for (const c of cases) {
  if (c.cmd in EXPECTED_SKIPPED) {
    bump(skipped, c.cmd);
    if (DEVIATIONS.has(c.name)) test(`deviation (producer side): ${c.name}`, () => checkDeviation(c));
    continue;
  }
  test(`${c.cmd}: ${c.name}`, () => {
    bump(ran, c.cmd);
    const got = run(c);
    if (DEVIATIONS.has(c.name)) return checkDeviation(c, got);
    if ('ok' in c.expect) {
      assert.equal(got.err, undefined, `expected ${JSON.stringify(c.expect.ok)}, got error ${got.err?.message}`);
      assert.deepEqual(got.ok, c.expect.ok);
    } else {
      assert.ok(got.err, `expected an error, got ${JSON.stringify(got.ok)}`);
    }
  });
}

test('every case of the replayed commands ran, and the producer-side ones were skipped', () => {
  assert.deepEqual(ran, EXPECTED_RUN);
  assert.deepEqual(skipped, EXPECTED_SKIPPED);
  assert.equal(cases.length, 276);
  for (const name of DEVIATIONS.keys()) assert.ok(cases.some((c) => c.name === name), `deviation ${name} is a case`);
});
