// chord-replica/ai-sdk: the Vercel AI SDK's `useChat` over chord's AI SDK door (Rust
// `chord::ai_sdk::AiSdk`), with runs that resume where they broke and a typed replica of the
// run's state.
//
//   import { useChat } from '@ai-sdk/react';
//   import { ChordChatTransport, createChatState } from 'chord-replica/ai-sdk';
//   import { useChord } from 'chord-replica/react';
//
//   const transport = new ChordChatTransport({ api: '/api/chat' });
//   const state = createChatState();
//   function Chat() {
//     const { messages, sendMessage } = useChat({ transport, resume: true, onData: state.onData });
//     const answer = useChord(state, (s) => s?.answer); // renders when the answer changed
//     ...
//   }
//
// Nothing here imports `ai` or React: `ai` (7.0.x) is an optional peer dependency, used for
// its types only.

import { apply } from './src/apply.mjs';
import { keepEqualParts } from './src/replica.mjs';
import { NO_STATS } from './src/follow.mjs';
import { DEFAULT_MAX_EVENT, EventParser } from './src/sse.mjs';
import { sleep } from './src/wait.mjs';

/** The chunks after which a run's stream is over. */
const TERMINAL = new Set(['finish', 'error', 'abort']);

/** Statuses worth asking again for: the server is restarting, overloaded or timed out. */
const RETRIED_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/** How much of a refusal's text an error message quotes. */
const MAX_QUOTED = 500;

/**
 * A request chord's server refused (or answered with something other than an event
 * stream): `status` and the server's text (`body`, at most 500 characters) are in the
 * message and on the error.
 */
export class ChordChatError extends Error {
  /**
   * @param {string} message
   * @param {{ status?: number, body?: string, url?: string, cause?: unknown }} [info]
   */
  constructor(message, info = {}) {
    super(message, info.cause === undefined ? undefined : { cause: info.cause });
    this.name = 'ChordChatError';
    this.status = info.status;
    this.body = info.body ?? '';
    this.url = info.url ?? '';
  }
}

/**
 * A run's stream that was cut and could not be resumed within the retry policy. It is a
 * `TypeError` whose message starts with `network`, which is how the AI SDK's `Chat` tells a
 * dropped connection from a failure: it keeps the partial message and resumes it (on the
 * page becoming visible again, or `resumeStream()`), and this transport then continues it
 * exactly, after `lastEventId`.
 */
export class ChordStreamCutError extends TypeError {
  /**
   * @param {string} message
   * @param {{ chatId: string, lastEventId: string, attempts: number, cause?: unknown }} info
   */
  constructor(message, info) {
    super(message, info.cause === undefined ? undefined : { cause: info.cause });
    this.name = 'ChordStreamCutError';
    this.chatId = info.chatId;
    this.lastEventId = info.lastEventId;
    this.attempts = info.attempts;
  }
}

const isAbort = (error) => error?.name === 'AbortError';

/** A value, or what a (sync or async) function of no arguments returns. */
const resolve = async (x) => (typeof x === 'function' ? x() : x);

