// createChatState: a replica of a chord run's state fed from the AI SDK's data parts
// (`useChat({ onData })`), as a store `useChord` from `chord-replica/react` reads.

import { apply } from './apply.mjs';
import { keepEqualParts } from './replica.mjs';

/** The counters of a chat state's status (`follow`'s fields; `batches` and `bases` counted). */
const NO_STATS = Object.freeze({
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

// `chord-replica/react` takes a store only if it carries the module-private symbol its
// `createChordStore` marks stores with (this description); a chat state answers it through
// a Proxy, so the React entry need not be imported (nor React loaded) by this one.
const REACT_STORE = 'chord-replica/react store';
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
 * @param {import('../ai-sdk.d.ts').ChatStateOptions<unknown>} [options]
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
  Object.freeze(store);
  return new Proxy(store, {
    get(target, key, receiver) {
      if (typeof key === 'symbol' && key.description === REACT_STORE) return REACT_MARK;
      return Reflect.get(target, key, receiver);
    },
  });
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
