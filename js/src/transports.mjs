// Transports: what `follow` reads a stream through, over `fetch` and SSE (the default) or
// over the official `@durable-streams/client`.

import { fail, isObject, jsonType } from './errors.mjs';
import { ArraySplitter, batchTexts } from './batch-text.mjs';
import { IN_PLACE } from './wire.mjs';
import { DEFAULT_MAX_EVENT, EventParser, StreamEventError, validOffset } from './sse.mjs';
import { StreamHttpError, refuse, withQuery } from './http.mjs';

/** The texts of a chunk's batches, when its transport kept them as text. */
export const TEXTS = Symbol('batch texts');

/**
 * A chunk whose batches are texts: `follow` streams each into its replica; `messages`
 * parses them for any other reader, when first asked.
 */
function textChunk(texts, offset) {
  let parsed = null;
  return {
    get messages() {
      parsed ??= texts.map((text) => JSON.parse(text));
      return parsed;
    },
    offset,
    [TEXTS]: texts,
  };
}

/**
 * Throws, its body let go, for a response that is not OK (its `StreamHttpError`) or not of
 * the content type `type` (a `StreamHttpError` with `notEventStream`: not a stream's URL).
 */
async function expect(response, url, type) {
  if (!response.ok) await refuse(response, url);
  const found = response.headers.get('content-type') ?? '';
  if (found.startsWith(type)) return;
  const error = new StreamHttpError(response.status, url);
  error.message = `${url} answered ${response.status} with ${found || 'no content type'}, not ${type}: is it a stream's URL?`;
  error.notEventStream = true;
  await response.body?.cancel().catch(() => {});
  throw error;
}

/**
 * chord's offset for "the latest base": `GET ?offset=base` reads from the latest base batch
 * to the tail, the same URL for every joiner, so a cache in front answers them all.
 */
export const LATEST_BASE = 'base';

/**
 * A catch-up read, `GET url?offset=...` (no `live`): the batches of its JSON array body,
 * each text yielded as soon as it has arrived (a body of any length is read holding one
 * batch), then, returned, the response's `stream-next-offset`. The request is an ordinary
 * cacheable `GET` (fetch's default cache mode, no headers of its own but `accept`), so a
 * browser's cache, a proxy's or a CDN's can answer it; what it returns is the same for every
 * reader of that URL.
 *
 * Errors: a response that is not OK throws its `StreamHttpError` before a byte of its body
 * is read (with `baseOffset`, the `chord-base-offset` it names, when it has one: a 410 says
 * where the latest base is); one that is not JSON or has no valid `stream-next-offset`
 * throws before its body is read too; a batch over `maxEvent` characters is a
 * `StreamEventError` of kind `TooLarge`, and a body that is not a JSON array (or ends before
 * its array does) a `Json` `ChordError`, thrown when it is read there.
 */
export async function* catchUp({
  url,
  offset,
  signal,
  fetch: fetchImpl = globalThis.fetch,
  onBytes,
  maxEvent = DEFAULT_MAX_EVENT,
}) {
  const response = await fetchImpl(withQuery(url, { offset }), {
    headers: { accept: 'application/json' },
    signal,
  });
  await expect(response, url, 'application/json');
  const next = response.headers.get('stream-next-offset');
  if (!validOffset(next)) {
    await response.body?.cancel().catch(() => {});
    const shown = next === null ? 'missing' : JSON.stringify(next.slice(0, 64));
    throw new StreamEventError('BadOffset', `a catch-up read's stream-next-offset is not an offset: ${shown}`);
  }
  const tooLarge = (max) => new StreamEventError('TooLarge', `a batch of a catch-up read is larger than ${max} characters`, { max });
  const splitter = new ArraySplitter(maxEvent, tooLarge);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const reader = response.body.getReader();
  const stop = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', stop, { once: true });
  const decode = (bytes, stream) => {
    try {
      return utf8.decode(bytes, { stream });
    } catch {
      throw new StreamEventError('NotUtf8', 'a catch-up read\'s body is not UTF-8');
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      onBytes?.(value.byteLength);
      yield* splitter.push(decode(value, true));
    }
    yield* splitter.push(decode(undefined, false));
    splitter.end();
    return next;
  } finally {
    signal?.removeEventListener('abort', stop);
    reader.cancel().catch(() => {});
  }
}

/**
 * The default transport: `fetch` with `live=sse`, parsed here by an {@link EventParser}
 * (browsers and Node 18+). Yields each `data` event's messages together with the
 * `streamNextOffset` of the `control` event after it.
 *
 * `maxEvent` (default {@link DEFAULT_MAX_EVENT}) bounds a line and an event's data in bytes;
 * a larger one ends the transport with a `StreamEventError` of kind `TooLarge`. A control
 * event that is not a JSON object is a `Control` error; one whose `streamNextOffset` is missing or
 * not a valid offset ({@link validOffset}), a `BadOffset` error.
 *
 * `onOpen` is called once the response has arrived and is an event stream (before its body
 * is read): `follow` says it is live then.
 *
 * Being `fetch`, not `EventSource`, it can send an `Authorization` header: under `follow`
 * the `fetch` it is given adds the follower's `headers` and `credentials`. A response that
 * is not OK (a refusal's 401 or 403) throws a `StreamHttpError` before a byte of its body
 * is read.
 * @type {Transport}
 */