/** Headers (an object, a `Headers`, pairs, or nothing) as a plain object of lowercase names. */
function plainHeaders(init) {
  const out = {};
  if (init === undefined || init === null) return out;
  new Headers(init).forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** `path` added to `url`'s path, before its query or fragment (as the AI SDK does). */
function appendPath(url, path) {
  const cut = url.search(/[?#]/);
  const head = cut === -1 ? url : url.slice(0, cut);
  const tail = cut === -1 ? '' : url.slice(cut);
  return `${head.endsWith('/') ? head.slice(0, -1) : head}${path}${tail}`;
}

/** An error for a response that is not OK, its text quoted. */
async function refusal(response, url, what) {
  const text = await response.text().catch(() => '');
  const body = text.slice(0, MAX_QUOTED);
  return new ChordChatError(`${what} ${url} answered HTTP ${response.status}${body === '' ? '' : `: ${body}`}`, {
    status: response.status,
    body,
    url,
  });
}

/**
 * Per `api`, per chat: the last SSE id handed on and whether its stream ended cut (handed to
 * the chat as a dropped connection, which the SDK resumes onto the message it kept). An
 * entry is deleted at a terminal chunk, an abort, a new POST, or a failure the SDK does not
 * resume, so the map holds the chats with a run being read or cut. Shared by the transports
 * of one `api`, so that a transport made anew at each render (`useChat({ transport: new
 * ChordChatTransport() })`, which the SDK reads at each request) resumes what an earlier one
 * read.
 */
const HELD = new Map();

/** The chats held for `api`. */
function heldFor(api) {
  let chats = HELD.get(api);
  if (chats === undefined) {
    chats = new Map();
    HELD.set(api, chats);
  }
  return chats;
}

/**
 * The AI SDK's `ChatTransport` for chord's `useChat` door. See `ai-sdk.d.ts` for the
 * options and the README's "Vercel AI SDK" section for how each kind of break resumes.
 */
export class ChordChatTransport {
  /**
   * A resumed stream continues the response the chat holds (after `Last-Event-ID`), or,
   * for a chat that holds none, is the run from its start under its own message id, which
   * the SDK starts afresh on (its `start` chunk's `messageId` differs): never a replay onto
   * a message already built.
   */
  resumeStreamIsReplay = false;

  #api;
  #fetch;
  #headers;
  #body;
  #credentials;
  #attempts;
  #delay;
  #maxDelay;
  #maxEvent;
  #onReconnect;
  /** This transport's entries in {@link HELD}, by chat id. */
  #chats;

  /** @param {import('./ai-sdk.d.ts').ChordChatTransportOptions} [options] */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError('ChordChatTransport: options must be an object');
    }
    const {
      api = '/api/chat',
      fetch,
      headers,
      body,
      credentials,
      retry = {},
      maxEvent = DEFAULT_MAX_EVENT,
      onReconnect,
    } = options;
    if (typeof api !== 'string' || api === '') throw new TypeError('ChordChatTransport: api must be a non-empty string');
    if (fetch !== undefined && typeof fetch !== 'function') throw new TypeError('ChordChatTransport: fetch must be a function');
    if (onReconnect !== undefined && typeof onReconnect !== 'function') {
      throw new TypeError('ChordChatTransport: onReconnect must be a function');
    }
    if (retry === null || typeof retry !== 'object') throw new TypeError('ChordChatTransport: retry must be an object');
    const { attempts = 8, delay = 100, maxDelay = 5000 } = retry;
    for (const [name, value] of [['retry.attempts', attempts], ['retry.delay', delay], ['retry.maxDelay', maxDelay]]) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new TypeError(`ChordChatTransport: ${name} must be a non-negative integer, found ${value}`);
      }
    }
    if (!Number.isSafeInteger(maxEvent) || maxEvent < 1) {
      throw new TypeError(`ChordChatTransport: maxEvent must be a positive integer of bytes, found ${maxEvent}`);
    }
    this.#api = api;
    this.#fetch = fetch;
    this.#headers = headers;
    this.#body = body;
    this.#credentials = credentials;
    this.#attempts = attempts;
    this.#delay = delay;
    this.#maxDelay = Math.max(delay, maxDelay);
    this.#maxEvent = maxEvent;
    this.#onReconnect = onReconnect;
    this.#chats = heldFor(api);
  }

  /** The last SSE event id handed on for `chatId`'s run being read or cut (at this `api`), or `undefined`. */
  lastEventId(chatId) {
    return this.#chats.get(chatId)?.lastId;
  }

  /**
   * Posts the chat's last message (`{ ...body, id, messages: [last], trigger, messageId }`)
   * and returns the run's chunks, resumed by itself across dropped connections.
   */
  async sendMessages({ chatId, messages, trigger, messageId, abortSignal, headers, body }) {
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new TypeError('ChordChatTransport.sendMessages: messages must be a non-empty array');
    }
    const call = { headers, body };
    const request = await this.#request(call);
    const payload = {
      ...request.body,
      id: chatId,
      // chord's server reads the last user message only: the chat's history is its log.
      messages: [messages[messages.length - 1]],
      trigger,
      messageId,
    };
    // A new run of the chat: what was held for the last one is forgotten.
    this.#chats.delete(chatId);
    const fetch = this.#fetch ?? globalThis.fetch;
    // Not sent again when it fails: it may have started a run (a second POST would be a 409).
    const response = await fetch(this.#api, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...request.headers },
      body: JSON.stringify(payload),
      credentials: request.credentials,
      signal: abortSignal,
    });
    if (!response.ok) throw await refusal(response, this.#api, 'POST');
    if (response.body === null) throw new ChordChatError(`POST ${this.#api} answered HTTP ${response.status} with no body`, { status: response.status, url: this.#api });
    return this.#stream(chatId, response, '', call, abortSignal);
  }

  /**
   * The chat's run in progress, or `null` (the server's `204`: none, or nothing after the
   * id sent). After a stream that ended cut (a {@link ChordStreamCutError}, which the SDK
   * resumes onto the message it kept; of any transport of this `api`), it asks for the
   * chunks after that stream's last id; otherwise for the run from its start.
   */
  async reconnectToStream({ chatId, abortSignal, headers, body }) {
    const held = this.#chats.get(chatId);
    const lastId = held?.cut === true ? held.lastId : '';
    const call = { headers, body };
    const first = await this.#open(chatId, lastId, call, abortSignal, { failures: 0, cause: undefined });
    if (first === null) {
      this.#chats.delete(chatId);
      return null;
    }
    return this.#stream(chatId, first, lastId, call, abortSignal);
  }

  /**
   * The headers, body and credentials of a request: the transport's (each resolved again for
   * every request, so a function can refresh a token), then the call's.
   */
  async #request({ headers, body }) {
    const [ownHeaders, ownBody, credentials] = await Promise.all([
      resolve(this.#headers),
      resolve(this.#body),
      resolve(this.#credentials),
    ]);
    return {
      headers: { ...plainHeaders(ownHeaders), ...plainHeaders(headers) },
      body: { ...ownBody, ...body },
      credentials,
    };
  }

  #streamUrl(chatId) {
    if (typeof chatId !== 'string' || chatId === '' || chatId === '.' || chatId === '..') {
      throw new TypeError(`ChordChatTransport: the chat id ${JSON.stringify(chatId)} cannot be a URL's path segment`);
    }
    return appendPath(this.#api, `/${encodeURIComponent(chatId)}/stream`);
  }

  /**
   * `GET {api}/{chatId}/stream` (after `lastId` when not empty) until an event stream
   * answers: its response, or `null` for a `204`. A network failure or a status worth
   * asking again for is retried after a backoff while `tries.failures` (the failures in a
   * row of the cut being resumed, counted here too) stay within the attempts; past them it
   * throws a {@link ChordStreamCutError}, and at once a {@link ChordChatError} for any
   * other refusal (a 4xx: `410` for an id whose records were compacted away, `400` for one
   * the server does not know; a `401` or `403` only when the headers are not a function).
   */
  async #open(chatId, lastId, call, signal, tries) {
    const url = this.#streamUrl(chatId);
    const fetch = this.#fetch ?? globalThis.fetch;
    for (;;) {
      if (tries.failures > 0) {
        if (tries.failures > this.#attempts) {
          const cause = tries.cause;
          throw new ChordStreamCutError(
            `network: the stream of chat ${JSON.stringify(chatId)} was cut${lastId === '' ? '' : ` after event ${lastId}`} and could not be resumed in ${this.#attempts} attempts${cause === undefined ? '' : `: ${cause?.message ?? cause}`}`,
            { chatId, lastEventId: lastId, attempts: this.#attempts, cause },
          );
        }
        await sleep(Math.min(this.#maxDelay, this.#delay * 2 ** (tries.failures - 1)), signal);
        this.#onReconnect?.({ chatId, lastEventId: lastId, attempt: tries.failures, error: tries.cause });
      }
      const request = await this.#request(call);
      const headers = { ...request.headers, accept: 'text/event-stream' };
      if (lastId !== '') headers['last-event-id'] = lastId;
      let response;
      try {
        response = await fetch(url, { method: 'GET', headers, credentials: request.credentials, signal });
      } catch (error) {
        if (signal?.aborted || isAbort(error)) throw error;
        tries.failures += 1;
        tries.cause = error;
        continue;
      }
      if (response.status === 204) {
        await response.body?.cancel().catch(() => {});
        return null;
      }
      if (response.ok && response.body !== null) return response;
      const error = response.ok
        ? new ChordChatError(`GET ${url} answered HTTP ${response.status} with no body`, { status: response.status, url })
        : await refusal(response, url, 'GET');
      // A refused resume (401, 403) is asked again when the headers are a function: the
      // credentials may have changed since (a token refreshed).
      const renewable = typeof this.#headers === 'function' && (response.status === 401 || response.status === 403);
      if (!RETRIED_STATUSES.has(response.status) && !renewable) throw error;
      tries.failures += 1;
      tries.cause = error;
    }
  }

  /**
   * The chunks of `response`'s events, then, when it breaks before a terminal chunk, of the
   * responses that resume it after the last event id handed on.
   */
  #stream(chatId, response, lastId, call, outer) {
    // Stops the resumes (a wait, a request) when the caller aborts or the reader cancels.
    const stopper = new AbortController();
    const signal = stopper.signal;
    const onAbort = () => stopper.abort(outer.reason);
    if (outer?.aborted) stopper.abort(outer.reason);
    else outer?.addEventListener('abort', onAbort, { once: true });
    const release = () => outer?.removeEventListener('abort', onAbort);
    const chats = this.#chats;
    const record = { lastId, cut: false };
    chats.set(chatId, record);
    // Forget the chat's record unless a later request made another.
    const forget = () => {
      if (chats.get(chatId) === record) chats.delete(chatId);
    };
    let reader = response.body.getReader();
    let parser = new EventParser({ maxEvent: this.#maxEvent, lastEventId: lastId });
    // The run's id, from its `start` chunk: a `start` naming another run after a resume is
    // the chat's next run, not this one's rest.
    let runId = null;
    // Failures in a row since a chunk was last handed on, and the last one.
    const tries = { failures: 0, cause: undefined };
    // Whether a chunk was handed on from an event without an id: then a resume could not
    // say where it is (chord gives every chunk one).
    let anonymous = false;
    const maxEvent = this.#maxEvent;

    /** Chunks of complete events in `bytes` (`done` once the run's stream is over). */
    const chunksOf = (bytes) => {
      const chunks = [];
      for (const event of parser.push(bytes)) {
        if (event.name !== 'message' || event.data === '[DONE]') continue;
        let chunk;
        try {
          chunk = JSON.parse(event.data);
        } catch (e) {
          throw new ChordChatError(`chat ${JSON.stringify(chatId)}: an event's data is not JSON (event ${event.id || 'without id'}): ${e.message}`, { cause: e });
        }
        if (chunk === null || typeof chunk !== 'object' || typeof chunk.type !== 'string') {
          throw new ChordChatError(`chat ${JSON.stringify(chatId)}: an event's data is not a UI message chunk (event ${event.id || 'without id'})`);
        }
        if (chunk.type === 'start' && typeof chunk.messageId === 'string') {
          if (runId !== null && chunk.messageId !== runId) return { chunks, done: true };
          runId = chunk.messageId;
        }
        chunks.push(chunk);
        if (event.id === '') anonymous = true;
        record.lastId = event.id;
        if (TERMINAL.has(chunk.type)) return { chunks, done: true };
      }
      return { chunks, done: false };
    };


    return new ReadableStream({
      pull: async (controller) => {
        try {
          for (;;) {
            let cause;
            try {
              const { done, value } = await reader.read();
              if (!done) {
                const { chunks, done: ended } = chunksOf(value);
                if (ended) {
                  // Nothing after the terminal chunk is read (`[DONE]`, the end).
                  reader.cancel().catch(() => {});
                  forget();
                  release();
                }
                if (chunks.length > 0 || ended) {
                  tries.failures = 0;
                  for (const chunk of chunks) controller.enqueue(chunk);
                  if (ended) controller.close();
                  return;
                }
                continue;
              }
            } catch (error) {
              if (error instanceof ChordChatError) throw error;
              if (signal?.aborted || isAbort(error)) throw error;
              // A StreamEventError (an event over maxEvent, not UTF-8) is not resumed: the
              // same event would come again.
              if (error?.name === 'StreamEventError') throw error;
              cause = error;
            }
            // Cut before the terminal chunk: ask for the rest.
            if (anonymous) {
              throw new ChordChatError(`chat ${JSON.stringify(chatId)}: the stream was cut and its events carry no id to resume after`, { cause });
            }
            tries.failures += 1;
            tries.cause = cause ?? new Error('the response ended before the run\'s last chunk');
            const next = await this.#open(chatId, record.lastId, call, signal, tries);
            if (next === null) {
              // The run is over and nothing is left after the last id (or, without one, no
              // run is in progress): the stream ends.
              forget();
              release();
              controller.close();
              return;
            }
            if (signal.aborted) {
              // Cancelled while the request was under way.
              await next.body.cancel().catch(() => {});
              return;
            }
            reader = next.body.getReader();
            parser = new EventParser({ maxEvent, lastEventId: record.lastId });
          }
        } catch (error) {
          // A cut the SDK will resume keeps its id; anything else is forgotten.
          if (error instanceof ChordStreamCutError) record.cut = true;
          else forget();
          release();
          reader.cancel().catch(() => {});
          throw error;
        }
      },
      cancel: (reason) => {
        forget();
        release();
        stopper.abort(reason);
        return reader.cancel(reason).catch(() => {});
      },
    });
  }
}

// The chat state: a replica of a run's state fed from the data parts `onData` is given.

// `chord-replica/react` takes a store that carries the registered symbol its
// `createChordStore` marks stores with; a chat state carries it too, so the React entry need
// not be imported (nor React loaded) by this one.
const REACT_STORE = Symbol.for('chord-replica/react store');
const REACT_MARK = Object.freeze({ setOnIdle() {} });

/** A copy of a JSON value, held by the store alone (the SDK keeps the part it came in). */
const copy = (value) => (value === undefined ? undefined : structuredClone(value));

/**
 * The state of a chord chat, fed by the AI SDK's data parts: pass `state.onData` to
 * `useChat({ onData })`, read it with `useChord(state, selector)` (`chord-replica/react`),
 * `state.select(selector, listener)` or `state.getValue()`.
 *
 * - `data-state` (the run's whole state, at its start and its end) sets the value, keeping
 *   every part equal to what is held as the object held (`===`);
 * - `data-chord` (a flush's ops) applies the batch, copy on write: every part it did not
 *   change is the object it was;
 * - a batch that cannot apply (or comes before any state) changes nothing: the status says
 *   why (`error`, `stale: true`), `onError` is called, and batches are skipped until the next
 *   `data-state` (every run ends with one), since they would apply to a value they were not
 *   written for. Nothing is thrown to the caller of `onData`;
 * - other parts are ignored.
 *
 * @param {import('./ai-sdk.d.ts').ChatStateOptions<unknown>} [options]
 */
export function createChatState(options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('createChatState: options must be an object');
  }
  const { initialValue, limits, onError } = options;
  if (onError !== undefined && typeof onError !== 'function') {
    throw new TypeError('createChatState: options.onError must be a function');
  }
  let value = copy(initialValue);
  // Whether the value is a run's state (a `data-state` or `setValue` has set it).
  let based = false;
  let stale = false;
  let stats = NO_STATS;
  let status = Object.freeze({ connected: false, following: false, error: null, stats, offset: null, stale: false });
  const valueListeners = new Set();
  const statusListeners = new Set();

  const call = (listeners) => {
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch (error) {
        report(error, false);
      }
    }
  };

  const setStatus = (change) => {
    status = Object.freeze({ ...status, stats, stale, ...change });
    call(statusListeners);
  };

  /** An error of the app's (a listener's) or of a batch (`counted`: in the status). */
  function report(error, counted) {
    if (counted) {
      stats = Object.freeze({ ...stats, errors: stats.errors + 1, lastError: error?.message ?? String(error) });
      setStatus({ error });
    }
    if (onError === undefined) {
      console.error('chord-replica/ai-sdk:', error);
      return;
    }
    try {
      onError(error);
    } catch (e) {
      console.error('chord-replica/ai-sdk: onError threw:', e);
    }
  }

  const set = (next) => {
    if (Object.is(next, value)) return;
    value = next;
    call(valueListeners);
  };

  /** Sets the state from a whole value (a copy of it), keeping the parts equal to those held. */
  const setValue = (data) => {
    const next = copy(data);
    const kept = value === undefined ? next : keepEqualParts(value, next);
    based = true;
    stale = false;
    stats = Object.freeze({ ...stats, bases: stats.bases + 1 });
    set(kept);
    setStatus({ error: null });
  };

  /** Applies one chord batch (atomically), or says why not. */
  const applyBatch = (batch) => {
    if (stale) return;
    if (!based) {
      stale = true;
      report(new Error('chord-replica/ai-sdk: a data-chord part came before any data-state part: the state it changes is not known'), true);
      return;
    }
    let next;
    try {
      next = apply(value, batch, limits);
    } catch (error) {
      stale = true;
      report(error, true);
      return;
    }
    stats = Object.freeze({ ...stats, batches: stats.batches + 1 });
    set(next);
    setStatus({});
  };

  const listen = (listeners) => (listener) => {
    if (typeof listener !== 'function') throw new TypeError('chord-replica/ai-sdk: a listener must be a function');
    // One entry per call, so that the same function subscribed twice is two subscriptions.
    const entry = () => listener();
    listeners.add(entry);
    return () => {
      listeners.delete(entry);
    };
  };
  const subscribe = listen(valueListeners);

  const store = {
    /** `''`: a chat state follows no URL of its own. */
    url: '',
    /** The state (`initialValue` until the first `data-state`). */
    getValue: () => value,
    /** What a server render selects from: `initialValue`. */
    getServerValue: () => initialValue,
    /**
     * `{ error, stale, stats, connected: false, following: false, offset: null }`, a new
     * frozen object on each change: `error` the last batch's that could not apply (`null`
     * again after the next `data-state`), `stale` whether batches are skipped until then,
     * `stats.batches` and `stats.bases` the parts applied. (The connection is `useChat`'s
     * `status`.)
     */
    getStatus: () => status,
    /** Calls `listener()` after each change of the value. */
    subscribe,
    /** Calls `listener()` after each change of the status. */
    subscribeStatus: listen(statusListeners),
    /** Nothing to hold: the data comes from `useChat`. Returns a no-op release. */
    retain: () => () => {},
    follower: null,
    /** How many value listeners there are. */
    get users() {
      return valueListeners.size;
    },
    /**
     * Calls `listener(selected, previous)` when `selector(value)` changed (`Object.is`);
     * returns the unsubscribe.
     */
    select(selector, listener) {
      if (typeof selector !== 'function' || typeof listener !== 'function') {
        throw new TypeError('chord-replica/ai-sdk: select(selector, listener) takes two functions');
      }
      let selected = selector(value);
      return subscribe(() => {
        const next = selector(value);
        if (Object.is(next, selected)) return;
        const previous = selected;
        selected = next;
        listener(next, previous);
      });
    },
    /**
     * The data part handler for `useChat({ onData })`: `data-state` and `data-chord` parts
     * change the state, others are ignored. Never throws.
     */
    onData: (part) => {
      if (part === null || typeof part !== 'object') return;
      if (part.type === 'data-state') {
        try {
          setValue(part.data);
        } catch (error) {
          // A value structuredClone refuses (none that JSON gives).
          report(error, true);
        }
      } else if (part.type === 'data-chord') {
        applyBatch(part.data);
      }
    },
    /**
     * Sets the state from a whole value, as a `data-state` part does (e.g. from
     * `stateOf(lastMessage)` after a reload).
     */
    setValue,
  };
  Object.defineProperty(store, REACT_STORE, { value: REACT_MARK });
  return Object.freeze(store);
}

/**
 * The state a message holds: the data of its last `data-state` part (the run's final state
 * once it finished, its first while it runs: the SDK keeps transient `data-chord` parts out
 * of messages), or `undefined` for a message without one (a user's).
 * @param {{ parts?: ReadonlyArray<unknown> } | null | undefined} message
 */
export function stateOf(message) {
  const parts = message?.parts;
  if (!Array.isArray(parts)) return undefined;
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i];
    if (part !== null && typeof part === 'object' && part.type === 'data-state') return part.data;
  }
  return undefined;
}
