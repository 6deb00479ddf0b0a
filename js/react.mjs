// chord-replica/react: React hooks over `follow`, built on `useSyncExternalStore`.
//
// A store follows one stream while a component uses it and stops when the last one goes.
// Values are copy on write (an unchanged subtree is the very object it was), so a component
// that selects a slice re-renders only when a batch changed that slice.
//
//   import { ChordProvider, createChordStore, useChord, useChordStatus } from 'chord-replica/react';
//
//   const lane = createChordStore('/streams/lanes/main');
//   function Transcript() {
//     // Renders when the transcript changed, not on every token of the answer.
//     const transcript = useChord((l) => l?.transcript ?? []);
//     return <ol>{transcript.map((m, i) => <li key={i}>{m.role}: {m.text}</li>)}</ol>;
//   }
//   function Connection() {
//     // Selected: the whole status is a new object on every batch.
//     const connected = useChordStatus((s) => s.connected);
//     const error = useChordStatus((s) => s.error);
//     return <span>{connected ? 'live' : error ? String(error.message ?? error) : 'connecting…'}</span>;
//   }
//   <ChordProvider store={lane}><Connection /><Transcript /></ChordProvider>

import {
  createContext,
  createElement,
  useContext,
  useDebugValue,
  useEffect,
  useRef,
  useMemo,
  useState,
  useSyncExternalStore,
} from 'react';
import { follow, Replica } from './chord-replica.mjs';
import { NO_STATS } from './src/follow.mjs';

// Registered (`Symbol.for`), so that a store made by another entry (`chord-replica/ai-sdk`'s
// chat state) carries it without importing this one (nor React).
const STORE = Symbol.for('chord-replica/react store');

/**
 * A store that follows `url` while it has users (components, or `retain()` callers), for
 * many components to share one follower: pass it to `<ChordProvider store={...}>` or to
 * `useChord(store, selector)`.
 *
 * `options` are `follow`'s (`fetch`, `transport`, `backoffMin`, ..., and `onEvent` /
 * `onError`, which are called too), plus:
 * - `initialValue`: the value before the first base batch, and the one a server render
 *   (`getServerSnapshot`) selects from (default `undefined`);
 * - `linger`: milliseconds the follower keeps going after its last user left, so that a
 *   remount (React's StrictMode, a route change) does not reconnect (default 0: until the
 *   next macrotask).
 *
 * Nothing is fetched until the first user subscribes, so creating a store during a server
 * render costs nothing.
 *
 * @param {string | URL} url the stream's URL
 * @param {object} [options]
 */
