// The React binding (`chord-replica/react`) in Node: react-test-renderer for client renders,
// react-dom/server for server ones, a fake transport for the stream. Render counts are
// counted in the components' bodies.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createElement as h, StrictMode } from 'react';
import TestRenderer from 'react-test-renderer';
import {
  ChordProvider,
  createChordStore,
  isChordStore,
  useChord,
  useChordFollow,
  useChordStatus,
  useChordStore,
} from '../react.mjs';

globalThis.IS_REACT_ACT_ENVIRONMENT = true;
const { act } = TestRenderer;

// react-test-renderer says once that it is deprecated; every other console.error fails.
const consoleError = console.error;
console.error = (...args) => {
  if (String(args[0]).startsWith('react-test-renderer is deprecated')) return;
  consoleError(...args);
  throw new Error(`console.error: ${args.map(String).join(' ')}`);
};

/**
 * A stream the test feeds: each `connect` of the transport is a connection; `send(batches)`
 * delivers one event of wire batches to the open one; `cut(error)` breaks it.
 */
function fakeStream() {
  const connections = [];
  let seq = 0;
  const offset = () => String(++seq).padStart(16, '0');
  const fetches = [];
  // The catch-up read a follower joins with: nothing yet, so the transport brings the base.
  const fetch = async (url, init) => {
    fetches.push({ url: String(url), method: init?.method ?? 'GET' });
    return new Response('[]', { status: 200, headers: { 'content-type': 'application/json', 'stream-next-offset': '0000000000000000' } });
  };
  async function* transport({ signal, offset: from }) {
    const queue = [];
    let wake = null;
    const connection = { from, signal, closed: false, push: (item) => { queue.push(item); wake?.(); } };
    connections.push(connection);
    signal.addEventListener('abort', () => { connection.closed = true; wake?.(); }, { once: true });
    try {
      while (!signal.aborted) {
        if (queue.length === 0) {
          await new Promise((resolve) => (wake = resolve));
          wake = null;
          continue;
        }
        const item = queue.shift();
        if (item instanceof Error) throw item;
        yield item;
      }
    } finally {
      connection.closed = true;
    }
  }
  return {
    connections,
    fetches,
    options: { fetch, transport, backoffMin: 1, backoffMax: 2 },
    open: () => connections.filter((c) => !c.closed),
    send(batches) {
      const open = this.open();
      assert.equal(open.length, 1, 'one open connection');
      open[0].push({ messages: batches, offset: offset() });
    },
    cut(error) {
      this.open()[0].push(error);
    },
  };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
async function until(what, done) {
  for (let i = 0; i < 2000; i++) {
    if (done()) return;
    await tick();
  }
  assert.fail(`gave up waiting for ${what}`);
}

/** Sends `batches` and waits, inside act, until the store has applied them. */
async function deliver(stream, store, batches) {
  await act(async () => {
    const before = store.getStatus().stats.batches;
    stream.send(batches);
    await until('the batches to apply', () => store.getStatus().stats.batches >= before + batches.length);
  });
}

const LANE = {
  status: 'thinking',
  transcript: [{ role: 'user', text: 'why?' }],
  streamingMessage: { role: 'assistant', text: '' },
  tools: [],
  usage: { inputTokens: 3, outputTokens: 0 },
};

/** A lane's components, each counting its renders in `renders`. */
function lane(renders) {
  const count = (name) => (renders[name] = (renders[name] ?? 0) + 1);
  function Transcript() {
    const transcript = useChord((l) => l?.transcript);
    count('transcript');
    return h('ol', null, (transcript ?? []).map((m, i) => h('li', { key: i }, `${m.role}: ${m.text}`)));
  }
  function Answer() {
    const text = useChord((l) => l?.streamingMessage?.text);
    count('answer');
    return h('p', null, text ?? '');
  }
  function Status() {
    const status = useChord((l) => l?.status);
    count('status');
    return h('b', null, status ?? '…');
  }
  function Connection() {
    const connected = useChordStatus((s) => s.connected);
    count('connection');
    return h('i', null, connected ? 'live' : 'offline');
  }
  return function Lane({ store }) {
    return h(ChordProvider, { store }, h(Status), h(Connection), h(Transcript), h(Answer));
  };
}

test('a component renders only when its slice changed: the transcript not while the answer streams', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/lanes/main', stream.options);
  const renders = {};
  const Lane = lane(renders);
  let root;
  await act(async () => {
    root = TestRenderer.create(h(Lane, { store }));
  });
  await until('a connection', () => stream.open().length === 1);
  assert.deepEqual(renders, { status: 1, connection: 1, transcript: 1, answer: 1 }, 'the first render, before any value');

  await deliver(stream, store, [[['r', LANE]]]);
  assert.deepEqual(renders, { status: 2, connection: 2, transcript: 2, answer: 2 },
    'the base batch: every slice changed (from undefined), and the stream is live');
  const afterBase = { ...renders };

  for (const token of ['Because', ' the', ' linker']) {
    await deliver(stream, store, [[['a', ['streamingMessage', 'text'], token]]]);
  }
  assert.equal(renders.answer - afterBase.answer, 3, 'the answer renders once per batch');
  assert.equal(renders.transcript, afterBase.transcript, 'the transcript does not render while only the answer changes');
  assert.equal(renders.status, afterBase.status);
  assert.equal(renders.connection, afterBase.connection);
  assert.match(JSON.stringify(root.toJSON()), /Because the linker/);

  // Three batches in one event: applied in one task, rendered once.
  const beforeEvent = renders.answer;
  await deliver(stream, store, [
    [['a', ['streamingMessage', 'text'], ' is']],
    [['a', ['streamingMessage', 'text'], ' missing']],
    [['a', ['streamingMessage', 'text'], '.']],
  ]);
  assert.equal(renders.answer - beforeEvent, 1, 'one event of three batches is one render');

  // The message moves to the transcript: both render, the status does not.
  const before = { ...renders };
  await deliver(stream, store, [[
    ['p', ['transcript'], 1, 0, [{ role: 'assistant', text: 'Because the linker is missing.' }]],
    ['d', ['streamingMessage']],
  ]]);
  assert.equal(renders.transcript - before.transcript, 1);
  assert.equal(renders.answer - before.answer, 1);
  assert.equal(renders.status, before.status);
  assert.match(JSON.stringify(root.toJSON()), /assistant: Because the linker is missing\./);

  await act(async () => root.unmount());
  await until('the follower to stop', () => store.follower === null);
  assert.equal(stream.open().length, 0, 'unmounting the last user stops following');
  assert.equal(store.getStatus().connected, false);
});

