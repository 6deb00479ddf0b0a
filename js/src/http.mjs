// HTTP for following a chord stream served as a Durable Stream: the stream's URL, request
// headers and credentials, HTTP errors and the base offset a `HEAD` names.

import { ChordError, jsonType, show } from './errors.mjs';
import { StreamEventError, validOffset } from './sse.mjs';

/** The response header naming the offset before the latest base batch. */
export const BASE_OFFSET_HEADER = 'chord-base-offset';

/** What a refusal's status says, in an error's message. */
const REFUSALS = {
  401: 'Unauthorized: no credential the server accepts was sent (see follow\'s headers and credentials options)',
  403: 'Forbidden: the credential sent may not read this stream',
};

/**
 * An HTTP error from the server (`status` 410: the offset is no longer served; 401 or 403:
 * the read was refused, see {@link refused}).
 */
export class StreamHttpError extends Error {
  /**
   * @param {number} status
   * @param {string} url
   */
  constructor(status, url) {
    super(`${url} answered ${status}${REFUSALS[status] ? ` ${REFUSALS[status]}` : ''}`);
    this.name = 'StreamHttpError';
    this.status = status;
    /** Whether the server answered, but not with an event stream (not a stream's URL). */
    this.notEventStream = false;
    /**
     * The offset before the latest base the answer named (`chord-base-offset`), or null: a
     * 410's says where a reader with no value starts over.
     * @type {string | null}
     */
    this.baseOffset = null;
  }

  /** Whether the server refused the read: 401 (no credential it accepts) or 403 (not allowed). */
  get refused() {
    return this.status === 401 || this.status === 403;
  }
}

/** Whether an error means starting again from the latest base batch. */
export function restarts(error) {
  if (error instanceof ChordError) return true; // the decoder or the value is not to be trusted
  if (error instanceof StreamEventError) return error.kind === 'BadOffset'; // nor the offset
  const status = error?.status;
  return status === 404 || status === 410;
}

/**
 * The client errors (4xx) worth another try: 404 (the stream may not exist yet), 408, 410
 * (start over from the latest base), 425 and 429. Any other 4xx says the request itself is
 * wrong (a URL that is not a stream, a refused credential), which no retry changes.
 */
const RETRIED_4XX = new Set([404, 408, 410, 425, 429]);

/**
 * Whether an error can never go away by retrying: `follow` stops on it. A refused read (401,
 * 403) is one, unless the credentials can change between tries (`renewable`: `headers` is a
 * function, called again for every request, so a refreshed token gets in).
 */
export function fatal(error, renewable) {
  if (error instanceof StreamHttpError) {
    if (error.notEventStream) return true;
    if (error.refused && renewable) return false;
    const status = error.status;
    return status >= 400 && status < 500 && !RETRIED_4XX.has(status);
  }
  return false;
}

/**
 * The stream's URL, absolute: a relative one is resolved against the page's `location`
 * (in a browser); where there is none (Node), it must be absolute.
 * @param {string | URL} url
 * @returns {string}
 */
export function streamUrl(url) {
  const base = globalThis.location?.href;
  let parsed;
  try {
    parsed = new URL(String(url), base);
  } catch {
    throw new TypeError(
      base === undefined
        ? `follow: ${JSON.stringify(String(url))} is not an absolute URL, and there is no page location to resolve it against: in Node pass an absolute one, e.g. "http://127.0.0.1:8080/streams/lanes/main"`
        : `follow: ${JSON.stringify(String(url))} is not a URL (resolved against ${base})`,
    );
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`follow: ${parsed.href} is not an http: or https: URL`);
  }
  return parsed.href;
}

/** The message of anything thrown, with its cause's (Node's `fetch failed` says why there). */
export function message(error) {
  const text = String(error?.message ?? error);
  const cause = error?.cause?.message;
  return cause ? `${text} (${cause})` : text;
}

export function withQuery(url, params) {
  const base = String(url);
  const query = Object.entries(params)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
  return base + (base.includes('?') ? '&' : '?') + query;
}

