// Unit tests of the JavaScript replica: atomicity (every kind of undo), prototype-pollution
// attempts, limits, decoder poisoning, the Replica helper, and error reporting.
// chord/tests/js_replica.rs cross-checks the module against chord itself.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  apply,
  ChordError,
  createDecoder,
  DEFAULT_LIMITS,
  formatPath,
  isBase,
  Replica,
  validOp,
  validWireOp,
} from '../chord-replica.mjs';
import { keepEqualParts } from '../src/replica.mjs';

const kindOf = (f) => {
  try {
    f();
  } catch (e) {
    return e.kind ?? e.name;
  }
  return 'ok';
};

/** Applies a batch that must fail at `opIndex` and checks the document is exactly as before. */
function assertRolledBack(doc, ops, { kind, opIndex }) {
  const text = JSON.stringify(doc);
  const keys = JSON.stringify(doc, (k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : v));
  assert.throws(() => apply(doc, ops), (e) => e instanceof ChordError && e.kind === kind && e.opIndex === opIndex);
  assert.equal(JSON.stringify(doc), text, 'value restored');
  assert.equal(
    JSON.stringify(doc, (k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : v)),
    keys,
    'key order restored',
  );
}

const FAIL = ['s', ['missing', 'x'], 1]; // Missing, always

test('atomicity: every kind of undo is rolled back, in reverse order', async (t) => {
  const doc = () => ({ a: 1, b: { c: 'xy😀z', list: [1, 2, 3] }, k: 'v', z: [] });
  const cases = {
    'set an existing member': [['s', ['a'], 2]],
    'add a member': [['s', ['new'], { deep: [1] }]],
    'set an existing element': [['s', ['b', 'list', 0], 'x']],
    'push one past the end': [['s', ['b', 'list', 3], 4], ['s', ['z', 0], 0]],
    'delete a member (order restored)': [['d', ['a']], ['d', ['b']]],
    'delete a missing member': [['d', ['nope']]],
    'delete an element': [['d', ['b', 'list', 1]]],
    append: [['a', ['b', 'c'], '!!'], ['a', ['k'], '']],
    truncate: [['t', ['b', 'c'], 2], ['t', ['k'], 10]],
    'splice insert, remove and replace': [
      ['p', ['b', 'list'], 1, 0, [9, 9]],
      ['p', ['b', 'list'], 0, 2, []],
      ['p', ['b', 'list'], 1, 1000, ['q']],
    ],
    'replace the root, then change the new value': [['s', ['a'], 5], ['r', { a: 1 }], ['s', ['a'], 3]],
    'two writes to one address': [['a', ['k'], '1'], ['a', ['k'], '2'], ['t', ['k'], 1], ['s', ['k'], 'w']],
  };
  for (const [name, ops] of Object.entries(cases)) {
    await t.test(name, () => {
      const d = doc();
      const inner = d.b;
      assertRolledBack(d, [...ops, FAIL], { kind: 'Missing', opIndex: ops.length });
      assert.equal(d.b, inner, 'containers keep their identity');
      assert.deepEqual(d, doc());
      // And without the failing op, the batch applies.
      assert.doesNotThrow(() => apply(doc(), ops));
    });
  }
  await t.test('everything at once', () => {
    const d = doc();
    const ops = Object.entries(cases)
      .filter(([name]) => !name.startsWith('delete a member'))
      .flatMap(([, group]) => group)
      .filter((op) => op[0] !== 'r');
    ops.push(['d', ['a']], ['d', ['k']]);
    assertRolledBack(d, [...ops, FAIL], { kind: 'Missing', opIndex: ops.length });
    assert.deepEqual(d, doc());
  });
});

test('atomicity: any exception rolls back, not only a ChordError', () => {
  const inner = {
    get boom() {
      throw new TypeError('a getter threw');
    },
  };
  const doc = { a: 1, inner };
  assert.throws(() => apply(doc, [['s', ['a'], 2], ['s', ['inner', 'boom', 'x'], 2]]), TypeError);
  assert.equal(doc.a, 1);
  assert.equal(doc.inner, inner);
});