test('a producer restart re-renders no component whose slice its base did not change', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/lanes/main', stream.options);
  const renders = {};
  const Lane = lane(renders);
  let root;
  await act(async () => {
    root = TestRenderer.create(h(Lane, { store }));
  });
  await until('a connection', () => stream.open().length === 1);
  await deliver(stream, store, [[['r', LANE]], [['a', ['streamingMessage', 'text'], 'Because']]]);
  const held = store.getValue();
  const before = { ...renders };

  // The producer restarted: its base is the value it recovered, equal to the held one.
  const recovered = structuredClone(held);
  await deliver(stream, store, [[['r', recovered]]]);
  assert.deepEqual(renders, before, 'an equal base renders nothing');
  assert.equal(store.getValue(), held);

  // Restarted again, having written a token the reader had not seen: only the answer renders.
  recovered.streamingMessage.text = 'Because the';
  await deliver(stream, store, [[['r', recovered]]]);
  assert.deepEqual(renders, { ...before, answer: before.answer + 1 });
  assert.equal(store.getValue().transcript, held.transcript);
  assert.match(JSON.stringify(root.toJSON()), /Because the/);

  // Following again after every user left (a new page view of the same store): the base it
  // joins with keeps the held parts, so the store's value keeps their identity.
  const value = store.getValue();
  await act(async () => root.unmount());
  await until('the follower to stop', () => store.follower === null);
  const release = store.retain();
  await until('a new connection', () => stream.open().length === 1);
  let calls = 0;
  const unsubscribe = store.subscribe(() => (calls += 1));
  await deliver(stream, store, [[['r', structuredClone(value)]]]);
  assert.equal(calls, 0, 'an equal base after a new join tells the store\'s listeners nothing');
  assert.equal(store.getValue(), value);
  unsubscribe();
  release();
  await until('the follower to stop', () => store.follower === null);
});

