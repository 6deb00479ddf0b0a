// chord-replica/ag-ui: the official AG-UI client (`@ag-ui/client`'s HttpAgent) with runs
// that survive a dropped connection, for chord's AG-UI endpoint.
//
// chord serves a run's events as a view of its durable log, each with an SSE `id:`; a POST of
// the same RunAgentInput with a `Last-Event-ID` header answers the events after that id (no
// second RUN_STARTED, no second producer). HttpAgent reads past `id:` lines and stops at a
// dropped connection; ResumableHttpAgent gives it a `fetch` that resumes, so the agent's
// state and messages end as if the connection had never dropped.
//
//   import { ResumableHttpAgent } from 'chord-replica/ag-ui';
//
//   const agent = new ResumableHttpAgent({ url: 'http://127.0.0.1:8788/' });
//   agent.subscribe({ onStateChanged: ({ state }) => render(state) });
//   await agent.runAgent();
//
// `@ag-ui/client` is an optional peer dependency: install it beside chord-replica to use
// this entry (the rest of the package does not need it).

import { HttpAgent } from '@ag-ui/client';
import { DEFAULT_MAX_EVENT, EventParser } from './src/sse.mjs';
import { sleep } from './src/wait.mjs';

/**
 * A resumed stream that could not go on: the server refused the request again (`status`
 * set), answered something that is not an event stream, had no event id to resume after,
 * or the connection kept failing (`attempts` requests in a row brought no event). `cause`
 * is the last failure.
 */
export class ResumeError extends Error {
  /**
   * @param {string} message
   * @param {{ cause?: unknown, status?: number, attempts?: number, lastEventId?: string }} [info]
   */
  constructor(message, info = {}) {
    super(message, info.cause === undefined ? undefined : { cause: info.cause });
    this.name = 'ResumeError';
    this.status = info.status;
    this.attempts = info.attempts;
    this.lastEventId = info.lastEventId ?? '';
  }
}

/** The AG-UI events after which a run's stream is over: nothing is resumed after them. */
const TERMINAL = new Set(['RUN_FINISHED', 'RUN_ERROR']);

/**
 * Whether an SSE event's data is an AG-UI terminal event (`RUN_FINISHED` or `RUN_ERROR`).
 * Only data naming one of the two is parsed.
 * @param {{ data: string }} event
 */
export function isAgUiTerminal(event) {
  if (!event.data.includes('RUN_FINISHED') && !event.data.includes('RUN_ERROR')) return false;
  try {
    const value = JSON.parse(event.data);
    return value !== null && typeof value === 'object' && TERMINAL.has(value.type);
  } catch {
    return false;
  }
}

/** Statuses worth asking again for: the server is restarting, overloaded or timed out. */
const RETRIED_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

