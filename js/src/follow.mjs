// `follow`: keeps a replica current from a Durable Stream, resuming from its offset after
// every break.

import { fail } from './errors.mjs';
import { isBase } from './grammar.mjs';
import { checkBatchText, isBaseText } from './batch-text.mjs';
import { IN_PLACE } from './wire.mjs';
import { Replica } from './replica.mjs';
import { DEFAULT_MAX_EVENT } from './sse.mjs';
import { checkCredentials, credentialed, fatal, message, restarts, streamUrl } from './http.mjs';
import { LATEST_BASE, TEXTS, catchUp, sseTransport } from './transports.mjs';
import { sleep as wait } from './wait.mjs';


/** A follower's counters before anything happened (`follow`'s `stats`, and the stores' status). */
export const NO_STATS = Object.freeze({
  starts: 0,
  resumes: 0,
  batches: 0,
  bases: 0,
  bytes: 0,
  breaks: 0,
  lastBreak: null,
  errors: 0,
  lastError: null,
});

/**
 * Follows a chord stream served as a Durable Stream and keeps `replica` current.
 *
 * It joins with one catch-up read of the latest base and what follows it,
 * `GET ?offset=base`: the same URL for every joiner, answered under the server's cache
 * policy, so a cache in front (a browser's, a proxy's, a CDN's) answers many joiners with one
 * request to the server. It sends no `HEAD` first. Then it reads live (SSE) from the
 * offset that answer ends at: each `data` event is applied with the `control` event after
 * it, whose `streamNextOffset` it keeps. After any break (the connection drops, the server
 * ends the response) it reconnects after a short backoff and resumes from that offset with
 * the same decoder: it receives only the batches it missed, never a base batch again. It
 * starts over with a new catch-up only when the server answers 410 (the offset is before the
 * oldest base kept: it starts at the base that answer names) or 404, a batch does not
 * decode or apply, or an offset it was handed is not one (a `StreamEventError` of kind
 * `BadOffset`). An event, a line or a catch-up batch over `maxEvent` bytes (default
 * {@link DEFAULT_MAX_EVENT}) breaks the connection with a `StreamEventError` of kind
 * `TooLarge`, reported and retried like a dropped connection.
 *
 * `onEvent` hears `start` (a fresh start, its base applied) or `resume`, then
 * `live: true`, only once the connection's live read has answered (its transport called
 * `onOpen`: for the default one, an HTTP 200 event stream arrived; a transport that does not
 * call it, at its first chunk), not when the catch-up read ends: that answer may come from a
 * cache and be old, and only the live read from its offset says whether the server still
 * serves it (a 410 otherwise, and a start from the base the 410 names). `follower.offset`
 * is the offset the value is at from the catch-up's end on, so a break before the live read
 * answers resumes there; that connection's live read then says `start`.
 *
 * Errors reach the caller:
 * - a URL that is not absolute (with no page `location` to resolve it against) or not
 *   http(s), or an option of the wrong type, throws a `TypeError` at once;
 * - an answer no retry changes (a 4xx other than 404, 408, 410, 425, 429, or a response that
 *   is not an event stream) stops the follower: `onError` gets it with `stopped: true` and
 *   `done` rejects with it;
 * - a refused read (a `StreamHttpError` with `status` 401 or 403, `refused` true) is such an
 *   answer, unless `headers` is a function: then the credentials may change between tries
 *   (a token refreshed, a login), so it is retried with the backoff (`stopped: false`),
 *   calling `headers` again for each request;
 * - every retried error (the network, 5xx, a batch that does not decode or apply) goes to
 *   `onError` with `stopped: false`;
 * - a throwing `onChange` (or `onEvent`, or a subscription's selector or listener) goes to
 *   `onError` with `source: 'onChange'`; the batch has applied, and following goes on from
 *   the next one (no restart from the base).
 * Without `onError`, each distinct message is printed once: retried ones with
 * `console.warn` (again after the stream has delivered since), the others with
 * `console.error`.
 *
 * Credentials: `headers` (an object, or a function returning one, sync or async, called
 * again for every request, so a token can be refreshed) and `credentials` (`'omit'`,
 * `'same-origin'`, `'include'`: fetch's mode, `'include'` to send cookies to another
 * origin) go to every request the follower makes: the catch-up read it joins with, and
 * each connection of the transport, through the `fetch` it is given (`sseTransport`'s SSE
 * `GET`, the official client's catch-up and SSE requests). A credential-dependent answer
 * must not be shared by a cache: the server's cache policy says so (chord's read hook makes
 * reads `private` unless told otherwise). A token in the URL's query
 * (`...?token=...`) stays on every request, as the offsets are added after it.
 *
 * The handle's `subscribe(selector, listener)` is the replica's (see `Replica#subscribe`).
 * `onEvent`'s `batch` events carry the batch's decoded ops, whether it was a base batch, and
 * the new value. A batch the default transport kept as text keeps no ops: the event's `batch`
 * is decoded again from that text when first read (then kept by the event), so an `onEvent`
 * that never reads it costs what following without one costs.
 *
 * In TypeScript, `follow<Lane>(url)` (or a `Replica<Lane>` in `options.replica`) types the
 * follower's value, its `subscribe` and `onEvent`'s value (see chord-replica.d.ts).
 *
 * @param {string | URL} url the stream's URL, e.g. `http://127.0.0.1:8080/streams/lanes/main`
 *   (in a browser, `/streams/lanes/main` resolves against the page's location)
 * @param {FollowOptions} [options]
 * @returns {Follower}
 * @throws {TypeError} a URL or an option that can never work
 * @example
 * const replica = new Replica({ onChange: (value) => console.log(value) });
 * const follower = follow('http://127.0.0.1:8080/streams/lanes/main', { replica });
 * // Called only when a batch changed the lane's status (values are copy on write):
 * const unsubscribe = follower.subscribe((lane) => lane.status, (status) => console.log(status));
 * // later: unsubscribe(); follower.stop();
 */