test('components following one URL share one follower, which stops when the last unmounts', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/s', stream.options);
  const seen = [];
  function Reader({ name }) {
    const n = useChord(store, (v) => v?.n);
    seen.push([name, n]);
    return h('span', null, String(n));
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h('div', null, h(Reader, { name: 'a', key: 'a' }), h(Reader, { name: 'b', key: 'b' })));
  });
  await until('a connection', () => stream.open().length === 1);
  assert.equal(store.users, 2);
  await deliver(stream, store, [[['r', { n: 1 }]]]);
  await act(async () => root.update(h('div', null, h(Reader, { name: 'a', key: 'a' }))));
  assert.equal(store.users, 1, 'b unmounted');
  await tick();
  assert.equal(stream.open().length, 1, 'still following for a');
  await deliver(stream, store, [[['s', ['n'], 2]]]);
  assert.deepEqual(seen.filter(([name]) => name === 'a').map(([, n]) => n), [undefined, 1, 1, 2]);
  await act(async () => root.unmount());
  await until('the follower to stop', () => stream.open().length === 0);
  assert.equal(stream.connections.length, 1, 'one connection in all');

  // A new user starts following again, from the latest base.
  await act(async () => {
    root = TestRenderer.create(h(Reader, { name: 'c' }));
  });
  await until('a second connection', () => stream.open().length === 1);
  assert.equal(stream.connections.length, 2);
  // A fresh start: it joined again with a catch-up read of the latest base.
  assert.equal(stream.fetches.filter((f) => f.url.endsWith('?offset=base')).length, 2, JSON.stringify(stream.fetches));
  assert.equal(stream.connections[1].from, '0000000000000000');
  await act(async () => root.unmount());
  await until('the follower to stop', () => stream.open().length === 0);
});

test('StrictMode\'s double effects do not reconnect', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/s', stream.options);
  function Reader() {
    return h('span', null, String(useChord(store, (v) => v?.n)));
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h(StrictMode, null, h(Reader)));
  });
  await until('a connection', () => stream.open().length === 1);
  await tick();
  assert.equal(stream.connections.length, 1, 'one connection despite subscribe, unsubscribe, subscribe');
  await deliver(stream, store, [[['r', { n: 7 }]]]);
  assert.equal(root.toJSON().children[0], '7');
  await act(async () => root.unmount());
  await until('the follower to stop', () => stream.open().length === 0);
});

test('linger keeps the follower through an unmount and a remount, then stops it', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/s', { ...stream.options, linger: 60_000 });
  function Reader() {
    return h('span', null, String(useChord(store, (v) => v?.n)));
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h(Reader));
  });
  await until('a connection', () => stream.open().length === 1);
  await deliver(stream, store, [[['r', { n: 1 }]]]);
  await act(async () => root.unmount());
  await tick();
  assert.equal(store.users, 0);
  assert.equal(stream.open().length, 1, 'lingering: still following');
  assert.equal(store.getStatus().following, true);
  await act(async () => {
    root = TestRenderer.create(h(Reader));
  });
  assert.equal(root.toJSON().children[0], '1', 'the remount shows the value at once');
  assert.equal(stream.connections.length, 1, 'no reconnection');
  // A retain counts as a user; its release counts once however often it is called.
  const release = store.retain();
  await act(async () => root.unmount());
  assert.equal(store.users, 1);
  release();
  release();
  assert.equal(store.users, 0, 'a release counts once');
  store.follower.stop();
});