export function createChordStore(url, options = {}) {
  if (typeof url !== 'string' && !(url instanceof URL)) {
    throw new TypeError(`createChordStore: the stream's URL must be a string or a URL, found ${typeof url}`);
  }
  if (options === null || typeof options !== 'object') {
    throw new TypeError('createChordStore: options must be an object');
  }
  const { initialValue, linger = 0, onEvent, onError, ...followOptions } = options;
  if (followOptions.replica !== undefined) {
    throw new TypeError('createChordStore: options.replica is not taken (the store makes its own)');
  }
  if (!Number.isFinite(linger) || linger < 0) {
    throw new TypeError(`createChordStore: options.linger must be a number of milliseconds >= 0, found ${linger}`);
  }
  for (const [name, f] of [['onEvent', onEvent], ['onError', onError]]) {
    if (f !== undefined && typeof f !== 'function') {
      throw new TypeError(`createChordStore: options.${name} must be a function`);
    }
  }

  let value = initialValue;
  // The store's replica, made when it first follows and kept when it stops: following again
  // (a remount after the linger, a new user) joins with the value held, and the base it
  // joins with keeps every part it did not change, so their components do not render.
  let replica = null;
  let follower = null;
  let users = 0;
  let stopTimer = null;
  const valueListeners = new Set();
  const statusListeners = new Set();
  let status = Object.freeze({ connected: false, following: false, error: null, stats: NO_STATS, offset: null });

  const setStatus = (change) => {
    const stats = follower ? Object.freeze({ ...follower.stats }) : status.stats;
    const next = Object.freeze({ ...status, stats, offset: follower ? follower.offset : status.offset, ...change });
    status = next;
    for (const listener of [...statusListeners]) listener();
  };

  const start = () => {
    if (replica === null) {
      replica = new Replica();
      // The value the store shows changes only here, once per batch that changed it, so
      // every component reading it during one render sees the same value.
      replica.subscribe(
        (v) => v,
        (next) => {
          value = next === undefined ? initialValue : next;
          for (const listener of [...valueListeners]) listener();
        },
      );
    }
    const mine = follow(url, {
      ...followOptions,
      replica,
      onEvent(event) {
        if (event.type === 'live') setStatus({ connected: event.live, ...(event.live ? { error: null } : {}) });
        else setStatus({});
        onEvent?.(event);
      },
      onError(error, info) {
        setStatus({ error, ...(info.stopped ? { connected: false, following: false } : {}) });
        if (onError) onError(error, info);
        else if (info.stopped || info.source !== 'stream') console.error('chord-replica/react:', error);
      },
    });
    follower = mine;
    setStatus({ following: true, error: null });
    mine.done.then(
      () => {},
      () => {
        // An answer no retry changes: the error is in the status already; a later user
        // starts over.
        if (follower === mine) follower = null;
      },
    );
  };

  const stop = () => {
    stopTimer = null;
    if (users > 0 || follower === null) return;
    const stopping = follower;
    follower = null;
    stopping.stop();
    setStatus({ connected: false, following: false, stats: Object.freeze({ ...stopping.stats }) });
    onIdle?.();
  };

  /** Set by the URL registry: called when the store stopped for want of users. */
  let onIdle = null;

  const retain = () => {
    users += 1;
    if (stopTimer !== null) {
      clearTimeout(stopTimer);
      stopTimer = null;
    }
    if (follower === null) start();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      users -= 1;
      if (users === 0 && stopTimer === null) {
        stopTimer = setTimeout(stop, linger);
        stopTimer.unref?.();
      }
    };
  };

  /** Adds a listener to `set` and holds the follower while it is there. */
  const listen = (set) => (listener) => {
    const release = retain();
    const entry = () => listener();
    set.add(entry);
    return () => {
      set.delete(entry);
      release();
    };
  };

  const store = {
    [STORE]: { setOnIdle: (f) => (onIdle = f) },
    url: String(url),
    /** The current value (`initialValue` until the first base batch). */
    getValue: () => value,
    /** The value a server render uses: `initialValue`. */
    getServerValue: () => initialValue,
    /** The status: `{ connected, following, error, stats, offset }`, a new object on each change. */
    getStatus: () => status,
    /**
     * Calls `listener()` after each batch that changed the value (a base batch equal to the
     * value held changes nothing); holds the follower meanwhile.
     */
    subscribe: listen(valueListeners),
    /** Calls `listener()` on each status change; holds the follower meanwhile. */
    subscribeStatus: listen(statusListeners),
    /** Holds the follower without listening; returns the release. */
    retain,
    /** The running follower, or `null`. */
    get follower() {
      return follower;
    },
    /** How many users hold the follower. */
    get users() {
      return users;
    },
  };
  return Object.freeze(store);
}

/** Whether `x` was made by `createChordStore`. */
export function isChordStore(x) {
  return x !== null && typeof x === 'object' && x[STORE] !== undefined;
}

// Stores made for a bare URL (`useChord(url, selector)`), one per URL while in use, so that
// every component following the same URL shares one follower. A store joins at its first
// render and leaves when it stops; one that never gets a user (a server render) leaves
// after a macrotask.
const byUrl = new Map();

function storeForUrl(url) {
  const key = String(url);
  let store = byUrl.get(key);
  if (store === undefined) {
    store = createChordStore(url);
    const entry = store;
    byUrl.set(key, entry);
    const leave = () => {
      if (byUrl.get(key) === entry && entry.users === 0) byUrl.delete(key);
    };
    entry[STORE].setOnIdle(leave);
    const check = setTimeout(leave, 0);
    check.unref?.();
  }
  return store;
}

const ChordContext = createContext(null);

/**
 * Shares one store with the components below: `<ChordProvider store={store}>`, or
 * `<ChordProvider url="/streams/lanes/main" options={...}>`, which creates the store once
 * (a later change of `url` makes a new one; `options` are read when it is made).
 */
export function ChordProvider({ store, url, options, children }) {
  if (store !== undefined && !isChordStore(store)) {
    throw new TypeError('ChordProvider: store must come from createChordStore');
  }
  if (store === undefined && url === undefined) {
    throw new TypeError('ChordProvider: give a store or a url');
  }
  const [made, setMade] = useState(() => (store === undefined ? createChordStore(url, options) : null));
  let own = made;
  if (store === undefined && made !== null && made.url !== String(url)) {
    own = createChordStore(url, options);
    setMade(own);
  }
  return createElement(ChordContext.Provider, { value: store ?? own }, children);
}

/** The store of the nearest `ChordProvider`; throws outside one. */
export function useChordStore() {
  const store = useContext(ChordContext);
  if (store === null) {
    throw new Error('useChordStore: no <ChordProvider> above this component (or pass a store or URL to the hook)');
  }
  return store;
}

function resolve(source, who) {
  if (isChordStore(source)) return source;
  if (typeof source === 'string' || source instanceof URL) return storeForUrl(source);
  throw new TypeError(`${who}: the source must be a stream URL or a store from createChordStore, found ${source === null ? 'null' : typeof source}`);
}

