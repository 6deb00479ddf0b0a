// What a hostile server can send the replica, and what it costs: the SSE parser bounds a line
// and an event (memory a small multiple of the bound, each byte examined at most twice, the
// same events whatever the chunking), a control event's offset must be an offset, `apply`
// checks a path no more often than it walks it, and the decoder refuses what chord's does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import {
  apply,
  ChordError,
  createDecoder,
  DEFAULT_MAX_EVENT,
  EventParser,
  follow,
  MAX_PATH_SEGMENTS,
  MAX_WIRE_NESTING,
  Replica,
  sseTransport,
  StreamEventError,
  validOffset,
} from '../chord-replica.mjs';
import { batchTexts } from '../src/batch-text.mjs';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const live = () => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const MiB = 1 << 20;
const encode = (s) => new TextEncoder().encode(s);

/** Pushes `chunk()` into a parser until it throws; returns the error and the peak live memory. */
function flood(maxEvent, chunk, limitBytes) {
  const parser = new EventParser({ maxEvent });
  const before = live();
  let peak = 0;
  let fed = 0;
  while (fed < limitBytes) {
    const bytes = chunk();
    fed += bytes.length;
    try {
      parser.push(bytes);
    } catch (e) {
      return { error: e, peak: peak - before, fed };
    }
    peak = Math.max(peak, live());
  }
  return { error: null, peak: peak - before, fed };
}

test('the default event bound is chord replica\'s, 64 MiB', () => {
  assert.equal(DEFAULT_MAX_EVENT, 64 * 1024 * 1024);
});

test('an endless line ends in TooLarge, holding about the bound', () => {
  const max = 16 * MiB;
  const { error, peak, fed } = flood(max, () => new Uint8Array(MiB).fill(0x78), 8 * max);
  assert.ok(error instanceof StreamEventError, String(error));
  assert.equal(error.kind, 'TooLarge');
  assert.equal(error.max, max);
  assert.ok(fed <= max + MiB, `refused after ${fed} bytes`);
  assert.ok(peak < 2 * max, `peak ${peak} bytes for a bound of ${max}`);
});

test('endless data lines of one event end in TooLarge, holding a small multiple of the bound', () => {
  const max = 16 * MiB;
  const lines = `data:${'x'.repeat(1017)}\n`.repeat(1024); // 1 MiB
  const { error, peak, fed } = flood(max, () => encode(lines), 8 * max);
  assert.equal(error?.kind, 'TooLarge', String(error));
  assert.ok(fed <= max + MiB, `refused after ${fed} bytes`);
  assert.ok(peak < 3 * max, `peak ${peak} bytes for a bound of ${max}`);
});

test('endless empty data lines of one event end in TooLarge, holding a small multiple of the bound', () => {
  // Each empty `data` line adds one byte to the event (the LF joining it to the one before),
  // and must cost about that, not an array slot and a string: a string per line held about
  // ten times the bound when the bound was reached.
  const max = MiB;
  const lines = encode('data:\ndata\r\ndata: \r'.repeat(1 << 14)); // 3 lines in 19 bytes
  const { error, peak, fed } = flood(max, () => lines, 64 * max);
  assert.ok(error instanceof StreamEventError, String(error));
  assert.equal(error.kind, 'TooLarge');
  assert.equal(error.max, max);
  // The bound is reached after `max` lines: about 6.3 bytes of stream a line.
  assert.ok(fed <= 7 * max, `refused after ${fed} bytes`);
  assert.ok(peak < 3 * max, `peak ${peak} bytes for a bound of ${max}`);
});

test('a line held across chunks costs at most 4x its bytes, however small the chunks', () => {
  // Each chunk is a new array, as a stream's reads are; the parser must keep their bytes,
  // not the chunks (an object each, and for a view, its whole buffer).
  for (const [chunk, size] of [[1, MiB], [16, 4 * MiB], [33, 4 * MiB]]) {
    const parser = new EventParser();
    const before = live();
    assert.deepEqual(parser.push(encode('data: ')), []);
    let fed = 6;
    while (fed < size) {
      assert.deepEqual(parser.push(new Uint8Array(chunk).fill(0x78)), []);
      fed += chunk;
    }
    const ratio = (live() - before) / fed;
    assert.ok(ratio <= 4, `a line of ${fed} bytes in ${chunk}-byte chunks holds ${ratio.toFixed(2)}x its bytes`);
    // The line is whole when it ends.
    const [event] = parser.push(encode('\n\n'));
    assert.equal(event.data.length, fed - 6);
    assert.ok(/^x+$/.test(event.data));
  }
});