test('a URL alone shares one follower per URL between components', async () => {
  const stream = fakeStream();
  const url = 'http://x/streams/by-url';
  const realFetch = globalThis.fetch;
  const renders = [];
  function Reader({ name }) {
    const value = useChord(url, (v) => v);
    renders.push([name, value]);
    return null;
  }
  try {
    // A store made for a bare URL uses follow's defaults (the global fetch, the SSE
    // transport): the catch-up read answers an empty stream, each live read an event stream
    // of one base.
    globalThis.fetch = async (input, init) => {
      if (!String(input).includes('live=')) return stream.options.fetch(input, { ...init, method: 'catch-up' });
      stream.fetches.push({ url: String(input), method: 'GET' });
      const body = new ReadableStream({
        start(controller) {
          const data = JSON.stringify([[['r', { hello: 'world' }]]]);
          controller.enqueue(new TextEncoder().encode(`event: data\ndata: ${data}\n\nevent: control\ndata: {"streamNextOffset":"0000000000000001","upToDate":true}\n\n`));
          init?.signal?.addEventListener('abort', () => controller.close(), { once: true });
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    };
    let root;
    await act(async () => {
      root = TestRenderer.create(h('div', null, h(Reader, { name: 'a' }), h(Reader, { name: 'b' })));
    });
    await act(async () => {
      await until('the value', () => renders.filter(([, v]) => v !== undefined).length === 2);
    });
    const gets = stream.fetches.filter((f) => f.method === 'GET');
    assert.equal(gets.length, 1, `one event stream for two components: ${JSON.stringify(stream.fetches)}`);
    assert.deepEqual(renders.at(-1)[1], { hello: 'world' });
    await act(async () => root.unmount());
  } finally {
    globalThis.fetch = realFetch;
  }
});

test('useChordStatus: connected, the last error, and stopping on an answer no retry changes', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/s', { ...stream.options, onError: () => {} });
  const statuses = [];
  function Status() {
    const status = useChordStatus();
    statuses.push(status);
    return null;
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h(ChordProvider, { store }, h(Status)));
  });
  await until('a connection', () => stream.open().length === 1);
  assert.equal(statuses.at(-1).connected, false);
  await deliver(stream, store, [[['r', { n: 0 }]]]);
  assert.equal(statuses.at(-1).connected, true);
  assert.equal(statuses.at(-1).error, null);
  assert.equal(statuses.at(-1).stats.batches, 1);
  assert.ok(Object.isFrozen(statuses.at(-1)), 'a status is a snapshot');

  await act(async () => {
    stream.cut(new Error('connection reset'));
    await until('the break', () => store.getStatus().stats.breaks === 1);
  });
  const broken = statuses.at(-1);
  assert.equal(broken.connected, false);
  assert.equal(broken.error?.message, 'connection reset', 'the error shows until live again');
  await act(async () => {
    await until('a resume', () => stream.open().length === 1);
    stream.send([[['s', ['n'], 1]]]);
    await until('live again', () => store.getStatus().connected);
  });
  assert.equal(statuses.at(-1).error, null, 'live again: no error');
  assert.equal(stream.connections[1].from, '0000000000000001', 'resumed from its offset');
  await act(async () => root.unmount());
  await until('the follower to stop', () => stream.open().length === 0);
});

test('a status selector renders only when what it selects changed', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/s', stream.options);
  let renders = 0;
  function Live() {
    useChordStatus(store, (s) => s.connected);
    renders += 1;
    return null;
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h(Live));
  });
  await until('a connection', () => stream.open().length === 1);
  await deliver(stream, store, [[['r', { n: 0 }]]]);
  const live = renders;
  for (let i = 1; i <= 5; i++) await deliver(stream, store, [[['s', ['n'], i]]]);
  assert.equal(renders, live, 'five batches, no change of `connected`, no render');
  await act(async () => root.unmount());
  await until('the follower to stop', () => stream.open().length === 0);
});

test('a selector building a new object renders only when `equals` says it changed', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/s', stream.options);
  const shallow = (a, b) => a === b || (a && b && Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((k) => Object.is(a[k], b[k])));
  let renders = 0;
  function Pair() {
    // A new object each call: without `equals` every batch would render it.
    const pair = useChord(store, (v) => ({ a: v?.a, b: v?.b }), { equals: shallow });
    renders += 1;
    return h('span', null, `${pair.a}/${pair.b}`);
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h(Pair));
  });
  await until('a connection', () => stream.open().length === 1);
  await deliver(stream, store, [[['r', { a: 1, b: 2, c: 0 }]]]);
  const base = renders;
  for (let i = 1; i <= 4; i++) await deliver(stream, store, [[['s', ['c'], i]]]);
  assert.equal(renders, base, '`c` changed, not the pair');
  await deliver(stream, store, [[['s', ['b'], 3]]]);
  assert.equal(renders, base + 1);
  assert.equal(root.toJSON().children[0], '1/3');
  await act(async () => root.unmount());
  await until('the follower to stop', () => stream.open().length === 0);
});

test('ChordProvider url= makes one store for its subtree; useChordStore and useChordFollow read it', async () => {
  const stream = fakeStream();
  let seenStore = null;
  function Inner() {
    seenStore = useChordStore();
    useChordFollow();
    return h('span', null, String(useChord((v) => v?.n)));
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h(ChordProvider, { url: 'http://x/streams/s', options: stream.options }, h(Inner)));
  });
  assert.ok(isChordStore(seenStore));
  assert.equal(seenStore.url, 'http://x/streams/s');
  await until('a connection', () => stream.open().length === 1);
  assert.equal(seenStore.users, 2, 'useChord and useChordFollow each hold it');
  await deliver(stream, seenStore, [[['r', { n: 5 }]]]);
  const first = seenStore;
  await act(async () => root.update(h(ChordProvider, { url: 'http://x/streams/s', options: stream.options }, h(Inner))));
  assert.equal(seenStore, first, 'the same store across renders');
  assert.equal(root.toJSON().children[0], '5');
  await act(async () => root.unmount());
  await until('the follower to stop', () => stream.open().length === 0);
});