/**
 * Headers as `new Headers()` takes them: an object of names and values, pairs, or `Headers`.
 * @typedef {Record<string, string> | Array<[string, string]> | Headers} HeaderValues
 */

/**
 * Headers sent with every request of a follower: an object (anything `new Headers()` takes),
 * or a function returning one (or nothing), sync or async, called again for every request (so
 * a token can be refreshed).
 * @typedef {HeaderValues | (() => HeaderValues | undefined | Promise<HeaderValues | undefined>)} HeadersOption
 */

const CREDENTIALS = ['omit', 'same-origin', 'include'];

/**
 * Checks the credential options of `follow` or `baseOffset`: `headers` an object (what
 * `new Headers()` takes) or a function returning one, `credentials` one of fetch's modes.
 */
export function checkCredentials(who, { headers, credentials }) {
  if (headers !== undefined && typeof headers !== 'function' && (typeof headers !== 'object' || headers === null)) {
    throw new TypeError(`${who}: options.headers must be an object of headers or a function returning one, found ${jsonType(headers)}`);
  }
  if (credentials !== undefined && !CREDENTIALS.includes(credentials)) {
    throw new TypeError(`${who}: options.credentials must be one of ${CREDENTIALS.map((c) => `'${c}'`).join(', ')}, found ${show(credentials)}`);
  }
}

/** The headers of `options.headers` for one request: the function called now, if it is one. */
async function resolveHeaders(headers) {
  const value = typeof headers === 'function' ? await headers() : headers;
  if (value === undefined || value === null) return new Headers();
  if (typeof value !== 'object') {
    throw new TypeError(`options.headers() must return an object of headers, returned ${jsonType(value)}`);
  }
  return new Headers(value);
}

/**
 * `fetchImpl` sending `headers` (resolved again for every request) and `credentials` with
 * every request. A header the caller of the fetch sets itself (a transport's `accept`) wins
 * over one of `headers` of the same name, so that the protocol's own headers stay as sent.
 */
export function credentialed(fetchImpl, { headers, credentials }) {
  if (headers === undefined && credentials === undefined) return fetchImpl;
  return async (input, init = {}) => {
    const merged = await resolveHeaders(headers);
    for (const [name, value] of new Headers(init.headers ?? {})) merged.set(name, value);
    return fetchImpl(input, {
      ...init,
      headers: Object.fromEntries(merged),
      ...(credentials === undefined ? {} : { credentials }),
    });
  };
}

/**
 * Throws the error of a response that is not OK, its body (a refusal's is empty) let go,
 * with the latest base its `chord-base-offset` names (a 410's says where to start over).
 */
export async function refuse(response, url) {
  await response.body?.cancel().catch(() => {});
  const error = new StreamHttpError(response.status, String(url));
  const base = response.headers.get(BASE_OFFSET_HEADER);
  if (validOffset(base)) error.baseOffset = base;
  throw error;
}

/**
 * The offset a fresh reader starts from: the `chord-base-offset` header of a `HEAD`
 * (`-1`, the oldest base kept, from a server that does not send it). `headers` (an object, or
 * a function returning one, sync or async, called for the request) and `credentials` go to
 * the request as `follow` sends them.
 * @param {string | URL} url
 * @param {{ fetch?: typeof fetch, signal?: AbortSignal, headers?: HeadersOption,
 *   credentials?: 'omit' | 'same-origin' | 'include' }} [options]
 * @returns {Promise<string>}
 * @throws {StreamHttpError} the server's answer was not OK (401 or 403: the read was refused)
 */
export async function baseOffset(url, { fetch: fetchImpl = globalThis.fetch, signal, headers, credentials } = {}) {
  checkCredentials('baseOffset', { headers, credentials });
  const send = credentialed(fetchImpl, { headers, credentials });
  const response = await send(url, { method: 'HEAD', signal, cache: 'no-store' });
  if (!response.ok) await refuse(response, url);
  return response.headers.get(BASE_OFFSET_HEADER) ?? '-1';
}
