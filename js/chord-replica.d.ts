// Type declarations for chord-replica.mjs, the whole public API. Checked by `tsc` in CI
// (js/tsconfig.json compiles them with test/types.ts, which uses every export).

/** A path segment: an object key or an array index. */
export type Segment = string | number;
/** A path: where an op applies, from the root. */
export type Path = ReadonlyArray<Segment>;

/** A decoded op: `["r", v]`, `["s", path, v]`, `["d", path]`, `["a", path, text]`, `["t", path, n]`, `["p", path, index, remove, items]`. */
export type Op =
  | readonly ['r', unknown]
  | readonly ['s', Path, unknown]
  | readonly ['d', Path]
  | readonly ['a', Path, string]
  | readonly ['t', Path, number]
  | readonly ['p', Path, number, number, ReadonlyArray<unknown>];

/** Bounds on what one batch may do (see `DEFAULT_LIMITS`). */
export interface Limits {
  maxDepth: number;
  maxArrayLen: number;
  maxStringLen: number;
  maxWork: number;
}

/** Path segments refused everywhere a path is walked. */
export const RESERVED: ReadonlyArray<'__proto__' | 'constructor' | 'prototype'>;
/** The most segments a path may have. */
export const MAX_PATH_SEGMENTS: 128;
/** Ids a stream may use: `0..MAX_IDS`; a definition of another is refused. */
export const MAX_IDS: 1024;
/** The most key text (UTF-16 code units over all keys) of a path given an id. */
export const MAX_ID_PATH_UNITS: 256;
/** The most arrays and objects a wire batch may nest (batch and op tuple included), as serde_json. */
export const MAX_WIRE_NESTING: 128;
/** chord's default `Limits`. */
export const DEFAULT_LIMITS: Readonly<Limits>;

/** A path in chord's readable form: `transcript[3].text`, `$` for the root. */
export function formatPath(path: Path): string;

/** The one error type of the replica: `kind` is chord's `ErrorKind` name. */
export class ChordError extends Error {
  constructor(kind: string, info?: Record<string, unknown>);
  readonly name: 'ChordError';
  /** chord's error kind, e.g. `"UnknownVerb"`, `"IndexOutOfRange"`, `"LimitExceeded"`. */
  kind: string;
  /** The failing op's position in its batch, when known. */
  opIndex: number | undefined;
  /** The document location, when known. */
  path: Segment[] | undefined;
  /** The message without the op and path prefix. */
  detail: string;
  /** The kind's fields (`verb`, `index`, `len`, `limit`, `max`, ...). */
  [field: string]: unknown;
}

/** Checks one decoded op; returns it, or throws the first violation. */
export function checkOp(op: unknown): Op;
/**
 * Checks one wire op; returns it, or throws the first violation. With the text the op was
 * parsed from (`written`), a count, an index or an id written with a fraction or an exponent
 * (`1.0`, `1e0`) is refused too, as chord's decoder refuses it.
 */
export function checkWireOp(op: unknown, written?: string): unknown[];
/** Whether `op` is a valid decoded op. */
export function validOp(op: unknown): boolean;
/** Whether `op` is a valid wire op. */
export function validWireOp(op: unknown): boolean;
/** Whether a batch (decoded or wire) starts with `r`. */
export function isBase(batch: unknown): boolean;

/** A decoder for one stream (path ids live across batches until an `r`). */
export interface Decoder {
  /** Decodes one parsed wire batch into ops. */
  decode(wireBatch: unknown): Op[];
  /** Parses and decodes one wire batch given as JSON text. */
  decodeText(text: string): Op[];
  /** Whether an earlier batch failed (every later call throws `DecoderPoisoned`). */
  readonly poisoned: boolean;
}
/** A fresh decoder for one stream. */
export function createDecoder(): Decoder;

/**
 * Applies a batch atomically, copy on write, and returns the new value. The target is never
 * modified: the result shares every subtree the batch did not change (the same objects) and
 * has a new object for every container on a changed path, the root included. An op that
 * changes nothing leaves its path as it was. Each changed container is copied once per
 * batch, in time and memory proportional to its own size.
 */
export function apply(target: unknown, ops: ReadonlyArray<unknown>, limits?: Partial<Limits>): unknown;

/**
 * Options of a `Replica`. `T` is the type of the value, as in `Replica<T>`; an `onChange`
 * that declares its parameter (`(lane: Lane | undefined) => ...`) gives `new Replica(...)` its `T`.
 */
export interface ReplicaOptions<T = unknown> {
  /** Bounds for `apply`. */
  limits?: Partial<Limits>;
  /**
   * Called after every batch that applied, with the new value and the decoded ops (full
   * paths, an append's text). A throw leaves the batch applied (`failed` stays `null`) and
   * is rethrown by `applyWire`; `follow` reports it and keeps following. The value is
   * `undefined` only after a batch that set none (an empty batch before the first base).
   */
  onChange?: (value: T | undefined, ops: Op[]) => void;
}

