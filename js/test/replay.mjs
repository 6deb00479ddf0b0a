// Usage: node js/test/replay.mjs <dir>
//
// Replays every <dir>/*.jsonl file as one stream (a line is one wire batch, as JSON text)
// through the JavaScript replica, with one decoder and `apply` per stream exactly as chord's
// Decoder + apply are used: a decode error poisons the decoder, an apply error leaves the value
// as it was, and replay goes on. Prints one line per batch:
//   {"stream": "<file>", "ok": <value after the batch>}   (no "ok" key: no value yet)
//   {"stream": "<file>", "err": "<chord ErrorKind name>"}
// A Replica follows each stream too, until its first failure, and must agree at every batch.
// Exits 1 if it does not, or if any prototype was polluted. Used by chord/tests/js_replica.rs.
//
// Without an argument (as `node --test js/test/` runs it), it replays a small sample instead.

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { apply, ChordError, createDecoder, Replica } from '../chord-replica.mjs';

/**
 * Replays the streams of `dir`; returns the output lines.
 * @param {string} dir
 * @returns {string[]}
 */
export function replay(dir) {
  const prototypeKeys = () => Object.getOwnPropertyNames(Object.prototype).length;
  const keysBefore = prototypeKeys();
  const printed = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort()) {
    const decoder = createDecoder();
    const replica = new Replica();
    let value;
    let following = true;
    const lines = readFileSync(join(dir, name), 'utf8').split('\n').filter((l) => l !== '');
    lines.forEach((line, i) => {
      let out;
      try {
        value = apply(value, decoder.decodeText(line));
        out = { ok: value };
      } catch (e) {
        if (!(e instanceof ChordError)) throw e;
        out = { err: e.kind };
      }
      if (following) {
        let failure = null;
        try {
          replica.applyWireText(line);
        } catch (e) {
          failure = e;
        }
        if ((failure?.kind ?? null) !== (out.err ?? null)) {
          throw new Error(`${name}:${i + 1}: the Replica says ${failure?.kind ?? 'ok'}, decoder + apply ${out.err ?? 'ok'}`);
        }
        if (failure) following = false;
        else if (JSON.stringify(replica.value) !== JSON.stringify(value)) throw new Error(`${name}:${i + 1}: the Replica differs`);
      }
      printed.push(JSON.stringify({ stream: name, ...out }));
    });
  }
  if (({}).polluted !== undefined || prototypeKeys() !== keysBefore) throw new Error('Object.prototype was polluted');
  return printed;
}

if (process.argv[2]) {
  try {
    for (const line of replay(process.argv[2])) console.log(line);
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
} else {
  const { test } = await import('node:test');
  const assert = (await import('node:assert/strict')).default;
  test('replay.mjs replays a sample directory of streams', () => {
    const dir = mkdtempSync(join(tmpdir(), 'chord-replay-'));
    try {
      writeFileSync(join(dir, 'a.jsonl'), '[["r",{"out":""}],["#",0,["out"]]]\n[["a",0,"x"],["a","y"]]\n');
      writeFileSync(join(dir, 'b.jsonl'), '[]\n[["a",0,"x"]]\n[["r",1]]\n');
      assert.deepEqual(replay(dir), [
        '{"stream":"a.jsonl","ok":{"out":""}}',
        '{"stream":"a.jsonl","ok":{"out":"xy"}}',
        '{"stream":"b.jsonl"}',
        '{"stream":"b.jsonl","err":"UnknownId"}',
        '{"stream":"b.jsonl","err":"DecoderPoisoned"}',
      ]);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
}