const identity = (v) => v;

/**
 * `useSyncExternalStore` over `selector(root)`, memoized as React's
 * `useSyncExternalStoreWithSelector` is: the same root gives the same result without running
 * the selector again, and a result `equals` to the previous one (the last one rendered, for
 * a new selector each render) is replaced by it, so the snapshot is stable even for a
 * selector that builds a new object.
 */
function useSelected(subscribe, getRoot, getServerRoot, selector, equals) {
  const rendered = useRef({ has: false, value: undefined });
  const [getSnapshot, getServerSnapshot] = useMemo(() => {
    const memoize = (getter) => {
      let has = false;
      let root;
      let selected;
      return () => {
        const nextRoot = getter();
        if (has && Object.is(root, nextRoot)) return selected;
        let next = selector(nextRoot);
        const prior = has ? { has, value: selected } : rendered.current;
        if (prior.has && equals(prior.value, next)) next = prior.value;
        has = true;
        root = nextRoot;
        selected = next;
        return next;
      };
    };
    return [memoize(getRoot), memoize(getServerRoot)];
  }, [getRoot, getServerRoot, selector, equals]);
  const value = useSyncExternalStore(subscribe, getSnapshot, getServerSnapshot);
  useEffect(() => {
    rendered.current = { has: true, value };
  });
  return value;
}

/**
 * The selected slice of a followed stream's value, re-rendering only when a batch changed
 * it (by `Object.is`, or `options.equals`).
 *
 * - `useChord(selector, options?)`: the nearest `ChordProvider`'s store;
 * - `useChord(source, selector?, options?)`: `source` a store, or a stream URL (one shared
 *   follower per URL, stopped when its last component unmounts).
 *
 * The selector gets the value (`initialValue`, `undefined` by default, before the first base
 * batch) and should return a part of it (`(lane) => lane?.transcript`): values are copy on
 * write, so an unchanged part is the same object and its component does not render. A
 * selector may build a new object if `options.equals` says when two are the same.
 *
 * During a server render nothing is followed: the selector gets the store's `initialValue`.
 */
export function useChord(sourceOrSelector, selectorOrOptions, maybeOptions) {
  const context = useContext(ChordContext);
  let store;
  let selector;
  let options;
  if (typeof sourceOrSelector === 'function') {
    if (context === null) {
      throw new Error('useChord(selector): no <ChordProvider> above this component; pass a store or URL first');
    }
    store = context;
    selector = sourceOrSelector;
    options = selectorOrOptions;
  } else {
    store = resolve(sourceOrSelector, 'useChord');
    selector = selectorOrOptions ?? identity;
    options = maybeOptions;
  }
  if (typeof selector !== 'function') throw new TypeError('useChord: the selector must be a function');
  const equals = options?.equals ?? Object.is;
  if (typeof equals !== 'function') throw new TypeError('useChord: options.equals must be a function');
  const selected = useSelected(store.subscribe, store.getValue, store.getServerValue, selector, equals);
  useDebugValue(selected);
  return selected;
}

/**
 * The follower's status: `{ connected, following, error, stats, offset }` (`connected`:
 * the stream is live; `error`: the last error since it was last live, else `null`;
 * `stats`: `follow`'s counters when the status last changed). It changes on every event of
 * the follower, batches included: pass a selector (`(s) => s.connected`) to render only
 * when what you show changed.
 *
 * `useChordStatus(selector?)` reads the nearest provider's store; `useChordStatus(source,
 * selector?)` the given store or URL's. It holds the follower as `useChord` does.
 */
export function useChordStatus(sourceOrSelector, maybeSelector) {
  const context = useContext(ChordContext);
  let store;
  let selector;
  if (sourceOrSelector === undefined || typeof sourceOrSelector === 'function') {
    if (context === null) {
      throw new Error('useChordStatus: no <ChordProvider> above this component; pass a store or URL first');
    }
    store = context;
    selector = sourceOrSelector ?? identity;
  } else {
    store = resolve(sourceOrSelector, 'useChordStatus');
    selector = maybeSelector ?? identity;
  }
  if (typeof selector !== 'function') throw new TypeError('useChordStatus: the selector must be a function');
  const selected = useSelected(store.subscribeStatus, store.getStatus, store.getStatus, selector, Object.is);
  useDebugValue(selected);
  return selected;
}

/**
 * Holds a store's follower while the calling component is mounted, without reading
 * anything (a component that only wants the stream followed, or followed before its
 * children render).
 */
export function useChordFollow(source) {
  const context = useContext(ChordContext);
  if (source === undefined && context === null) {
    throw new Error('useChordFollow: no <ChordProvider> above this component; pass a store or URL');
  }
  const store = source === undefined ? context : resolve(source, 'useChordFollow');
  useEffect(() => store.retain(), [store]);
  return store;
}