/** Stops a subscription. */
export type Unsubscribe = () => void;

/**
 * What a selector of a `Replica<T>` is given: `T | undefined` (`undefined` when a batch left
 * no value, e.g. an empty batch before the first base), or `any` for an untyped replica
 * (`T` is `unknown`), so that untyped code may declare the shape it expects.
 */
export type SelectorInput<T> = unknown extends T ? any : T | undefined;

/**
 * Subscribes to a slice of a `Replica<T>`'s value: `listener(selected, previous)` runs after
 * a batch only when `selector(value)` changed by `Object.is`. `S`, the slice's type, is what
 * the selector returns.
 */
export type Subscribe<T = unknown> = <S>(
  selector: (value: SelectorInput<T>) => S,
  listener: (selected: S, previous: S | undefined) => void,
) => Unsubscribe;

/**
 * The type of `Replica#onChange`: a method's type, whose parameters TypeScript compares both
 * ways, so that a `Replica<Lane>` is still a `Replica` (`Replica<unknown>`), as a `Lane` is an
 * `unknown`. A function type would make this settable callback of `Lane` refuse `unknown`,
 * and with it every typed replica, follower and store the untyped ones.
 */
export type ChangeListener<T = unknown> = { onChange(value: T | undefined, ops: Op[]): void }['onChange'];

/**
 * A value kept current by wire batches, with its own decoder. A base batch applied over a
 * held value keeps every object or array of it the base did not change (deep-equal at the
 * same place): only what changed is new, and a base equal to the value leaves it `===` (its
 * `onChange` still runs; no subscription's listener does). `T` is the value's type, e.g.
 * the one `chord::typescript` generates from the Rust state (`new Replica<Lane>()`); it is
 * what the stream is trusted to carry, not checked. Without it the value is `unknown`.
 */
export class Replica<T = unknown> {
  constructor(options?: ReplicaOptions<T>);
  limits: Partial<Limits> | undefined;
  onChange: ChangeListener<T> | null;
  /** The current value (`undefined` before the first base batch). */
  readonly value: T | undefined;
  /** The error that stopped the replica, or `null`. */
  readonly failed: ChordError | null;
  /**
   * Forgets the value, the ids and any failure (subscriptions stay, and are not called).
   * With `keepValue`, the value stays and only a base batch may come next: it keeps every
   * part of the value it did not change (the same objects), as `follow` does on each fresh start.
   */
  reset(options?: { keepValue?: boolean }): void;
  /**
   * Calls `listener(selected, previous)` after every batch that changes `selector(value)`
   * (by `Object.is`; values are copy on write, so an unchanged slice is the same object).
   * The selector runs now (if there is a value) and after each batch that applied.
   */
  subscribe: Subscribe<T>;
  /**
   * Decodes and applies one wire batch given as JSON text, op by op (never the whole batch
   * as one parsed tree); returns the new value. Throws the batch's `ChordError` (the value
   * left the very object it was), or what `onChange` or a subscription threw (the batch applied).
   */
  applyWireText(textBatch: string): T | undefined;
  /** Decodes and applies one parsed wire batch; returns the new value. Throws as `applyWireText`. */
  applyWire(wireBatch: unknown): T | undefined;
}

/** The response header naming the offset just before a stream's latest base batch. */
export const BASE_OFFSET_HEADER: 'chord-base-offset';

/** An HTTP error from the server (`410`: the offset is no longer served; `401`, `403`: refused). */
export class StreamHttpError extends Error {
  constructor(status: number, url: string);
  readonly name: 'StreamHttpError';
  status: number;
  /** Whether the server answered, but not with an event stream (not a stream's URL). */
  notEventStream: boolean;
  /**
   * The offset before the latest base the answer named (`chord-base-offset`), or null: a
   * `410`'s says where a reader with no value starts over.
   */
  baseOffset: string | null;
  /** Whether the server refused the read: `401` (no credential it accepts) or `403` (not allowed). */
  readonly refused: boolean;
}

/** Headers as `new Headers()` takes them: an object of names and values, pairs, or `Headers`. */
export type HeaderValues = Record<string, string> | ReadonlyArray<readonly [string, string]> | Headers;

/**
 * Headers sent with every request: an object (anything `new Headers()` takes), or a function
 * returning one, sync or async, called again for every request (so a token can be refreshed).
 */
export type HeadersOption = HeaderValues | (() => HeaderValues | undefined | Promise<HeaderValues | undefined>);

