// Types of chord-replica/ai-sdk: the Vercel AI SDK's `useChat` over chord's AI SDK door.
//
// Self-contained: nothing here imports `ai`, so the package type-checks without it. The
// types are written to fit the AI SDK's (7.0.x): a `ChordChatTransport<T>` is a
// `ChatTransport<ChordUIMessage<T>>`, a `ChordUIMessage<T>` is a `UIMessage`, and
// `createChatState().onData` is a `useChat({ onData })`.
import type { FollowStats, Limits, Op } from './chord-replica.js';

/** A chord batch as a `data-chord` part carries it: op tuples with full paths. */
export type ChordBatch = Op[];

/**
 * The data parts of a chord chat by name, for the AI SDK's own message type:
 * `UIMessage<unknown, ChordDataTypes<Research>>` (use it when the app adds parts of its own;
 * else {@link ChordUIMessage}).
 */
export type ChordDataTypes<T> = { state: T; chord: ChordBatch };

/** The run's whole state: sent at its start and its end (the message keeps the last). */
export interface ChordStatePart<T> {
  type: 'data-state';
  id?: string;
  data: T;
}

/** One flush's state changes: transient (given to `onData`, not kept in the message). */
export interface ChordBatchPart {
  type: 'data-chord';
  id?: string;
  data: ChordBatch;
  transient?: boolean;
}

/** The data parts of a chord run. */
export type ChordDataPart<T> = ChordStatePart<T> | ChordBatchPart;

/** A part of a chord chat's message: a user's text or file, the run's text and state. */
export type ChordUIMessagePart<T> =
  | { type: 'text'; text: string; state?: 'streaming' | 'done' }
  | { type: 'file'; mediaType: string; filename?: string; url: string }
  | { type: 'step-start' }
  | ChordStatePart<T>
  | { type: 'data-chord'; id?: string; data: ChordBatch };

/**
 * A message of a chord chat, an AI SDK `UIMessage` (`useChat<ChordUIMessage<Research>>`):
 * an assistant message holds the run's text parts and its state as a `data-state` part.
 */
export interface ChordUIMessage<T = unknown> {
  id: string;
  role: 'system' | 'user' | 'assistant';
  metadata?: unknown;
  parts: Array<ChordUIMessagePart<T>>;
}

/** The UI message chunks chord's door sends (a subset of the AI SDK's `UIMessageChunk`). */
export type ChordUIMessageChunk<T = unknown> =
  | { type: 'start'; messageId?: string }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'data-state'; id?: string; data: T; transient?: boolean }
  | { type: 'data-chord'; id?: string; data: ChordBatch; transient?: boolean }
  | { type: 'finish' }
  | { type: 'error'; errorText: string };

/** Headers as the transport takes them. */
export type ChatHeaders = Record<string, string> | Headers | ReadonlyArray<readonly [string, string]>;

/** A value, or a function (sync or async) called for every request that gives it. */
export type Resolvable<V> = V | (() => V | PromiseLike<V>);

/** What `onReconnect` is told before each request sent again. */
export interface ChatReconnectInfo {
  chatId: string;
  /** The id of the last event handed on (`''` if none yet): sent as `Last-Event-ID`. */
  lastEventId: string;
  /** 1 for the first attempt after a cut, 2 for the next if that one failed, and so on. */
  attempt: number;
  /** Why: the connection's error, a refused attempt's, or an Error saying the body ended. */
  error: unknown;
}

/** The options of {@link ChordChatTransport}. */
export interface ChordChatTransportOptions {
  /** Where the door is nested (default `/api/chat`): `POST {api}`, `GET {api}/{chatId}/stream`. */
  api?: string;
  /** The `fetch` that sends each request (default: the global one, looked up at each call). */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /**
   * Headers of every request. A function is called again for each, e.g. to refresh a token,
   * and then a resume refused with `401` or `403` is asked again (within the attempts).
   */
  headers?: Resolvable<ChatHeaders | undefined>;
  /** Members added to every POST's body (before `id`, `messages`, `trigger`, `messageId`). */
  body?: Resolvable<object | undefined>;
  /** fetch's `credentials` (`'include'` to send cookies to another origin). */
  credentials?: Resolvable<RequestCredentials | undefined>;
  /** How a cut stream is resumed. */
  retry?: {
    /** Requests in a row that may fail before the stream gives up (default 8). */
    attempts?: number;
    /** The first wait, in ms, doubled after each failure (default 100). */
    delay?: number;
    /** The longest wait, in ms (default 5000). */
    maxDelay?: number;
  };
  /** The largest SSE event accepted, in bytes (default 64 MiB). */
  maxEvent?: number;
  /** Called before each request sent again. */
  onReconnect?: (info: ChatReconnectInfo) => void;
}

/** What the AI SDK passes to `sendMessages` (its `ChatTransport` options). */
export interface ChordSendOptions {
  chatId: string;
  /** The chat's messages: only the last one is sent. */
  messages: ReadonlyArray<unknown>;
  trigger: 'submit-message' | 'regenerate-message';
  messageId?: string | undefined;
  abortSignal?: AbortSignal | undefined;
  headers?: Record<string, string> | Headers;
  body?: object;
  metadata?: unknown;
}

/** What the AI SDK passes to `reconnectToStream`. */
export interface ChordReconnectOptions {
  chatId: string;
  abortSignal?: AbortSignal | undefined;
  headers?: Record<string, string> | Headers;
  body?: object;
  metadata?: unknown;
}

