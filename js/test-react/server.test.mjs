// The React binding (`chord-replica/react`) rendered on a server (react-dom/server), and its
// refusals of bad input. A file of its own: one renderer per process.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { ChordProvider, createChordStore, isChordStore, useChord, useChordStatus } from '../react.mjs';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A fake stream that counts what is asked of it (a server render must ask nothing). */
function fakeStream() {
  const fetches = [];
  const connections = [];
  return {
    fetches,
    connections,
    options: {
      fetch: async (url) => {
        fetches.push(String(url));
        return new Response(null, { status: 200, headers: { 'chord-base-offset': '-1' } });
      },
      // eslint-disable-next-line require-yield
      async *transport(request) {
        connections.push(request);
      },
    },
  };
}

test('a server render selects from initialValue and fetches nothing', async () => {
  const stream = fakeStream();
  const store = createChordStore('http://x/streams/s', { ...stream.options, initialValue: { title: 'from the server' } });
  function Title() {
    return h('h1', null, useChord((v) => v?.title));
  }
  function Connection() {
    return h('i', null, useChordStatus((s) => (s.connected ? 'live' : 'offline')));
  }
  const html = renderToString(h(ChordProvider, { store }, h(Title), h(Connection)));
  assert.equal(html, '<h1>from the server</h1><i>offline</i>');
  // A bare URL during a server render: nothing followed either.
  function ByUrl() {
    return h('p', null, String(useChord('http://x/streams/other', (v) => v)));
  }
  assert.equal(renderToString(h(ByUrl)), '<p>undefined</p>');
  await tick();
  assert.equal(stream.fetches.length, 0, 'nothing fetched');
  assert.equal(stream.connections.length, 0, 'nothing followed');
  assert.equal(store.users, 0);
});

test('bad input throws a TypeError that says what is wrong', async () => {
  assert.throws(() => createChordStore(42), { name: 'TypeError', message: /URL must be a string or a URL, found number/ });
  assert.throws(() => createChordStore('http://x/s', { linger: -1 }), { name: 'TypeError', message: /linger/ });
  assert.throws(() => createChordStore('http://x/s', { onError: 'no' }), { name: 'TypeError', message: /onError must be a function/ });
  assert.throws(() => createChordStore('http://x/s', { replica: {} }), { name: 'TypeError', message: /replica/ });
  assert.equal(isChordStore({}), false);
  assert.equal(isChordStore(null), false);
  const render = (element) => () => renderToString(element);
  function BadSource() {
    useChord(42, (v) => v);
    return null;
  }
  assert.throws(render(h(BadSource)), { name: 'TypeError', message: /source must be a stream URL or a store.*found number/ });
  function NoProvider() {
    useChord((v) => v);
    return null;
  }
  assert.throws(render(h(NoProvider)), /no <ChordProvider> above this component/);
  function NoStatusProvider() {
    useChordStatus();
    return null;
  }
  assert.throws(render(h(NoStatusProvider)), /useChordStatus: no <ChordProvider>/);
  function BadSelector() {
    useChord(createChordStore('http://x/s'), 'transcript');
    return null;
  }
  assert.throws(render(h(BadSelector)), { name: 'TypeError', message: /selector must be a function/ });
  assert.throws(render(h(ChordProvider, {}, null)), { name: 'TypeError', message: /give a store or a url/ });
  assert.throws(render(h(ChordProvider, { store: {} }, null)), { name: 'TypeError', message: /createChordStore/ });
});
