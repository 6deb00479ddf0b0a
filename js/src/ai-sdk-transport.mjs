// ChordChatTransport: the Vercel AI SDK's `ChatTransport` for chord's `useChat` door
// (Rust `chord::ai_sdk::AiSdk`), with runs that survive a dropped connection.
//
// It reads the UI message stream's SSE itself (EventParser), hands on each chunk once, and
// when the connection drops before the run's last chunk it asks for the rest with
// `GET {api}/{chatId}/stream` and `Last-Event-ID`, continuing the same stream.

import { DEFAULT_MAX_EVENT, EventParser } from './sse.mjs';

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

/** Waits `ms`, or less if `signal` aborts (then throws its reason). */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

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
  /**
   * Per chat: the last SSE id handed on and whether its stream ended cut (handed to the
   * chat as a dropped connection, which the SDK resumes). Deleted at a terminal chunk, an
   * abort, or a failure the SDK does not resume.
   */
  #chats = new Map();

  /** @param {import('../ai-sdk.d.ts').ChordChatTransportOptions} [options] */
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
  }

  /** The last SSE event id handed on for `chatId`'s current or last cut run, or `undefined`. */
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
   * The chat's run in progress, or `null` (the server's `204`: none, or the run's last chunk
   * was the last one handed on). After a stream of this transport that ended cut (a
   * {@link ChordStreamCutError}, which the SDK resumes onto the message it kept), it asks
   * for the chunks after that stream's last id; otherwise for the run from its start.
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
   * the server does not know).
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
      if (!RETRIED_STATUSES.has(response.status)) throw error;
      tries.failures += 1;
      tries.cause = error;
    }
  }

  /**
   * The chunks of `response`'s events, then, when it breaks before a terminal chunk, of the
   * responses that resume it after the last event id handed on.
   */
  #stream(chatId, response, lastId, call, signal) {
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
              controller.close();
              return;
            }
            reader = next.body.getReader();
            parser = new EventParser({ maxEvent, lastEventId: record.lastId });
          }
        } catch (error) {
          // A cut the SDK will resume keeps its id; anything else is forgotten.
          if (error instanceof ChordStreamCutError) record.cut = true;
          else forget();
          reader.cancel().catch(() => {});
          throw error;
        }
      },
      cancel: (reason) => {
        forget();
        return reader.cancel(reason).catch(() => {});
      },
    });
  }
}