/**
 * The AI SDK's `ChatTransport` for chord's door. It posts only the chat's last message,
 * reads the SSE itself, and when the connection is cut before the run's last chunk
 * (`finish`, `error`) it continues the same stream with `GET {api}/{chatId}/stream` and
 * `Last-Event-ID`, each chunk once. The id to resume after is held per `api` and chat,
 * shared by the transports of one `api` (one made at each render resumes an earlier one's).
 */
export class ChordChatTransport<T = unknown> {
  constructor(options?: ChordChatTransportOptions);
  /**
   * `false`: a resumed stream continues the message the chat kept (after `Last-Event-ID`),
   * or, when it kept none, is the run from its start under the run's own message id.
   */
  readonly resumeStreamIsReplay: false;
  /** Posts the last message and returns the run's chunks, resumed across cuts. */
  sendMessages(options: ChordSendOptions): Promise<ReadableStream<ChordUIMessageChunk<T>>>;
  /**
   * The chat's run in progress, or `null` (a `204`). After a stream of this transport ended
   * with a {@link ChordStreamCutError}, the chunks after its last id; else the run from its
   * start.
   */
  reconnectToStream(options: ChordReconnectOptions): Promise<ReadableStream<ChordUIMessageChunk<T>> | null>;
  /** The last SSE id handed on for the chat's run being read or cut (at this `api`), or `undefined`. */
  lastEventId(chatId: string): string | undefined;
}

/** A refused request: `status` and the server's text (`body`, at most 500 characters). */
export class ChordChatError extends Error {
  constructor(message: string, info?: { status?: number; body?: string; url?: string; cause?: unknown });
  readonly status: number | undefined;
  readonly body: string;
  readonly url: string;
}

/**
 * A stream cut and not resumed within the retry policy. A `TypeError` whose message starts
 * with `network`: the AI SDK's `Chat` takes it for a dropped connection, keeps the message
 * and resumes it later (`reconnectToStream`, which continues after `lastEventId`).
 */
export class ChordStreamCutError extends TypeError {
  constructor(message: string, info: { chatId: string; lastEventId: string; attempts: number; cause?: unknown });
  readonly chatId: string;
  readonly lastEventId: string;
  readonly attempts: number;
}

/** The options of {@link createChatState}. */
export interface ChatStateOptions<T> {
  /** The value before the first `data-state`, and what a server render selects from. */
  initialValue?: T;
  /** Bounds on what one batch may do (`DEFAULT_LIMITS` by default). */
  limits?: Partial<Limits>;
  /** Told of each batch that cannot apply and each listener that throws (default: console.error). */
  onError?: (error: unknown) => void;
}

/** A chat state's status (a `ChordStatus` of `chord-replica/react`); a new frozen object on each change. */
export interface ChatStateStatus {
  /** Always `false`: the connection is `useChat`'s (`status`). */
  readonly connected: boolean;
  /** Always `false`. */
  readonly following: boolean;
  /** Why the last batch could not apply, `null` again after the next `data-state`. */
  readonly error: unknown;
  /** Whether batches are skipped until the next `data-state` (after one that could not apply). */
  readonly stale: boolean;
  /** `bases` (`data-state` parts) and `batches` (`data-chord` parts) applied, `errors`. */
  readonly stats: Readonly<FollowStats>;
  /** Always `null`. */
  readonly offset: string | null;
}

/**
 * The state of a chord chat kept from its data parts: a store `useChord(state, selector)`
 * (`chord-replica/react`) reads, re-rendering a component only when its selected part
 * changed.
 */
export interface ChatState<T = unknown> {
  /** `''`: a chat state follows no URL. */
  readonly url: string;
  /** The state (`initialValue` until the first `data-state`). */
  getValue(): T | undefined;
  /** What a server render selects from: `initialValue`. */
  getServerValue(): T | undefined;
  getStatus(): ChatStateStatus;
  /** Calls `listener()` after each change of the value; returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
  /** Calls `listener()` after each change of the status. */
  subscribeStatus(listener: () => void): () => void;
  /** A no-op (the data comes from `useChat`); returns a no-op release. */
  retain(): () => void;
  readonly follower: null;
  /** How many value listeners there are. */
  readonly users: number;
  /** Calls `listener(selected, previous)` when `selector(value)` changed (`Object.is`). */
  select<S>(selector: (value: T | undefined) => S, listener: (selected: S, previous: S) => void): () => void;
  /**
   * For `useChat({ onData })`: a `data-state` part sets the state (keeping every part equal
   * to the one held), a `data-chord` part applies its batch; other parts are ignored. Never
   * throws: a batch that cannot apply changes nothing and is in the status.
   */
  readonly onData: (part: ChordDataPart<T> | { readonly type: string; readonly data?: unknown }) => void;
  /** Sets the state from a whole value, as a `data-state` part does. */
  readonly setValue: (value: T) => void;
}

/** A chat state; one per chat (`useChat`). */
export function createChatState<T = unknown>(options?: ChatStateOptions<T>): ChatState<T>;

/** The type of the state in a message of type `M`: its `data-state` part's data (`unknown` if none). */
export type StateOfMessage<M extends { readonly parts: ReadonlyArray<unknown> }> =
  [Extract<M['parts'][number], { type: 'data-state' }>] extends [never]
    ? unknown
    : Extract<M['parts'][number], { type: 'data-state' }> extends { data: infer T }
      ? T
      : unknown;

/**
 * The state a message holds: its last `data-state` part's data (the run's final state once
 * it finished), or `undefined`. Typed by the message: `ChordUIMessage<T>` or
 * `UIMessage<unknown, ChordDataTypes<T>>` give a `T`.
 */
export function stateOf<M extends { readonly parts: ReadonlyArray<unknown> }>(
  message: M | null | undefined,
): StateOfMessage<M> | undefined;