test('sseTransport reading 33 bytes at a time holds at most 4x the line it is in', async () => {
  const value = 'x'.repeat(4 * MiB);
  const line = `data: [[["r",${JSON.stringify(value)}]]]`;
  const body = encode(`event: data\n${line}\n\nevent: control\ndata: {"streamNextOffset":"0000000000000001"}\n\n`);
  const lineEnd = body.indexOf(10, 12);
  let at = 0;
  let before = 0;
  let ratio = null;
  const stream = new ReadableStream({
    pull(controller) {
      if (at >= body.length) return controller.close();
      // Sampled once, with the whole line but its end read: what the transport holds for it.
      if (ratio === null && at + 33 > lineEnd) ratio = (live() - before) / line.length;
      controller.enqueue(body.slice(at, at + 33));
      at += 33;
    },
  }, { highWaterMark: 0 });
  const fetch = async () => new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  before = live();
  const chunks = [];
  for await (const chunk of sseTransport({ url: 'http://127.0.0.1:1/s', offset: '0', fetch })) chunks.push(chunk);
  assert.ok(ratio !== null && ratio <= 4, `held ${ratio?.toFixed(2)}x the line`);
  assert.equal(chunks.length, 1);
  assert.equal(chunks[0].offset, '0000000000000001');
  assert.deepEqual(chunks[0].messages, [[['r', value]]]);
});

test('an event of many short data lines decodes as one text, and a line that is not UTF-8 is refused when its event ends', () => {
  const parser = new EventParser({ maxEvent: 1 << 20 });
  const values = Array.from({ length: 1000 }, (_, i) => ['', 'é', '😀x', String(i)][i % 4]);
  const text = `event: many\n${values.map((v) => `data: ${v}\r\n`).join('')}\n`;
  const bytes = encode(text);
  const events = [];
  for (let at = 0; at < bytes.length; at += 7) events.push(...parser.push(bytes.subarray(at, at + 7)));
  assert.deepEqual(events, [{ name: 'many', data: values.join('\n'), id: '' }]);
  // The parser goes on with the next event, its buffer reused.
  assert.deepEqual(parser.push(encode('data:x\n\n')), [{ name: 'message', data: 'x', id: '' }]);
  const bad = new EventParser();
  assert.deepEqual(bad.push(new Uint8Array([...encode('data: ok\ndata: '), 0xc3, 10])), []);
  assert.throws(() => bad.push(encode('\n')), (e) => e instanceof StreamEventError && e.kind === 'NotUtf8');
});

test('an event of exactly the bound is accepted, one byte more is refused', () => {
  for (const [size, ok] of [[100, true], [101, false]]) {
    const parser = new EventParser({ maxEvent: 100 });
    const data = 'x'.repeat(size - 2); // and two newlines joining its three lines
    const text = `data:${data.slice(0, 40)}\ndata: ${data.slice(40, 70)}\ndata:${data.slice(70)}\n\n`;
    if (ok) {
      assert.deepEqual(parser.push(encode(text)), [{ name: 'message', data: `${data.slice(0, 40)}\n${data.slice(40, 70)}\n${data.slice(70)}`, id: '' }]);
    } else {
      assert.throws(() => parser.push(encode(text)), (e) => e.kind === 'TooLarge');
    }
  }
  // The bound counts UTF-8 bytes, not characters: two lines of 20 three-byte characters
  // are 121 bytes of data (41 characters), each line 65 bytes.
  const euros = `data:${'€'.repeat(20)}\n`;
  assert.throws(() => new EventParser({ maxEvent: 100 }).push(encode(`${euros}${euros}\n`)), (e) => e.kind === 'TooLarge');
  assert.equal(new EventParser({ maxEvent: 121 }).push(encode(`${euros}${euros}\n`)).length, 1);
  assert.throws(() => new EventParser({ maxEvent: 0 }), TypeError);
});