test('a frozen value applies: the batch writes into copies, never into the target', () => {
  const frozen = Object.freeze({ x: 1, keep: Object.freeze([1]) });
  const doc = Object.freeze({ a: 1, frozen });
  const out = apply(doc, [['s', ['a'], 2], ['s', ['frozen', 'x'], 2]]);
  assert.deepEqual(out, { a: 2, frozen: { x: 2, keep: [1] } });
  assert.equal(out.frozen.keep, frozen.keep);
  assert.deepEqual(doc, { a: 1, frozen: { x: 1, keep: [1] } });
});

test('atomicity: an invalid op anywhere refuses the batch before anything changes', () => {
  const doc = { a: 1 };
  assert.throws(
    () => apply(doc, [['s', ['a'], 2], ['zz', ['a']]]),
    (e) => e.kind === 'UnknownVerb' && e.opIndex === 1 && e.message === 'op 1: unknown verb "zz" (expected one of r, s, d, a, t, p)',
  );
  assert.deepEqual(doc, { a: 1 });
});

test('apply never retains or modifies its ops', () => {
  const value = { nested: { value: 1 }, xs: [] };
  const ops = [['r', value], ['s', ['nested', 'value'], 2], ['p', ['xs'], 0, 0, [{ q: 1 }]]];
  const before = JSON.stringify(ops);
  const doc = apply(undefined, ops);
  doc.xs[0].q = 99;
  assert.equal(JSON.stringify(ops), before);
  assert.deepEqual(doc, { nested: { value: 2 }, xs: [{ q: 99 }] });
});

test('index rules', () => {
  assert.deepEqual(apply({ xs: [1] }, [['s', ['xs', 1], 2]]), { xs: [1, 2] });
  assert.equal(kindOf(() => apply({ xs: [1] }, [['s', ['xs', 2], 2]])), 'IndexOutOfRange');
  assert.equal(kindOf(() => apply({ xs: [] }, [['s', ['xs', 2 ** 53 - 1], 2]])), 'IndexOutOfRange');
  assert.equal(kindOf(() => apply({ xs: [1] }, [['s', ['xs', '0'], 2]])), 'KeyOnArray');
  assert.equal(kindOf(() => apply({ xs: [[1]] }, [['a', ['xs', 'length'], 'x']])), 'KeyOnArray');
  assert.deepEqual(apply({ o: {} }, [['s', ['o', 7], 1]]), { o: { 7: 1 } });
  assert.deepEqual(apply({ o: { 7: 'a' } }, [['a', ['o', 7], 'b']]), { o: { 7: 'ab' } });
  assert.deepEqual(apply({ a: 1 }, [['d', ['zz']]]), { a: 1 });
  assert.equal(kindOf(() => apply({ xs: [1] }, [['d', ['xs', 1]]])), 'IndexOutOfRange');
  assert.deepEqual(apply([1, 2, 3], [['p', [], 1, 2 ** 53 - 1, []]]), [1]);
  assert.deepEqual(apply([1], [['p', [], 99, 0, [2]]]), [1, 2]);
  assert.equal(kindOf(() => apply({ s: 'x' }, [['s', ['s', 0], 1]])), 'NotAContainer');
  assert.equal(kindOf(() => apply({ s: 1 }, [['a', ['s'], 'x']])), 'NotAString');
  assert.equal(kindOf(() => apply({ s: {} }, [['p', ['s'], 0, 0, []]])), 'NotAnArray');
  assert.equal(kindOf(() => apply(undefined, [['s', ['a'], 1]])), 'NoValue');
  assert.equal(apply(null, [['r', 5]]), 5);
  assert.equal(kindOf(() => apply(null, [['s', ['a'], 1]])), 'NotAContainer');
  assert.equal(apply(undefined, []), undefined);
});

test('t counts UTF-16 code units and never splits a surrogate pair', () => {
  assert.deepEqual(apply({ s: 'é😀b' }, [['t', ['s'], 1]]), { s: '😀b' });
  assert.deepEqual(apply({ s: 'é😀b' }, [['t', ['s'], 3]]), { s: 'b' });
  assert.equal(kindOf(() => apply({ s: 'é😀b' }, [['t', ['s'], 2]])), 'SplitsCharacter');
  assert.deepEqual(apply({ s: '😀' }, [['t', ['s'], 2]]), { s: '' });
});