export async function* sseTransport({
  url,
  offset,
  signal,
  fetch: fetchImpl = globalThis.fetch,
  onBytes,
  onOpen,
  maxEvent = DEFAULT_MAX_EVENT,
}) {
  const parser = new EventParser({ maxEvent });
  const response = await fetchImpl(withQuery(url, { offset, live: 'sse' }), {
    headers: { accept: 'text/event-stream' },
    signal,
    cache: 'no-store',
  });
  await expect(response, url, 'text/event-stream');
  // The live read has answered: an event stream from the offset asked for, which a 410 would
  // have refused. A read at the tail may send nothing more until the next batch.
  onOpen?.();
  const reader = response.body.getReader();
  // A fetch that does not end its body on abort still stops here.
  const stop = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', stop, { once: true });
  let pending = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onBytes?.(value.byteLength);
      for (const { name, data } of parser.push(value)) {
        if (name === 'data') {
          if (pending !== null) throw fail('Json', { reason: 'two data events without a control event' });
          pending = data;
        } else if (name === 'control') {
          let control;
          try {
            control = JSON.parse(data);
          } catch (e) {
            throw new StreamEventError('Control', `a control event is not JSON: ${e.message}`);
          }
          if (!isObject(control)) throw new StreamEventError('Control', 'a control event is not a JSON object');
          const next = Object.hasOwn(control, 'streamNextOffset') ? control.streamNextOffset : undefined;
          if (!validOffset(next)) {
            const shown = next === undefined ? 'missing' : typeof next === 'string' ? JSON.stringify(next.slice(0, 64)) : jsonType(next);
            throw new StreamEventError('BadOffset', `a control event's streamNextOffset is not an offset: ${shown}`);
          }
          let messages = [];
          let texts = null;
          if (pending !== null) {
            // An array of batches (what chord sends) is split into their texts, which a
            // Replica streams op by op; anything else is parsed whole, as it cannot be read
            // as batches.
            texts = batchTexts(pending);
            if (texts === null) {
              try {
                messages = JSON.parse(pending);
              } catch (e) {
                throw fail('Json', { reason: e.message });
              }
            }
            pending = null;
          }
          if (texts === null) {
            // The batches were parsed here and are held nowhere else: they decode in place.
            yield { messages, offset: next, [IN_PLACE]: true };
          } else {
            yield textChunk(texts, next);
          }
        }
      }
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    reader.cancel().catch(() => {});
  }
}

/** A client's error with an HTTP status as a `StreamHttpError`, which `follow` acts on. */
function httpError(error, url) {
  const status = error?.status;
  if (typeof status !== 'number' || error instanceof StreamHttpError) return error;
  return new StreamHttpError(status, String(url));
}

/**
 * A transport over the official client, `@durable-streams/client` (pass the imported
 * module; chord does not depend on it).
 *
 * The follower's `headers` and `credentials` reach every request the client makes (its
 * catch-up `GET`, each SSE connection, its own retries) through the `fetch` the transport
 * is given, which adds them, resolving a `headers` function again for each request. The
 * client's own `headers` option (a record of strings or per-header functions, sync or async,
 * called per request) and `params` are not used: a `fetch` is the one way to give it
 * `credentials`, which it has no option for. An error with a status (the client's
 * `FetchError` or `DurableStreamError`, e.g. a 401) becomes a `StreamHttpError`. It does not
 * call `onOpen`: the client answers its own catch-up read before its live one, so `follow`
 * takes it to be live at its first chunk.
 * @param {{ stream: Function }} client `import * as client from '@durable-streams/client'`
 * @returns {Transport}
 */
export function durableStreamsTransport(client) {
  return async function* ({ url, offset, signal, fetch: fetchImpl }) {
    const queue = [];
    let wake = null;
    let finished = false;
    let failure = null;
    let session;
    try {
      session = await client.stream({
        url: String(url),
        offset,
        live: 'sse',
        json: true,
        signal,
        ...(fetchImpl ? { fetch: fetchImpl } : {}),
        // Every error ends the session: `follow` decides whether to resume or restart.
        onError: (error) => {
          failure = error;
        },
      });
    } catch (error) {
      throw httpError(error, url);
    }
    const unsubscribe = session.subscribeJson((batch) => {
      queue.push({ messages: batch.items, offset: batch.offset });
      wake?.();
    });
    session.closed.then(
      () => {
        finished = true;
        wake?.();
      },
      (error) => {
        failure ??= error;
        finished = true;
        wake?.();
      },
    );
    // A stop (the signal aborted) ends the wait at once: the client settles `closed` only
    // when its own read ends, and a generator waiting here cannot be returned from
    // meanwhile.
    const stop = () => {
      finished = true;
      wake?.();
    };
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });
    try {
      for (;;) {
        while (queue.length > 0) yield queue.shift();
        if (finished) break;
        await new Promise((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
      if (failure) throw httpError(failure, url);
    } finally {
      signal?.removeEventListener('abort', stop);
      unsubscribe();
      session.cancel();
    }
  };
}