test('the line search examines each byte at most twice, however the bytes are chunked', () => {
  const examined = (total, chunk, make) => {
    const parser = new EventParser({ maxEvent: 1 << 30 });
    let fed = 0;
    while (fed < total) {
      const bytes = make(chunk);
      fed += bytes.length;
      parser.push(bytes);
    }
    return [parser.examined, fed];
  };
  const line = (n) => new Uint8Array(n).fill(0x78);
  const short = (n) => encode('data:x\r\n\r\nevent:control\ndata:{}\r\r'.repeat(n / 32));
  for (const [make, chunk] of [[line, 4096], [line, 1], [short, 32 * 64], [short, 32]]) {
    const [small, n] = examined(1 << 18, chunk, make);
    const [large, n4] = examined(4 << 18, chunk, make);
    assert.ok(small <= 2 * n, `${small} examined for ${n} bytes`);
    assert.ok(large <= 2 * n4, `${large} examined for ${n4} bytes`);
    assert.ok(large / small > 3.9 && large / small < 4.1, `work at 4N over work at N: ${large / small}`);
  }
});

/** A small deterministic generator, so a failure replays exactly. */
function rng(seed) {
  let s = BigInt(seed);
  return (n) => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return Number(s >> 33n) % n;
  };
}

test('property: the same events whatever the chunking (CR LF, multi-byte characters and the BOM split)', () => {
  const pieces = ['data:', 'data: ', 'event:', 'event: ', ': note', 'id: 7', 'id:', 'id:0:1', 'retry: 5', 'x', 'é', '😀', '€', ':', ' ', '\r', '\n', '\r\n', 'control', 'data'];
  for (let seed = 1; seed <= 300; seed++) {
    const next = rng(seed);
    let text = next(4) === 0 ? '\ufeff' : '';
    for (let k = 0; k < 40; k++) text += pieces[next(pieces.length)];
    text += '\n\n';
    const bytes = encode(text);
    const whole = new EventParser().push(bytes);
    const parser = new EventParser();
    const split = [];
    for (let at = 0; at < bytes.length;) {
      const end = Math.min(bytes.length, at + next(6));
      split.push(...parser.push(bytes.subarray(at, end)));
      at = end;
    }
    assert.deepEqual(split, whole, `seed ${seed}: ${JSON.stringify(text)}`);
    // The oracle: the standard's rules, on the whole text.
    const expected = [];
    let name = '';
    let data = null;
    let id = '';
    for (const line of text.replace(/^\ufeff/, '').split(/\r\n|\r|\n/).slice(0, -1)) {
      if (line === '') {
        if (data !== null) expected.push({ name: name || 'message', data, id });
        name = '';
        data = null;
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data = data === null ? value : `${data}\n${value}`;
        if (field === 'event') name = value;
        if (field === 'id') id = value;
      }
    }
    assert.deepEqual(whole, expected, `seed ${seed}: ${JSON.stringify(text)}`);
  }
});

test('a line that is not UTF-8 is refused, a character split across chunks is not', () => {
  const bytes = encode('data:😀\n\n');
  const parser = new EventParser();
  assert.deepEqual([...parser.push(bytes.subarray(0, 7)), ...parser.push(bytes.subarray(7))], [{ name: 'message', data: '😀', id: '' }]);
  assert.throws(() => new EventParser().push(new Uint8Array([0x64, 0x61, 0x74, 0x61, 0x3a, 0xff, 10, 10])), (e) => e instanceof StreamEventError && e.kind === 'NotUtf8');
});