test('integers are non-negative safe integers, -0 included as chord refuses it', () => {
  for (const n of [-1, 1.5, -0, 2 ** 53, Infinity, NaN, '1', null]) {
    assert.equal(validOp(['t', ['a'], n]), false, `count ${n}`);
    assert.equal(validOp(['s', ['a', n], 1]), typeof n === 'string', `segment ${n}`);
    assert.equal(validWireOp(['s', n, 1]), false, `id ${n}`);
  }
  assert.equal(validOp(['t', ['a'], 2 ** 53 - 1]), true);
  assert.equal(validWireOp(['#', 2 ** 53 - 1, ['a']]), true);
});

test('reserved segments are refused in every path, including through interned ids', () => {
  for (const seg of ['__proto__', 'constructor', 'prototype']) {
    for (const op of [['s', [seg], 1], ['s', ['a', seg, 'x'], 1], ['d', [seg]], ['a', [seg], 'x'], ['t', [seg], 1], ['p', [seg], 0, 0, []]]) {
      assert.equal(kindOf(() => apply({ a: {} }, [op])), 'ReservedSegment', JSON.stringify(op));
      assert.equal(validWireOp(op), false);
    }
    assert.equal(kindOf(() => createDecoder().decode([['#', 0, ['a', seg]], ['s', 0, 1]])), 'ReservedSegment');
  }
  // A verb spelled like an inherited property is just an unknown verb.
  for (const verb of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
    assert.equal(kindOf(() => apply({}, [[verb, ['a'], 1]])), 'UnknownVerb');
    assert.equal(kindOf(() => createDecoder().decode([[verb, ['a'], 1]])), 'UnknownVerb');
  }
});

test('prototype pollution attempts leave every prototype alone', () => {
  const attempts = [
    [['s', ['__proto__', 'polluted'], true]],
    [['s', ['constructor', 'prototype', 'polluted'], true]],
    [['p', ['constructor', 'prototype'], 0, 0, [1]]],
    [['a', ['__proto__', 'toString'], 'x']],
    [['s', ['toString', 'polluted'], true]], // inherited, not own: Missing
    [['s', ['hasOwnProperty', 'call'], 1]],
    [['a', ['toString'], 'x']],
  ];
  for (const ops of attempts) {
    assert.throws(() => apply({}, ops), ChordError);
    assert.throws(() => apply([], ops), ChordError);
  }
  // Through interned ids and short forms on the wire.
  const dec = createDecoder();
  dec.decode([['r', {}], ['#', 0, ['a']]]);
  assert.throws(() => dec.decode([['#', 1, ['constructor', 'prototype']], ['s', 1, { polluted: true }]]));
  assert.throws(() => createDecoder().decode([['#', 0, ['__proto__']], ['s', 0, { polluted: true }]]));
  // Own keys named after inherited members are ordinary members.
  const doc = apply({}, [['s', ['toString'], 'x'], ['a', ['toString'], 'y'], ['d', ['valueOf']]]);
  assert.deepEqual(Object.keys(doc), ['toString']);
  assert.equal(doc.toString, 'xy');
  assert.equal(({}).polluted, undefined);
  assert.equal(Object.prototype.polluted, undefined);
  assert.equal(Array.prototype.polluted, undefined);
  assert.equal(typeof ({}).toString, 'function');
});

test('"__proto__" keys inside values replicate as own properties', () => {
  const wire = '[["r",{"v":{"__proto__":{"polluted":true}},"xs":[]}],' +
    '["s",["w"],{"__proto__":{"polluted":1}}],["p",["xs"],0,0,[{"__proto__":[1]}]]]';
  const doc = apply(undefined, createDecoder().decodeText(wire));
  for (const o of [doc.v, doc.w, doc.xs[0]]) {
    assert.ok(Object.hasOwn(o, '__proto__'));
    assert.equal(Object.getPrototypeOf(o), Object.prototype);
    assert.equal(o.polluted, undefined);
  }
  assert.equal(JSON.stringify(doc), '{"v":{"__proto__":{"polluted":true}},"xs":[{"__proto__":[1]}],"w":{"__proto__":{"polluted":1}}}');
  // A reserved own key is still never walked through.
  assert.equal(kindOf(() => apply(doc, [['s', ['v', '__proto__', 'polluted'], false]])), 'ReservedSegment');
  assert.equal(({}).polluted, undefined);
});

