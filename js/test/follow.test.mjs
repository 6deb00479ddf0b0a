// `follow` against an in-memory Durable Streams server behind a fake `fetch`: it starts at the
// latest base, resumes from its offset after cuts (no base batch again), and starts over on
// 410 or a batch that does not decode. chord/tests/js_follow.rs runs it against chord's server.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { follow, Replica, sseTransport } from '../chord-replica.mjs';

const hex = (n) => n.toString(16).padStart(16, '0');

/** A stream of wire batches served the way chord's server serves them, with faults. */
class FakeServer {
  constructor() {
    this.records = []; // { seq, batch (text), base }
    this.floor = 0; // offsets below it answer 410
    this.open = new Set();
    this.requests = [];
  }

  append(batch) {
    const seq = this.records.length + 1;
    const text = JSON.stringify(batch);
    this.records.push({ seq, text, base: batch[0]?.[0] === 'r' });
    for (const c of this.open) c.push();
  }

  get last() {
    return this.records.length;
  }

  baseOffset() {
    const base = this.records.findLast((r) => r.base);
    return hex(base ? base.seq - 1 : 0);
  }

  /** Ends every open response, `partial` bytes into an event when given. */
  cutAll(partial = 0) {
    for (const c of [...this.open]) c.cut(partial);
  }

  fetch = async (url, init = {}) => {
    const u = new URL(url, 'http://fake');
    this.requests.push(`${init.method ?? 'GET'} ${u.search}`);
    if (init.method === 'HEAD') {
      return new Response(null, { status: 200, headers: { 'chord-base-offset': this.baseOffset() } });
    }
    const offset = u.searchParams.get('offset');
    let at = offset === '-1' ? this.floor : parseInt(offset, 16);
    if (at < this.floor || at > this.last) return new Response('gone', { status: 410 });
    const server = this;
    const encoder = new TextEncoder();
    let conn;
    const body = new ReadableStream({
      start(controller) {
        conn = {
          push() {
            const batches = server.records.slice(at).map((r) => r.text);
            if (batches.length === 0) return;
            at = server.last;
            const events = `event: data\ndata: [${batches.join(',')}]\n\nevent: control\ndata: {"streamNextOffset":"${hex(at)}","upToDate":true}\n\n`;
            controller.enqueue(encoder.encode(events));
          },
          cut(partial) {
            if (partial > 0) controller.enqueue(encoder.encode('event: data\ndata: [[["s",'.slice(0, partial)));
            server.open.delete(conn);
            controller.error(new TypeError('connection cut'));
          },
        };
        server.open.add(conn);
        controller.enqueue(encoder.encode(`event: control\ndata: {"streamNextOffset":"${hex(at)}","upToDate":true}\n\n`));
        conn.push();
      },
      cancel() {
        server.open.delete(conn);
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
}

async function until(what, done) {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > 30_000) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const options = (server, replica) => ({ replica, fetch: server.fetch, backoffMin: 1, backoffMax: 5, transport: sseTransport });

test('follow resumes from its offset after cuts and never receives a base batch again', async () => {
  const server = new FakeServer();
  server.append([['r', { text: '', n: 0 }]]);
  const replica = new Replica();
  const f = follow('http://fake/streams/lanes/main', options(server, replica));
  let text = '';
  for (let i = 1; i <= 40; i++) {
    text += `t${i} `;
    server.append([['a', ['text'], `t${i} `], ['s', ['n'], i]]);
    if (i % 10 === 0) {
      await until(`batch ${i}`, () => replica.value?.n === i);
      server.cutAll(i % 20); // mid-event, or between events
    }
  }
  // One more after the last cut: its connection resumed too.
  text += 'end';
  server.append([['a', ['text'], 'end'], ['s', ['n'], 41]]);
  await until('the last batch', () => replica.value?.n === 41);
  f.stop();
  await f.done;
  assert.deepEqual(replica.value, { text, n: 41 });
  assert.equal(f.stats.starts, 1);
  assert.equal(f.stats.bases, 1, 'no base after the first');
  assert.ok(f.stats.resumes >= 4, JSON.stringify(f.stats));
  assert.equal(server.requests.filter((r) => r.startsWith('HEAD')).length, 1);
});

test('follow starts over from the latest base on 410 and on a batch that does not decode', async () => {
  const server = new FakeServer();
  server.append([['r', { n: 0 }]]);
  const replica = new Replica();
  const f = follow('http://fake/streams/lanes/main', options(server, replica));
  await until('the base', () => replica.value?.n === 0);
  // Retention drops everything before a new base; the replica's offset is gone.
  server.cutAll();
  server.append([['s', ['n'], 1]]);
  server.append([['r', { n: 2 }]]);
  server.floor = 2;
  await until('the restart', () => replica.value?.n === 2);
  assert.equal(f.stats.starts, 2);
  // A batch naming a path id never defined: the decoder is poisoned, start over.
  server.append([['a', 7, 'x']]);
  server.append([['r', { n: 3 }]]);
  await until('the second restart', () => replica.value?.n === 3 && f.stats.starts === 3);
  f.stop();
  await f.done;
  assert.match(f.stats.lastBreak, /path id 7/);
});