/** What a read sends to be let in (see `FollowOptions`). */
export interface CredentialOptions {
  /**
   * Headers for every request, e.g. `{ Authorization: 'Bearer …' }`, or a function returning
   * them, called for each request. A header the transport sets itself (`accept`) wins.
   */
  headers?: HeadersOption;
  /** `fetch`'s credentials mode: `'include'` sends the server's cookies from another origin. */
  credentials?: 'omit' | 'same-origin' | 'include';
}

/**
 * The offset a fresh reader starts from (`chord-base-offset` of a `HEAD`, else `-1`); rejects
 * with a `StreamHttpError` when the answer is not OK (`401`, `403`: refused).
 */
export function baseOffset(
  url: string | URL,
  options?: { fetch?: typeof fetch; signal?: AbortSignal } & CredentialOptions,
): Promise<string>;

/** One step of a transport: the messages (wire batches) of a `data` event and the offset after them. */
export interface Chunk {
  messages: ReadonlyArray<unknown>;
  offset: string;
}

/** What a transport is given for one connection. */
export interface TransportRequest {
  url: string | URL;
  offset: string;
  signal: AbortSignal;
  /**
   * The `fetch` to make every request with: under `follow`, one that adds the follower's
   * `headers` (resolved again for each request) and `credentials`.
   */
  fetch?: typeof fetch;
  /** Called with the size of every piece of the response body received. */
  onBytes?: (bytes: number) => void;
  /**
   * To be called once the live read has answered (an HTTP 200 event stream), before its
   * first chunk, which may be long in coming at the tail: `follow` says `live` then. A
   * transport that does not call it is taken to be live at its first chunk.
   */
  onOpen?: () => void;
  /** The largest line or event data accepted, in bytes (`follow` passes its `maxEvent`). */
  maxEvent?: number;
}

/** How events arrive: one connection, yielding chunks until it ends (or throwing why). */
export type Transport = (request: TransportRequest) => AsyncIterable<Chunk>;

/** The default transport: `fetch` with `live=sse`, parsed by chord. */
export const sseTransport: Transport;

/** The default largest SSE line or event data accepted: 64 MiB, as chord's replica. */
export const DEFAULT_MAX_EVENT: number;

/**
 * An event stream that cannot be read, or a control event that breaks the protocol:
 * `TooLarge` (over `maxEvent` bytes, `max` says the bound), `NotUtf8`, `Control` (not a JSON object),
 * `BadOffset` (`streamNextOffset` is missing or not an offset; `follow` starts over from the
 * latest base). `follow` retries the others from the offset it holds.
 */
export class StreamEventError extends Error {
  constructor(kind: StreamEventError['kind'], message: string, info?: Record<string, unknown>);
  readonly name: 'StreamEventError';
  kind: 'TooLarge' | 'NotUtf8' | 'Control' | 'BadOffset';
  /** The bound, for `TooLarge`. */
  max?: number;
}

/** Whether a string can be a Durable Streams offset: visible ASCII without `, & = ? /`. */
export function validOffset(offset: unknown): offset is string;

/** One event of a `text/event-stream`: its `event:` name (`message` without one) and data. */
export interface ServerSentEvent {
  name: string;
  data: string;
  /** The last event id when the event ended: its own `id:` field's or an earlier event's (`''` before any). */
  id: string;
}

/**
 * The incremental `text/event-stream` parser `sseTransport` uses: bytes in, complete events
 * out, each byte examined once or twice, a line or an event's data over `maxEvent` bytes
 * refused (`StreamEventError` `TooLarge`), as is a line that is not UTF-8 (`NotUtf8`).
 */
export class EventParser {
  /** `lastEventId`: the id an earlier connection's events ended with, kept until an `id:` field changes it. */
  constructor(options?: { maxEvent?: number; lastEventId?: string });
  /** Adds bytes read from the stream; returns the events they complete. */
  push(bytes: Uint8Array): ServerSentEvent[];
  /** Bytes the line search has looked at so far. */
  readonly examined: number;
  /** The last event id as of the last event's end (`''` before any `id:` field). */
  readonly lastEventId: string;
}

/**
 * A transport over `@durable-streams/client` (pass the imported module). The follower's
 * `headers` and `credentials` reach each of the client's requests through its `fetch`; an
 * error with a status (a `401` included) becomes a `StreamHttpError`.
 */
export function durableStreamsTransport(client: { stream: (options: any) => Promise<any> }): Transport;

/** What `follow` reports through `onEvent`; `T` is the value's type, as in `Replica<T>`. */
export type FollowEvent<T = unknown> =
  | { type: 'open'; fresh: boolean; offset: string }
  /** A batch applied: its decoded ops (full paths, an append's text), whether it was a base batch, the new value. */
  | { type: 'batch'; batch: Op[]; base: boolean; value: T | undefined }
  /**
   * The live read has answered (see `TransportRequest.onOpen`) and the follower has a value:
   * from a fresh start (`start`: a catch-up read, or the live read's first base batch) or
   * from the offset held (`resume`); `offset` is the one the value is at. `live: true`
   * follows; neither comes before the live read answered, so a catch-up answer a cache kept
   * (an older value) is never said to be live.
   */
  | { type: 'start' | 'resume'; offset: string }
  /** `true` after each `start` or `resume`; `false` after each break and when stopped. */
  | { type: 'live'; live: boolean }
  | { type: 'break'; error: unknown; restart: boolean };