test('inherited setters and getters never run', () => {
  let hits = 0;
  const proto = {
    set trap(v) {
      hits++;
    },
    get lure() {
      hits++;
      return { inner: 'x' };
    },
  };
  const doc = Object.create(proto);
  const out = apply(doc, [['s', ['trap'], 1]]);
  assert.ok(Object.hasOwn(out, 'trap'));
  assert.equal(out.trap, 1);
  assert.ok(!Object.hasOwn(doc, 'trap'));
  assert.equal(kindOf(() => apply(doc, [['s', ['lure', 'inner'], 2]])), 'Missing');
  assert.equal(kindOf(() => apply(doc, [['a', ['lure'], 'x']])), 'Missing');
  assert.equal(apply(doc, [['d', ['lure']]]), doc);
  assert.equal(hits, 0);
});

test('values must be JSON', () => {
  for (const v of [undefined, NaN, Infinity, () => 1, 1n, Symbol('s'), new Date(0), new Map(), [1, , 3], { a: undefined }]) {
    assert.equal(kindOf(() => apply({}, [['s', ['a'], v]])), 'NotJson', String(typeof v));
  }
  assert.deepEqual(apply({}, [['s', ['a'], Object.create(null)]]), { a: {} });
});

test('limits: the defaults are chord\'s', () => {
  assert.deepEqual({ ...DEFAULT_LIMITS }, { maxDepth: 120, maxArrayLen: 16777216, maxStringLen: 268435456, maxWork: 16777216 });
});

test('limits: depth counts the path and the value, for r, s and p', () => {
  const nest = (n) => (n === 0 ? 0 : [nest(n - 1)]);
  assert.doesNotThrow(() => apply(undefined, [['r', nest(120)]]));
  assert.equal(kindOf(() => apply(undefined, [['r', nest(121)]])), 'LimitExceeded');
  const limits = { maxDepth: 3 };
  assert.doesNotThrow(() => apply({ a: {} }, [['s', ['a', 'b'], { c: 1 }]], limits));
  assert.equal(kindOf(() => apply({ a: {} }, [['s', ['a', 'b'], { c: [] }]], limits)), 'LimitExceeded');
  assert.doesNotThrow(() => apply({ xs: [] }, [['p', ['xs'], 0, 0, [[1]]]], limits));
  assert.throws(
    () => apply({ xs: [] }, [['p', ['xs'], 0, 0, [[[1]]]]], limits),
    (e) => e.kind === 'LimitExceeded' && e.limit === 'max_depth' && e.max === 3 && e.message === 'op 0 at xs: exceeds the max_depth limit of 3',
  );
  // A deep hostile value is refused without recursion.
  let deep = 0;
  for (let i = 0; i < 200000; i++) deep = [deep];
  assert.equal(kindOf(() => apply(undefined, [['r', deep]])), 'LimitExceeded');
  assert.doesNotThrow(() => apply(undefined, [['r', deep]], { maxDepth: Infinity }));
});

test('limits: arrays only refuse growth', () => {
  const limits = { maxArrayLen: 3 };
  assert.deepEqual(apply({ xs: [1, 2] }, [['s', ['xs', 2], 3]], limits), { xs: [1, 2, 3] });
  assert.equal(kindOf(() => apply({ xs: [1, 2, 3] }, [['s', ['xs', 3], 4]], limits)), 'LimitExceeded');
  assert.equal(kindOf(() => apply({ xs: [1] }, [['p', ['xs'], 0, 0, [2, 3, 4]]], limits)), 'LimitExceeded');
  assert.deepEqual(apply({ xs: [1, 2, 3, 4, 5] }, [['p', ['xs'], 0, 2, [9]]], limits), { xs: [9, 3, 4, 5] });
  assert.deepEqual(apply(undefined, [['r', [1, 2, 3, 4]]], limits), [1, 2, 3, 4]);
});