export function follow(url, options = {}) {
  const href = streamUrl(url);
  if (options.replica !== undefined && !(options.replica instanceof Replica)) {
    throw new TypeError('follow: options.replica must be a Replica');
  }
  for (const name of ['fetch', 'transport', 'onEvent', 'onError']) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new TypeError(`follow: options.${name} must be a function`);
    }
  }
  checkCredentials('follow', options);
  const replica = options.replica ?? new Replica();
  const transport = options.transport ?? sseTransport;
  const plainFetch = options.fetch ?? globalThis.fetch;
  if (typeof plainFetch !== 'function') {
    throw new TypeError('follow: no fetch here (Node 18 or later has one): pass options.fetch');
  }
  // Every request the follower makes, the transport's included, carries its credentials.
  const fetchImpl = credentialed(plainFetch, options);
  const renewable = typeof options.headers === 'function';
  const maxEvent = options.maxEvent ?? DEFAULT_MAX_EVENT;
  if (!Number.isSafeInteger(maxEvent) || maxEvent < 1) {
    throw new TypeError(`follow: options.maxEvent must be a positive integer of bytes, found ${maxEvent}`);
  }
  const min = options.backoffMin ?? 50;
  const max = Math.max(min, options.backoffMax ?? 2000);
  const controller = new AbortController();
  options.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  const stats = { ...NO_STATS };

  // What the console has been told, when there is no `onError`: stream errors until the
  // stream delivers again, the app's errors for the follower's life.
  const told = { stream: new Set(), onChange: new Set() };
  const report = (error, info) => {
    stats.errors += 1;
    stats.lastError = message(error);
    if (options.onError) {
      try {
        options.onError(error, info);
      } catch (e) {
        console.error(`chord-replica: onError threw while reporting an error of ${href}:`, e);
      }
      return;
    }
    const seen = told[info.source];
    const key = message(error);
    if (seen.has(key)) return;
    seen.add(key);
    const what = key.includes(href) ? key : `${href}: ${key}`;
    if (info.source === 'onChange') {
      console.error(`chord-replica: onChange threw; the batch applied, following ${href} goes on:`, error);
    } else if (!info.stopped) {
      const next = info.restart ? 'starting over from the latest base' : 'retrying';
      console.warn(`chord-replica: ${what}; ${next} (pass onError to follow() to handle errors)`);
    } else {
      console.error(`chord-replica: ${what}; stopped (no retry can succeed)`);
    }
  };
  const deliver = (event) => {
    if (!options.onEvent) return;
    try {
      options.onEvent(event);
    } catch (e) {
      report(e, { source: 'onChange', stopped: false, restart: false });
    }
  };
  const emit = (type, detail) => deliver({ type, ...detail });
  /**
   * A batch's event. Its `batch` (the decoded ops) is a getter when the ops were not kept:
   * decoded from the batch's text at the first read (and then kept by the event), so an
   * `onEvent` that never reads it holds no decoded ops.
   */
  const emitBatch = (ops, later, base) => {
    const value = replica.value;
    if (later === null) {
      deliver({ type: 'batch', batch: ops, base, value });
      return;
    }
    let decoded = null;
    deliver({
      type: 'batch',
      get batch() {
        if (decoded === null) {
          decoded = later();
          later = null;
        }
        return decoded;
      },
      base,
      value,
    });
  };
  const follower = {
    replica,
    stats,
    url: href,
    offset: null,
    stop() {
      controller.abort();
    },
    subscribe: (selector, listener) => replica.subscribe(selector, listener),
    done: null,
  };
  // A stop ends the pause: the loop then sees the signal aborted.
  const sleep = (ms) => wait(ms, controller.signal).catch(() => {});

  /**
   * Applies one batch, returning its decoded ops (`ops`, kept only for an `onEvent`, or
   * `later`, a function that decodes them from the batch's text) and whether it was a base
   * batch; an error of `onChange` or a subscription is reported, not thrown.
   */
  function applyOne(batch, inPlace, text) {
    let ops = null;
    let later = null;
    let base = false;
    try {
      replica[IN_PLACE](batch, {
        inPlace,
        text,
        // A batch streamed from its text keeps no ops for `onEvent`: an event's `batch` is
        // decoded again from the text if the callback reads it, so that a callback that
        // does not (the React store's) costs what following without one costs.
        wantOps: options.onEvent === undefined ? false : text ? 'lazy' : true,
        decoded: (decoded, isBaseBatch, decodeLater) => {
          ops = decoded;
          later = decodeLater;
          base = isBaseBatch;
        },
      });
    } catch (error) {
      // A failed batch leaves the replica failed; otherwise it applied and `onChange` threw.
      if (replica.failed !== null) throw error;
      report(error, { source: 'onChange', stopped: false, restart: false });
    }
    return { ops, later, base };
  }

  /**
   * Where the next fresh start reads from: the latest base (`offset=base`, the URL every
   * joiner shares), or after a 410 the base that answer named (a cache may hold an answer
   * to `offset=base` older than what the server keeps; the named base's own URL is newer).
   */
  let startAt = LATEST_BASE;

  /** Applies a fresh start's batch text, the first of which must be a base batch. */
  function applyText(text, first) {
    checkBatchText(text);
    if (first) {
      if (!isBaseText(text)) throw fail('NotBase');
      replica.reset({ keepValue: true });
    }
    const { ops, later, base } = applyOne(text, false, true);
    stats.batches += 1;
    if (base) stats.bases += 1;
    if (options.onEvent) emitBatch(ops, later, base);
  }

  /**
   * Whether the follower has a value from a fresh start that it has not announced yet: a
   * catch-up read applied, its live read not yet answered. The next live read that answers
   * announces it as a `start`, not a `resume`, even if it is a later connection's.
   */
  let unannounced = false;

  async function connection() {
    const signal = controller.signal;
    const fresh = follower.offset === null;
    const onBytes = (n) => {
      stats.bytes += n;
    };
    // A fresh start's first batch must be a base batch, and resets the replica's decoder; the
    // value it held stays, for the base to keep the parts it did not change.
    let first = fresh;
    let delivered = false;
    // Whether the live read has answered: its transport called `onOpen` (an HTTP 200 event
    // stream), or, from a transport that does not, yielded its first chunk.
    let open = false;
    /**
     * Says `start` (or `resume`) and `live: true` once both are true: the live read has
     * answered, and the follower has a value (the catch-up's, or the live read's first base).
     * Not before: a catch-up answered from a cache may be old, and only the live read tells
     * whether its offset is still served (a 410 otherwise).
     */
    const announce = () => {
      if (delivered || !open || follower.offset === null) return;
      delivered = true;
      told.stream.clear();
      const start = fresh || unannounced;
      unannounced = false;
      if (start) stats.starts += 1;
      else stats.resumes += 1;
      emit(start ? 'start' : 'resume', { offset: follower.offset });
      emit('live', { live: true });
    };
    const onOpen = () => {
      if (signal.aborted || open) return;
      open = true;
      announce();
    };
    let offset = follower.offset;
    if (fresh) {
      // Catch up with one cacheable GET, then read live from where it ends.
      const from = startAt;
      startAt = LATEST_BASE;
      emit('open', { fresh, offset: from });
      const read = catchUp({ url: href, offset: from, signal, fetch: fetchImpl, maxEvent, onBytes });
      let step;
      while (!(step = await read.next()).done) {
        applyText(step.value, first);
        first = false;
      }
      offset = step.value;
      // The value is at that offset: a break from here resumes there. No base yet (an
      // empty stream): the live read brings the first.
      if (!first) {
        follower.offset = offset;
        unannounced = true;
      }
    } else {
      emit('open', { fresh, offset });
    }
    for await (const chunk of transport({ url: href, offset, signal, fetch: fetchImpl, maxEvent, onBytes, onOpen })) {
      // Batches kept as text (the default transport's) stream into the replica op by op.
      const { offset: next, [IN_PLACE]: inPlace, [TEXTS]: texts } = chunk;
      const messages = texts ?? chunk.messages;
      for (const batch of messages) {
        if (first) {
          if (!(texts ? isBaseText(batch) : isBase(batch))) throw fail('NotBase');
          replica.reset({ keepValue: true });
        }
        first = false;
        const { ops, later, base } = applyOne(batch, inPlace === true, texts !== undefined);
        stats.batches += 1;
        if (base) stats.bases += 1;
        if (options.onEvent) emitBatch(ops, later, base);
      }
      // A fresh start that has no base yet waits for one, keeping no offset.
      if (first) continue;
      follower.offset = next;
      open = true;
      announce();
    }
    return delivered;
  }

  follower.done = (async () => {
    // No callback runs before `follow` has returned its handle (an `onEvent` may use it).
    await null;
    let backoff = min;
    while (!controller.signal.aborted) {
      let delivered = false;
      let why = 'ended';
      try {
        delivered = await connection();
      } catch (error) {
        if (controller.signal.aborted) break;
        why = error;
        if (fatal(error, renewable)) {
          report(error, { source: 'stream', stopped: true, restart: false });
          emit('live', { live: false });
          throw error;
        }
        // Starting over from a base means a value was held; before the first one it is a retry.
        const restart = restarts(error) && (stats.starts > 0 || follower.offset !== null);
        if (restarts(error)) {
          follower.offset = null;
          // A 410 names the latest base the server keeps: start there.
          if (error?.status === 410 && error.baseOffset) startAt = error.baseOffset;
        }
        report(error, { source: 'stream', stopped: false, restart });
      }
      if (controller.signal.aborted) break;
      stats.breaks += 1;
      stats.lastBreak = why === 'ended' ? 'ended' : message(why);
      emit('break', { error: why === 'ended' ? null : why, restart: follower.offset === null });
      emit('live', { live: false });
      if (delivered) backoff = min;
      await sleep(backoff * (0.5 + Math.random()));
      backoff = Math.min(backoff * 2, max);
    }
  })();
  return follower;
}