const isEventStream = (response) =>
  (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase() === 'text/event-stream';

const isAbort = (error) => error?.name === 'AbortError';

/**
 * The data of the RUN_ERROR event a resumed AG-UI run ends with when it cannot go on: the
 * client then ends the run as the protocol says (`onRunErrorEvent`), with the reason.
 * @param {ResumeError} error
 */
export function agUiRunError(error) {
  return JSON.stringify({ type: 'RUN_ERROR', message: `the connection dropped and the run could not be resumed: ${error.message}`, code: 'RESUME_FAILED' });
}

/** One SSE event written back as text: its id, its name unless `message`, its data lines. */
function encodeEvent(event, withId) {
  let text = withId ? `id: ${event.id}\n` : '';
  if (event.name !== 'message') text += `event: ${event.name}\n`;
  for (const line of event.data.split('\n')) text += `data: ${line}\n`;
  return `${text}\n`;
}

/**
 * Wraps `fetch` so that an event stream's response resumes where it broke. The response is
 * returned as soon as its headers arrive, with a body made of the upstream's complete events
 * (written back as `id:`/`event:`/`data:` lines; comments such as keep-alives are left out).
 * When the connection drops, or the body ends, before an event `isTerminal` accepts (by
 * default AG-UI's `RUN_FINISHED` or `RUN_ERROR`), the same request is sent again with a
 * `Last-Event-ID` header naming the last event id received, and the new response's events
 * continue the body: the reader sees one stream, each event once, never an event cut in two.
 *
 * A request that fails, or answers 408, 425, 429 or 5xx, is sent again after a backoff
 * (doubling from `backoffMin` to `backoffMax` ms), the first request included: once its
 * attempts run out, its error or answer is the caller's, and any other answer to it (a 4xx,
 * a body that is not an event stream) is returned as it is. After the body has started,
 * `retries` attempts in a row that bring no event, or any other answer, end the body with a
 * {@link ResumeError}, or, if `giveUp(error)` returns a string, with one last event of that
 * data (a body that fails makes some readers, `@ag-ui/client`'s among them, leave a rejected
 * promise unhandled). Aborting the request's `signal` ends it at once with the abort's error.
 *
 * The request must be one that can be sent twice: a URL (or `Request` without a stream
 * body) and `init` whose body is a string, bytes, a `Blob` or form data.
 *
 * @param {import('./ag-ui.d.ts').ResumeOptions} [options]
 * @returns {(input: string | URL | Request, init?: RequestInit) => Promise<Response>}
 */
export function resumableFetch(options = {}) {
  const {
    fetch: inner = (input, init) => globalThis.fetch(input, init),
    retries = 8,
    backoffMin = 100,
    backoffMax = 5000,
    isTerminal = isAgUiTerminal,
    onReconnect,
    giveUp,
    maxEvent = DEFAULT_MAX_EVENT,
  } = options;
  for (const [name, value] of [['retries', retries], ['backoffMin', backoffMin], ['backoffMax', backoffMax]]) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new TypeError(`resumableFetch: ${name} must be a non-negative integer, found ${value}`);
    }
  }
  if (typeof inner !== 'function') throw new TypeError('resumableFetch: fetch must be a function');

  return async function fetchResumable(input, init = {}) {
    // A Request is kept unread, so that it can be sent again.
    const template = typeof Request !== 'undefined' && input instanceof Request ? input.clone() : null;
    const send = (lastEventId) => {
      const headers = new Headers(template !== null ? template.headers : undefined);
      new Headers(init.headers).forEach((value, name) => headers.set(name, value));
      if (lastEventId !== '') headers.set('Last-Event-ID', lastEventId);
      return inner(template !== null ? template.clone() : input, { ...init, headers });
    };
    const signal = init.signal ?? template?.signal;
    // The first request too is sent again when it fails or answers a status worth asking
    // again for (sending it twice starts one run: the server knows the run by its ids); once
    // the attempts run out, its last error or answer is the caller's.
    let first;
    for (let attempt = 1; ; attempt++) {
      let failure;
      try {
        first = await send('');
      } catch (error) {
        if (signal?.aborted || isAbort(error) || attempt > retries) throw error;
        failure = error;
      }
      if (failure === undefined && (!RETRIED_STATUSES.has(first.status) || attempt > retries)) break;
      if (failure === undefined) await first.body?.cancel().catch(() => {});
      await sleep(Math.min(backoffMax, backoffMin * 2 ** (attempt - 1)), signal);
      onReconnect?.({ lastEventId: '', attempt, error: failure ?? new ResumeError(`HTTP ${first.status}`, { status: first.status }) });
    }
    if (!first.ok || first.body === null || !isEventStream(first)) return first;
    const encoder = new TextEncoder();
    let reader = first.body.getReader();
    let parser = new EventParser({ maxEvent });
    let lastEventId = '';
    let forwarded = 0;
    let over = false;
    let failures = 0;

    /** Reads on until events to hand on: their bytes, or null at the stream's end. */
    const next = async () => {
      for (;;) {
        let cause;
        try {
          const { done, value } = await reader.read();
          if (!done) {
            const events = parser.push(value);
            lastEventId = parser.lastEventId;
            if (events.length === 0) continue;
            failures = 0;
            let text = '';
            for (const event of events) {
              text += encodeEvent(event, event.id !== '');
              forwarded += 1;
              if (isTerminal(event)) {
                // Nothing after the terminal event is read.
                over = true;
                reader.cancel().catch(() => {});
                break;
              }
            }
            return encoder.encode(text);
          }
          if (over) return null;
        } catch (error) {
          if (over) return null;
          if (signal?.aborted || isAbort(error)) throw error;
          cause = error;
        }
        // Dropped before the terminal event: resume after the last event id.
        reader = await reopen(cause);
        parser = new EventParser({ maxEvent, lastEventId });
      }
    };

    /** Sends the request again until an event stream answers; returns its reader. */
    const reopen = async (cause) => {
      if (forwarded > 0 && lastEventId === '') {
        throw new ResumeError('the stream dropped and its events carry no id to resume after', { cause });
      }
      for (;;) {
        failures += 1;
        if (failures > retries) {
          throw new ResumeError(`the stream could not be resumed after ${retries} attempts`, {
            cause,
            attempts: retries,
            lastEventId,
          });
        }
        await sleep(Math.min(backoffMax, backoffMin * 2 ** (failures - 1)), signal);
        onReconnect?.({ lastEventId, attempt: failures, error: cause });
        let response;
        try {
          response = await send(lastEventId);
        } catch (error) {
          if (signal?.aborted || isAbort(error)) throw error;
          cause = error;
          continue;
        }
        if (response.ok && response.body !== null && isEventStream(response)) return response.body.getReader();
        const text = await response.text().catch(() => '');
        cause = new ResumeError(`resuming answered HTTP ${response.status}: ${text.slice(0, 500)}`, {
          status: response.status,
          lastEventId,
        });
        if (!RETRIED_STATUSES.has(response.status)) {
          if (!response.ok) throw cause;
          throw new ResumeError('resuming answered something other than an event stream', {
            status: response.status,
            lastEventId,
          });
        }
      }
    };

    const body = new ReadableStream({
      async pull(controller) {
        let bytes;
        try {
          bytes = await next();
        } catch (error) {
          const last = error instanceof ResumeError && giveUp !== undefined ? giveUp(error) : undefined;
          if (typeof last !== 'string') throw error;
          // The body ends with the event that says so instead of failing.
          over = true;
          controller.enqueue(encoder.encode(encodeEvent({ name: 'message', data: last, id: '' }, false)));
          controller.close();
          return;
        }
        if (bytes === null) controller.close();
        else controller.enqueue(bytes);
      },
      cancel(reason) {
        over = true;
        return reader.cancel(reason).catch(() => {});
      },
    });
    return new Response(body, { status: first.status, statusText: first.statusText, headers: first.headers });
  };
}