test('limits: strings are bounded in UTF-8 bytes, like chord', () => {
  const limits = { maxStringLen: 8 };
  assert.deepEqual(apply({ s: 'abcd' }, [['a', ['s'], 'efgh']], limits), { s: 'abcdefgh' });
  assert.equal(kindOf(() => apply({ s: 'abcd' }, [['a', ['s'], 'efghi']], limits)), 'LimitExceeded');
  assert.deepEqual(apply({ s: 'é' }, [['a', ['s'], '😀é']], limits), { s: 'é😀é' }); // 2 + 4 + 2 bytes
  assert.equal(kindOf(() => apply({ s: 'é' }, [['a', ['s'], '😀éa']], limits)), 'LimitExceeded');
  assert.equal(kindOf(() => apply({ s: '' }, [['a', ['s'], '€€€']], limits)), 'LimitExceeded'); // 9 bytes
  // Only growth: an empty append to an over-long string, and s or r, are fine.
  assert.deepEqual(apply({ s: 'x'.repeat(20) }, [['a', ['s'], '']], limits), { s: 'x'.repeat(20) });
  assert.doesNotThrow(() => apply({}, [['s', ['s'], 'x'.repeat(20)]], limits));
});

test('decoder: ids live across batches until an r; omission lives within a batch', () => {
  const dec = createDecoder();
  assert.deepEqual(dec.decodeText('[["#",0,["out"]],["a",0,"b"],["t",2]]'), [['a', ['out'], 'b'], ['t', ['out'], 2]]);
  assert.deepEqual(dec.decode([['a', 0, 'c'], ['p', 1, 0, []]]), [['a', ['out'], 'c'], ['p', ['out'], 1, 0, []]]);
  assert.deepEqual(dec.decode([['r', {}], ['#', 0, ['x']], ['s', 0, 1]]), [['r', {}], ['s', ['x'], 1]]);
  // Decoded paths are shared and frozen: mutating one cannot corrupt the id table.
  const [op] = dec.decode([['s', 0, 2]]);
  assert.ok(Object.isFrozen(op[1]));
  assert.throws(() => op[1].push('y'), TypeError);
  assert.deepEqual(dec.decode([['s', 0, 3]]), [['s', ['x'], 3]]);
  assert.throws(() => dec.decode([['a', 'c']]), (e) => e.kind === 'NoPreviousPath' && e.opIndex === 0);
});

test('decoder: a failed batch poisons it for good', () => {
  for (const bad of ['[["s",9,1]]', '[["zz"]]', 'not json', '{"a":1}', '[["s",[],1]]', '[["#",0,["__proto__"]]]']) {
    const dec = createDecoder();
    dec.decodeText('[["r",{"a":1}],["#",0,["a"]]]');
    assert.throws(() => dec.decodeText(bad), ChordError);
    assert.ok(dec.poisoned);
    for (const next of ['[["r",{}]]', '[]', 'not json']) {
      assert.throws(() => dec.decodeText(next), (e) => e.kind === 'DecoderPoisoned');
      assert.throws(() => dec.decode(JSON.parse('[]')), (e) => e.kind === 'DecoderPoisoned');
    }
  }
  // The wire grammar is checked over the whole batch before any op is decoded.
  assert.throws(() => createDecoder().decode([['s', 1], ['zz']]), (e) => e.kind === 'UnknownVerb' && e.opIndex === 1);
  assert.throws(() => createDecoder().decodeText('[1'), (e) => e.kind === 'Json' && /^invalid JSON: /.test(e.message));
});

test('isBase is a token comparison on the first op', () => {
  assert.equal(isBase([['r', 1]]), true);
  assert.equal(isBase([['#', 0, []], ['r', 1]]), false);
  assert.equal(isBase([]), false);
  assert.equal(isBase('r'), false);
  assert.equal(isBase([['s', ['a'], 1], ['r', 1]]), false);
});

