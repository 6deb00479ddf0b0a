// `durableStreamsTransport` ends when its signal aborts, whatever the client does: a client
// whose session settles `closed` only when its own read ends (the official client's
// long-poll fallback, until the poll's end) must not keep a follower's `stop()` waiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { durableStreamsTransport } from '../chord-replica.mjs';

/** A client whose session delivers one batch, then never closes. */
function stuckClient() {
  return {
    async stream() {
      let listener = null;
      return {
        subscribeJson(f) {
          listener = f;
          queueMicrotask(() => listener?.({ items: [[['r', { n: 1 }]]], offset: '0000000000000001' }));
          return () => {
            listener = null;
          };
        },
        closed: new Promise(() => {}),
        cancel() {},
      };
    },
  };
}

test('the transport ends when its signal aborts, though the session never closes', async () => {
  const controller = new AbortController();
  const chunks = durableStreamsTransport(stuckClient())({
    url: 'http://127.0.0.1:1/streams/s',
    offset: '-1',
    signal: controller.signal,
  });
  const first = await chunks.next();
  assert.deepEqual(first.value, { messages: [[['r', { n: 1 }]]], offset: '0000000000000001' });
  const pending = chunks.next();
  controller.abort();
  let timer;
  const outcome = await Promise.race([
    pending,
    new Promise((resolve) => {
      timer = setTimeout(() => resolve('still waiting'), 2000);
    }),
  ]);
  clearTimeout(timer);
  assert.deepEqual(outcome, { value: undefined, done: true });
});

test('a signal aborted before the session opens ends the transport at once', async () => {
  const controller = new AbortController();
  controller.abort();
  const chunks = durableStreamsTransport(stuckClient())({
    url: 'http://127.0.0.1:1/streams/s',
    offset: '-1',
    signal: controller.signal,
  });
  const seen = [];
  for await (const chunk of chunks) seen.push(chunk);
  assert.ok(seen.length <= 1, `at most the batch already delivered: ${JSON.stringify(seen)}`);
});