test('offsets: visible ASCII without the characters the protocol forbids', () => {
  for (const good of ['000000000000002a', '-1', 'now', 'a_b-c.d~e', 'Z'.repeat(300)]) assert.ok(validOffset(good), good);
  for (const bad of [42, null, undefined, '', 'a b', 'a\r\nb', 'a\n', 'x,y', 'x&y', 'x=y', 'x?y', 'x/y', 'é', '\u0000', ['a']]) {
    assert.ok(!validOffset(bad), JSON.stringify(bad));
  }
});

/** A `fetch` serving one SSE body per GET (the last one again when they run out). */
function serving(bodies) {
  const requests = [];
  const fetch = async (url, init = {}) => {
    // The catch-up read a follower joins with: nothing yet, so the SSE bodies bring the base.
    if (!String(url).includes('live=')) {
      requests.push('catch-up');
      return new Response('[]', { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000000' } });
    }
    requests.push(init.method ?? 'GET');
    const gets = requests.filter((m) => m === 'GET').length;
    const body = bodies[Math.min(gets, bodies.length) - 1];
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
  return { fetch, requests };
}

const event = (name, data) => `event: ${name}\ndata: ${data}\n\n`;

test('a control event whose streamNextOffset is missing or not an offset is a BadOffset error; one not a JSON object, a Control error', async () => {
  const controls = ['42', 'null', '"a b"', '"x\\r\\ny"', '"a/b"', '""', '["a"]'].map((o) => `{"streamNextOffset":${o}}`);
  for (const control of [...controls, '{}', '{"streamnextoffset":"1"}']) {
    const { fetch } = serving([event('data', '[[["r",1]]]') + event('control', control)]);
    const seen = [];
    await assert.rejects(
      (async () => {
        for await (const chunk of sseTransport({ url: 'http://x/s', offset: '-1', fetch })) seen.push(chunk);
      })(),
      (e) => e instanceof StreamEventError && e.kind === 'BadOffset',
      control,
    );
    assert.deepEqual(seen, [], `${control}: nothing delivered before the bad control event`);
  }
  for (const control of ['{"streamNextOffset":', '[1]', '"0000000000000001"']) {
    const { fetch } = serving([event('control', control)]);
    await assert.rejects(
      (async () => {
        for await (const chunk of sseTransport({ url: 'http://x/s', offset: '-1', fetch })) void chunk;
      })(),
      (e) => e instanceof StreamEventError && e.kind === 'Control',
      control,
    );
  }
});

test('follow starts over from the latest base after a BadOffset, and resumes after TooLarge', async () => {
  const good = event('data', '[[["r",1]]]') + event('control', '{"streamNextOffset":"0000000000000001"}');
  const bad = event('data', '[[["r",2]]]') + event('control', '{"streamNextOffset":"a b"}');
  const huge = event('data', `"${'x'.repeat(200)}"`);
  for (const [second, kind, restart] of [[bad, 'BadOffset', true], [huge, 'TooLarge', false]]) {
    const { fetch, requests } = serving([good, second, good]);
    const errors = [];
    const replica = new Replica();
    const follower = follow('http://x/streams/s', {
      fetch,
      replica,
      maxEvent: 100,
      backoffMin: 1,
      backoffMax: 2,
      onError: (error, info) => errors.push([error, info]),
    });
    while (requests.filter((m) => m === 'GET').length < 3) await new Promise((r) => setTimeout(r, 2));
    follower.stop();
    await follower.done;
    const [error, info] = errors[0];
    assert.equal(error.kind, kind);
    assert.equal(info.restart, restart);
    // A restart joins again (a catch-up read) before the third connection.
    assert.deepEqual(requests.slice(0, 4), restart ? ['catch-up', 'GET', 'GET', 'catch-up'] : ['catch-up', 'GET', 'GET', 'GET']);
  }
  assert.throws(() => follow('http://x/s', { maxEvent: -1 }), TypeError);
});

test('apply reads a path no more often than it walks it: a refused first op ends the batch', () => {
  // One 128-segment path shared by every op, as a decoder shares a short form's path; the
  // proxy counts its reads. The first op is refused (no such member), so the batch costs
  // the reads of one op, not of every op.
  let reads = 0;
  const segments = Array.from({ length: MAX_PATH_SEGMENTS }, (_, i) => `k${i}`);
  const path = new Proxy(segments, {
    get(target, key, receiver) {
      reads += 1;
      return Reflect.get(target, key, receiver);
    },
  });
  const ops = Array.from({ length: 20_000 }, () => ['d', path]);
  assert.throws(() => apply({}, ops), (e) => e instanceof ChordError && e.kind === 'Missing' && e.opIndex === 0);
  assert.ok(reads < 20 * MAX_PATH_SEGMENTS, `${reads} reads of the path for a batch refused at op 0`);
});

test('a million short forms of a 128-segment path: refused at op 0 after decoding once', () => {
  const path = JSON.stringify(Array.from({ length: MAX_PATH_SEGMENTS }, (_, i) => `k${i}`));
  const text = `[["r",{}],["d",${path}]${',["d"]'.repeat(1_000_000)}]`;
  const replica = new Replica();
  assert.throws(() => replica.applyWireText(text), (e) => e.kind === 'Missing' && e.opIndex === 1);
  assert.equal(replica.value, undefined);
});

test(`the decoder refuses nesting of ${MAX_WIRE_NESTING} (batch and tuple included), lone surrogates and numbers out of range`, () => {
  const nest = (n) => `${'['.repeat(n)}0${']'.repeat(n)}`;
  const decodes = (text) => {
    const decoder = createDecoder();
    try {
      decoder.decodeText(text);
      return 'ok';
    } catch (e) {
      assert.ok(decoder.poisoned);
      return e.kind;
    }
  };
  assert.equal(decodes(`[["r",${nest(MAX_WIRE_NESTING - 3)}]]`), 'ok');
  assert.equal(decodes(`[["r",${nest(MAX_WIRE_NESTING - 2)}]]`), 'Json');
  assert.equal(decodes(`[["r",{"a":${nest(MAX_WIRE_NESTING - 3)}}]]`), 'Json');
  assert.equal(decodes('[["r",{"s":"\\ud800"}]]'), 'Json');
  assert.equal(decodes('[["r",{"\\udfff":1}]]'), 'Json');
  assert.equal(decodes('[["r",{"s":"\\ud83d\\ude00"}]]'), 'ok');
  assert.equal(decodes('[["r",1e400]]'), 'Json');
  assert.equal(decodes('[["r",-1e400]]'), 'Json');
  assert.equal(decodes('[["r",1e-400]]'), 'ok');
  // A parsed batch is checked the same way (a transport may hand over parsed JSON).
  assert.throws(() => createDecoder().decode([['r', Infinity]]), (e) => e.kind === 'Json');
  assert.throws(() => createDecoder().decode([['r', '\ud800']]), (e) => e.kind === 'Json');
  // Deep nesting is checked without recursion: a million levels do not overflow the stack.
  assert.equal(decodes(`[["r",${nest(1_000_000)}]]`), 'Json');
});

test('rollback after many appends to one member, with deletes and re-adds between, restores value and key order', () => {
  const doc = () => ({ t: 'ab', u: 'c', xs: ['p', 'q'], o: { k: 'v' } });
  const fails = ['s', ['no such', 'member'], 1];
  const batches = [
    [['a', ['t'], 'x'], ['a', ['t'], 'y'], ['t', ['t'], 1], ['a', ['t'], 'z']],
    [['a', ['t'], 'x'], ['d', ['t']], ['s', ['t'], 'new'], ['a', ['t'], '!'], ['a', ['u'], '?']],
    [['s', ['t'], 'w'], ['a', ['t'], 'x'], ['d', ['t']], ['s', ['t'], ''], ['a', ['t'], 'y'], ['d', ['u']]],
    [['a', ['xs', 0], 'x'], ['d', ['xs', 0]], ['a', ['xs', 0], 'y'], ['p', ['xs'], 0, 0, ['n']], ['a', ['xs', 1], 'z']],
    [['a', ['o', 'k'], 'x'], ['s', ['o'], { k: '' }], ['a', ['o', 'k'], 'y'], ['d', ['o', 'k']]],
    [...Array.from({ length: 5000 }, (_, i) => ['a', ['t'], String(i % 10)]), ['d', ['t']], ['s', ['t'], 'a'], ['a', ['t'], 'b']],
  ];
  for (const batch of batches) {
    const target = doc();
    const keys = JSON.stringify(Object.keys(target));
    assert.throws(() => apply(target, [...batch, fails]), (e) => e.kind === 'Missing' && e.opIndex === batch.length);
    assert.deepEqual(target, doc(), JSON.stringify(batch).slice(0, 200));
    assert.equal(JSON.stringify(Object.keys(target)), keys);
    // And the batch itself applies as its ops say, one at a time.
    const whole = apply(doc(), batch);
    let single = doc();
    for (const op of batch) single = apply(single, [op]);
    assert.deepEqual(whole, single);
  }
});

test('a string built by a million appends in one batch holds about its text, not a node per append', () => {
  const text = `[["r",{"t":""}],["a",["t"],""]${',["a","x"]'.repeat(1_000_000)}]`;
  text.charCodeAt(0); // made flat before the baseline: JSON.parse would copy it otherwise
  const replica = new Replica();
  const before = live();
  replica.applyWireText(text);
  const held = live() - before;
  assert.equal(replica.value.t.length, 1_000_000);
  // One byte a character, and a rope of a million nodes would be 32 bytes each.
  assert.ok(held < 4 * 1_000_000, `${held} bytes held for a string of a million characters`);
});

test('an object naming a member twice is a Json error in every text path, as in chord', () => {
  const repeats = [
    '[["r",{"a":1,"a":2}]]',
    '[["r",{"a":1e400,"a":1}]]',
    '[["r",{"a":1,"\\u0061":2}]]',
    '[["s",["o"],{"b":{"c":[{"d":1,"d":1}]}}]]',
    `[["r",{${Array.from({ length: 20 }, (_, i) => `"k${i}":${i}`).join(',')},"k19":0}]]`,
  ];
  for (const text of repeats) {
    const replica = new Replica();
    assert.throws(() => replica.applyWireText(text), (e) => e instanceof ChordError && e.kind === 'Json', text);
    assert.throws(() => createDecoder().decodeText(text), (e) => e.kind === 'Json', text);
    // An SSE event's batches are all checked before any applies.
    assert.throws(() => batchTexts(`[[["r",{}]],${text}]`), (e) => e.kind === 'Json', text);
  }
  // The same name in different objects, or names that differ only in form, are fine.
  const fine = '[["r",{"a":{"a":1},"b":[{"a":2},{"a":3}],"\\u00e9":1,"e\\u0301":2,"A":4}]]';
  const replica = new Replica();
  replica.applyWireText(fine);
  assert.deepEqual(Object.keys(replica.value), ['a', 'b', '\u00e9', 'e\u0301', 'A']);
});

test('a count, an index or an id written with a fraction or an exponent is refused, as in chord', () => {
  for (const [op, kind] of [
    ['["s",["o",1.0],1]', 'InvalidPath'],
    ['["s",["o",1e0],1]', 'InvalidPath'],
    ['["t",["s"],1.0]', 'InvalidCount'],
    ['["#",1.0,["s"]]', 'InvalidCount'],
    ['["a",0.0,"x"]', 'InvalidCount'],
    ['["p",["xs"],0,1E0,[]]', 'InvalidCount'],
    ['["p",0.0,0,[]]', 'InvalidCount'],
  ]) {
    const replica = new Replica();
    replica.applyWireText('[["r",{"o":{"k":1},"xs":[0,1],"s":"ab"}]]');
    assert.throws(() => replica.applyWireText(`[${op}]`), (e) => e.kind === kind, op);
    assert.throws(() => createDecoder().decodeText(`[${op}]`), (e) => e.kind === kind, op);
  }
  // In a payload a number is a value, however written.
  const replica = new Replica();
  replica.applyWireText('[["r",{"xs":[1.0,2e0],"n":1.5e1}],["s",["m"],1.0],["p",["xs"],0,0,[3.0]]]');
  assert.deepEqual(replica.value, { xs: [3, 1, 2], n: 15, m: 1 });
});