test('errors name what and where, as chord does', () => {
  assert.throws(() => apply({}, [['p', ['xs'], 0, 0, 'not-an-array']]), { message: 'op 0: splice items must be a JSON array' });
  assert.throws(() => apply({ xs: [1, 2, 3] }, [['s', ['xs', 1], 9], ['s', ['xs', 5], 9]]), {
    kind: 'IndexOutOfRange',
    opIndex: 1,
    path: ['xs', 5],
    index: 5,
    len: 3,
    message: 'op 1 at xs[5]: index 5 is past the end of an array of length 3 (an op may write at most one past the end)',
  });
  assert.throws(() => apply({ a: { b: 1 } }, [['s', ['a', 'b', 'c', 'd'], 1]]), {
    kind: 'NotAContainer',
    path: ['a', 'b', 'c'],
    message: 'op 0 at a.b.c: cannot walk into a number: only objects and arrays have children',
  });
  assert.throws(() => apply({}, [['s', ['x', 'constructor'], 1]]), {
    kind: 'ReservedSegment',
    segment: 'constructor',
    position: 1,
    message: 'op 0: path segment 1 is the reserved name "constructor"',
  });
  assert.throws(() => apply({}, [['s', ['a'], 1, 2]]), { message: 'op 0: `s` takes 3 elements, found 4' });
  assert.throws(() => apply({}, [['t', ['a'], 1.5]]), { message: 'op 0: count must be a non-negative integer, found 1.5' });
  assert.equal(formatPath([]), '$');
  assert.equal(formatPath(['transcript', 3, 'text', 'two words', '0']), 'transcript[3].text["two words"]["0"]');
});

test('Replica: decode + apply, change notifications, failure, recovery at a base batch, reset', () => {
  const seen = [];
  const replica = new Replica({ onChange: (value, ops) => seen.push([JSON.stringify(value), ops.length]) });
  assert.equal(replica.value, undefined);
  replica.applyWireText('[["r",{"out":"","xs":[]}]]');
  replica.applyWireText('[["a",["out"],"ab"],["a","c"]]');
  replica.applyWireText('[["#",0,["out"]],["t",0,1],["p",["xs"],0,0,[1]]]');
  assert.deepEqual(replica.value, { out: 'bc', xs: [1] });
  assert.deepEqual(seen, [['{"out":"","xs":[]}', 1], ['{"out":"abc","xs":[]}', 2], ['{"out":"bc","xs":[1]}', 2]]);

  // An op that cannot apply: the value is untouched and the replica stops.
  assert.throws(() => replica.applyWireText('[["a",0,"d"],["s",["xs",5],1]]'), (e) => e.kind === 'IndexOutOfRange');
  assert.deepEqual(replica.value, { out: 'bc', xs: [1] });
  assert.ok(replica.failed);
  assert.throws(() => replica.applyWireText('[["a",0,"d"]]'), (e) => e.kind === 'ReplicaFailed');
  assert.equal(seen.length, 3);

  // A resubscription's base batch rebuilds it, ids and all.
  replica.applyWireText('[["r",{"out":"z"}]]');
  assert.equal(replica.failed, null);
  assert.throws(() => replica.applyWireText('[["a",0,"d"]]'), (e) => e.kind === 'UnknownId');
  replica.reset();
  assert.equal(replica.value, undefined);
  assert.throws(() => replica.applyWireText('[["s",["a"],1]]'), (e) => e.kind === 'NoValue');
  replica.reset();
  assert.throws(() => replica.applyWireText('nope'), (e) => e.kind === 'Json');
  assert.deepEqual(replica.applyWire([['r', [1]], ['p', [], 1, 0, [2]]]), [1, 2]);
});

/** Subscribes a counter to each named part: how many times each listener ran. */
function countCalls(replica, parts) {
  const calls = Object.fromEntries(Object.keys(parts).map((name) => [name, 0]));
  for (const [name, selector] of Object.entries(parts)) replica.subscribe(selector, () => (calls[name] += 1));
  return calls;
}