/** The `fetch` each agent's resuming `fetch` wraps (a clone's too). */
const BASE_FETCH = new WeakMap();

/** A resuming `fetch` over `base` that counts `agent`'s reconnects. */
function reconnecting(agent, base) {
  BASE_FETCH.set(agent, base);
  return resumableFetch({
    ...agent.reconnect,
    fetch: base,
    onReconnect(info) {
      agent.reconnects += 1;
      agent.reconnect.onReconnect?.(info);
    },
    giveUp(error) {
      agent.resumeError = error;
      return agUiRunError(error);
    },
  });
}

/**
 * An `HttpAgent` whose runs resume: when the connection drops before `RUN_FINISHED` or
 * `RUN_ERROR`, it POSTs the same `RunAgentInput` again with `Last-Event-ID` and goes on
 * with the events after it (see {@link resumableFetch}; `reconnect` holds its options, and
 * `fetch`, if given, is the one it wraps). `reconnects` counts the requests sent again.
 * A run that cannot be resumed (a refused request, attempts run out) ends with a
 * `RUN_ERROR` event (code `RESUME_FAILED`, the reason in its message), and `resumeError`
 * holds the {@link ResumeError}.
 */
export class ResumableHttpAgent extends HttpAgent {
  /** @param {import('./ag-ui.d.ts').ResumableHttpAgentConfig} config */
  constructor(config) {
    const { reconnect = {}, ...rest } = config;
    super(rest);
    /** The reconnect options this agent (and its clones) use. */
    this.reconnect = reconnect;
    /** How many times this agent sent a run's request again after a drop. */
    this.reconnects = 0;
    /** Why the last run that could not be resumed could not (undefined if none). */
    this.resumeError = undefined;
    this.fetch = reconnecting(this, this.fetch);
  }

  /** A copy with its own `reconnects` count, resuming as this agent does. */
  clone() {
    const cloned = super.clone();
    cloned.reconnect = this.reconnect;
    cloned.reconnects = 0;
    cloned.resumeError = undefined;
    cloned.fetch = reconnecting(cloned, BASE_FETCH.get(this));
    return cloned;
  }
}