/** What `onError` is told besides the error. */
export interface FollowErrorInfo {
  /** What failed: the stream (a request, the connection, a batch) or the app (`onChange`, `onEvent`). */
  source: 'stream' | 'onChange';
  /**
   * Whether the follower stopped: only for an answer no retry changes (a 4xx other than 404,
   * 408, 410, 425, 429, or a response that is not an event stream); `done` rejects with the
   * error. A refusal (`401`, `403`) is one unless `headers` is a function, when it is retried
   * with the backoff. Otherwise following goes on.
   */
  stopped: boolean;
  /**
   * Whether it starts over from the latest base batch, having a value (a 404, a 410, a batch
   * that does not decode or apply, after a first catch-up); else it resumes from its offset,
   * or tries its first start again. The value stays until that base applies, which keeps
   * every part of it the base did not change.
   */
  restart: boolean;
}

/**
 * Options of `follow`. `headers` and `credentials` (see `CredentialOptions`) go to every
 * request: the catch-up read it joins with (`GET ?offset=base`, cacheable) and each
 * connection of the transport. A refusal
 * (`401`, `403`) stops the follower, unless `headers` is a function: then it is retried with
 * the backoff, calling it again, so a refreshed token gets in. `T` is the value's type, as in
 * `Replica<T>`.
 */
export interface FollowOptions<T = unknown> extends CredentialOptions {
  /** The replica to keep current (a new one by default); a `Replica<T>` gives `follow` its `T`. */
  replica?: Replica<T>;
  /** The `fetch` to use (the global one by default). */
  fetch?: typeof fetch;
  /** Stops following when aborted. */
  signal?: AbortSignal;
  /** Backoff after a break, in milliseconds (default 50, doubling up to `backoffMax`, 2000). */
  backoffMin?: number;
  backoffMax?: number;
  /** How events arrive (default `sseTransport`). */
  transport?: Transport;
  /**
   * The largest SSE line or event data accepted, in bytes (default `DEFAULT_MAX_EVENT`,
   * 64 MiB); a larger one breaks the connection with a `StreamEventError` `TooLarge`.
   */
  maxEvent?: number;
  /** Called on every connection, batch, start, resume and break. */
  onEvent?: (event: FollowEvent<T>) => void;
  /**
   * Called with every error: retried ones, the one that stops the follower, and what
   * `onChange` or `onEvent` threw. Without it, each distinct message is printed once:
   * retried stream errors with `console.warn` (again after the stream has delivered since),
   * the others with `console.error`.
   */
  onError?: (error: unknown, info: FollowErrorInfo) => void;
}

/** Counters of a follower. */
export interface FollowStats {
  /** Fresh starts (from a base batch) whose live read answered. */
  starts: number;
  /** Connections that resumed from the offset held and whose live read answered. */
  resumes: number;
  batches: number;
  /** Base batches applied (each start's, and any the producer wrote into the stream). */
  bases: number;
  /** Bytes of event streams received (the default transport only). */
  bytes: number;
  breaks: number;
  lastBreak: string | null;
  /** Errors reported (to `onError` or the console), and the last one's message. */
  errors: number;
  lastError: string | null;
}

/** A running `follow`; `T` is the value's type, as in `Replica<T>`. */
export interface Follower<T = unknown> {
  readonly replica: Replica<T>;
  /** The stream's absolute URL. */
  readonly url: string;
  readonly stats: FollowStats;
  /** The offset the replica's value reflects (`null` until the first start). */
  readonly offset: string | null;
  /** Stops following. */
  stop(): void;
  /** `replica.subscribe`: the listener runs when its slice of the followed value changed. */
  subscribe: Subscribe<T>;
  /** Resolves once stopped; rejects with the error when an answer no retry changes stopped it. */
  readonly done: Promise<void>;
}

/**
 * Follows a chord stream served as a Durable Stream, resuming from its offsets. `url` is
 * absolute, or relative to the page's `location` in a browser; a URL that cannot be fetched
 * or an option of the wrong type throws a `TypeError` at once.
 *
 * `T` is the value's type, e.g. the one `chord::typescript` generates from the Rust state:
 * `follow<Lane>(url)`, or taken from `options.replica` (a `Replica<Lane>`). It is what the
 * stream is trusted to carry, not checked; without it the value is `unknown`.
 */
export function follow<T = unknown>(url: string | URL, options?: FollowOptions<T>): Follower<T>;