const LANE = {
  status: 'thinking',
  transcript: [{ role: 'user', text: 'hi' }, { role: 'assistant', text: 'hello' }],
  tools: [{ name: 'build', details: { step: 1 } }],
  usage: { input: 10, output: 2 },
};

test('a base batch keeps every part of the held value it did not change, in both text and parsed paths', () => {
  for (const how of ['text', 'parsed']) {
    const applyBase = (replica, value) => {
      const batch = [['r', value]];
      return how === 'text' ? replica.applyWireText(JSON.stringify(batch)) : replica.applyWire(batch);
    };
    let changes = 0;
    const replica = new Replica({ onChange: () => (changes += 1) });
    applyBase(replica, LANE);
    const held = replica.value;
    const calls = countCalls(replica, {
      root: (v) => v,
      status: (v) => v.status,
      transcript: (v) => v.transcript,
      first: (v) => v.transcript[0],
      second: (v) => v.transcript[1],
      tools: (v) => v.tools,
      usage: (v) => v.usage,
    });
    // One part changed: the second entry of the transcript.
    const changed = structuredClone(LANE);
    changed.transcript[1].text = 'hello!';
    const value = applyBase(replica, changed);
    assert.deepEqual(value, changed, how);
    assert.equal(value, replica.value);
    assert.notEqual(value, held, 'the root is new: something in it changed');
    assert.equal(value.transcript[0], held.transcript[0], 'an unchanged entry is the held object');
    assert.equal(value.tools, held.tools);
    assert.equal(value.tools[0].details, held.tools[0].details);
    assert.equal(value.usage, held.usage);
    assert.notEqual(value.transcript, held.transcript);
    assert.deepEqual(calls, { root: 1, status: 0, transcript: 1, first: 0, second: 1, tools: 0, usage: 0 }, how);
    assert.equal(changes, 2, 'onChange once per batch');

    // A base equal to the value: the very same object, no listener, onChange once.
    const before = replica.value;
    assert.equal(applyBase(replica, structuredClone(changed)), before, how);
    assert.equal(replica.value, before);
    assert.deepEqual(calls, { root: 1, status: 0, transcript: 1, first: 0, second: 1, tools: 0, usage: 0 }, how);
    assert.equal(changes, 3, 'onChange runs for a base equal to the value too');

    // A base followed by ops in the same batch: the batch's result is what is compared.
    const ops = [['r', structuredClone(LANE)], ['s', ['usage', 'output'], 3], ['s', ['transcript', 1, 'text'], 'hello!']];
    if (how === 'text') replica.applyWireText(JSON.stringify(ops));
    else replica.applyWire(ops);
    assert.equal(replica.value.transcript, before.transcript);
    assert.equal(replica.value.tools, before.tools);
    assert.deepEqual(replica.value.usage, { input: 10, output: 3 });
    assert.deepEqual(calls, { root: 2, status: 0, transcript: 1, first: 0, second: 1, tools: 0, usage: 1 }, how);
  }
});

test('keepEqualParts: what counts as equal, and what is kept of a part that is not', () => {
  const held = { a: [1, { b: 2 }, [3]], o: { x: 1, y: { z: [] } }, s: 'text', n: 0 };
  // Keys in another order: a new object (the order shows when it is listed), equal members kept.
  let next = keepEqualParts(held, { o: { y: { z: [] }, x: 1 }, a: [1, { b: 2 }, [3]], s: 'text', n: 0 });
  assert.notEqual(next, held);
  assert.deepEqual(Object.keys(next), ['o', 'a', 's', 'n']);
  assert.equal(next.a, held.a);
  assert.notEqual(next.o, held.o);
  assert.deepEqual(Object.keys(next.o), ['y', 'x']);
  assert.equal(next.o.y, held.o.y);
  // An array grown: a new array whose elements at the same index are the held ones.
  next = keepEqualParts(held, { a: [1, { b: 2 }, [3], 4], o: { x: 1, y: { z: [] } }, s: 'text', n: 0 });
  assert.notEqual(next.a, held.a);
  assert.equal(next.a[1], held.a[1]);
  assert.equal(next.a[2], held.a[2]);
  assert.equal(next.o, held.o);
  // A member removed, an array that became an object, a scalar that differs only as -0.
  next = keepEqualParts(held, { a: { 0: 1 }, o: { x: 1 }, s: 'text', n: -0 });
  assert.notEqual(next, held);
  assert.deepEqual(next, { a: { 0: 1 }, o: { x: 1 }, s: 'text', n: -0 });
  assert.ok(Object.is(next.n, -0));
  // Scalars and a change of kind at the root are the new value.
  assert.equal(keepEqualParts(held, 5), 5);
  assert.deepEqual(keepEqualParts([held], { 0: held }), { 0: held });
  assert.equal(keepEqualParts(undefined, held), held);
  // Equal all through: the held value itself.
  assert.equal(keepEqualParts(held, structuredClone(held)), held);
});

test('keepEqualParts keeps a "__proto__" key an own member, and walks any depth without recursion', () => {
  const held = JSON.parse('{"__proto__":{"polluted":1},"list":[1]}');
  const next = keepEqualParts(held, JSON.parse('{"__proto__":{"polluted":1},"list":[2]}'));
  assert.equal(Object.getPrototypeOf(next), Object.prototype);
  assert.equal(Object.getOwnPropertyDescriptor(next, '__proto__').value, Object.getOwnPropertyDescriptor(held, '__proto__').value);
  assert.equal(({}).polluted, undefined);
  // Far deeper than any stack: a recursive walk would throw a RangeError.
  const deep = (leaf) => {
    let v = [leaf];
    for (let i = 0; i < 200_000; i++) v = [v];
    return v;
  };
  const a = deep(1);
  assert.equal(keepEqualParts(a, deep(1)), a);
  const b = keepEqualParts(a, deep(2));
  assert.notEqual(b, a);
  let leaf = b;
  while (Array.isArray(leaf[0])) leaf = leaf[0];
  assert.deepEqual(leaf, [2]);
});

test('reset({ keepValue }) keeps the value for the next base batch, which alone it then takes', () => {
  const replica = new Replica();
  replica.applyWireText(JSON.stringify([['r', LANE], ['#', 0, ['usage', 'output']]]));
  const held = replica.value;
  const calls = countCalls(replica, { transcript: (v) => v.transcript, usage: (v) => v.usage });
  replica.reset({ keepValue: true });
  assert.equal(replica.value, held, 'the value stays');
  assert.equal(replica.failed, null);
  // The ids went with the old subscription; only a base batch may come.
  assert.throws(() => replica.applyWireText('[["s",0,3]]'), (e) => e.kind === 'NotBase');
  assert.throws(() => replica.applyWire([['s', ['usage', 'output'], 3]]), (e) => e.kind === 'NotBase');
  assert.equal(replica.value, held);
  const changed = structuredClone(LANE);
  changed.usage.output = 3;
  replica.applyWireText(JSON.stringify([['r', changed]]));
  assert.equal(replica.value.transcript, held.transcript);
  assert.deepEqual(calls, { transcript: 0, usage: 1 });
  // A failed replica's base keeps the parts too.
  const usage = replica.value.usage;
  assert.throws(() => replica.applyWireText('[["s",["nope","x"],1]]'), (e) => e.kind === 'Missing');
  assert.ok(replica.failed);
  replica.applyWire([['r', structuredClone(changed)]]);
  assert.equal(replica.failed, null);
  assert.equal(replica.value.usage, usage);
  assert.equal(replica.value.transcript, held.transcript);
  assert.deepEqual(calls, { transcript: 0, usage: 1 }, 'an equal base after a failure calls no listener');
  // Without keepValue, reset forgets the value.
  replica.reset();
  assert.equal(replica.value, undefined);
});

test('Replica: limits apply', () => {
  const replica = new Replica({ limits: { maxArrayLen: 1 } });
  assert.throws(() => replica.applyWireText('[["r",[]],["p",[],0,0,[1,2]]]'), (e) => e.kind === 'LimitExceeded');
});

test('no prototype was polluted by any test in this file', () => {
  assert.equal(({}).polluted, undefined);
  assert.equal([].polluted, undefined);
  assert.equal(Object.prototype.gadget, undefined);
});
