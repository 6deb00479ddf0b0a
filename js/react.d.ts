// Type declarations for react.mjs, the `chord-replica/react` entry: React hooks over `follow`.

import type { ReactNode } from 'react';
import type { FollowOptions, FollowStats, Follower } from './chord-replica.js';

/** What a store is given: `follow`'s options (not `replica`), plus its own. */
export interface ChordStoreOptions<T = unknown> extends Omit<FollowOptions<T>, 'replica'> {
  /** The value before the first base batch, and the one a server render selects from. */
  initialValue?: T;
  /**
   * Milliseconds the follower keeps going after its last user left, so that a remount does
   * not reconnect (default 0: until the next macrotask).
   */
  linger?: number;
}

/** A follower's status; a new frozen object on each change. */
export interface ChordStatus {
  /** Whether the stream is live (delivered since the connection opened, not broken since). */
  readonly connected: boolean;
  /** Whether the store is following (it has users, or a follower lingers). */
  readonly following: boolean;
  /** The last error since the stream was last live, else `null`. */
  readonly error: unknown;
  /** `follow`'s counters when the status last changed. */
  readonly stats: Readonly<FollowStats>;
  /** The offset the value reflects (`null` until the first start). */
  readonly offset: string | null;
}

/** One stream followed while it has users, shared by the components that use it. */
export interface ChordStore<T = unknown> {
  /** The stream's URL as given. */
  readonly url: string;
  /** The current value (`initialValue` until the first base batch). */
  getValue(): T | undefined;
  /** The value a server render uses: `initialValue`. */
  getServerValue(): T | undefined;
  getStatus(): ChordStatus;
  /**
   * Calls `listener()` after each batch that changed the value (a base batch equal to the
   * value held changes nothing); holds the follower meanwhile.
   */
  subscribe(listener: () => void): () => void;
  /** Calls `listener()` on each status change; holds the follower meanwhile. */
  subscribeStatus(listener: () => void): () => void;
  /** Holds the follower without listening; returns the release. */
  retain(): () => void;
  /** The running follower, or `null`. */
  readonly follower: Follower<T> | null;
  /** How many users hold the follower. */
  readonly users: number;
}

/** A store that follows `url` while it has users; nothing is fetched before the first. */
export function createChordStore<T = unknown>(url: string | URL, options?: ChordStoreOptions<T>): ChordStore<T>;

/** Whether `x` was made by `createChordStore`. */
export function isChordStore(x: unknown): x is ChordStore<unknown>;

/** The props of `ChordProvider`: a store, or a URL (and options) to make one from. */
export type ChordProviderProps<T = unknown> =
  | { store: ChordStore<T>; url?: undefined; options?: undefined; children?: ReactNode }
  | { store?: undefined; url: string | URL; options?: ChordStoreOptions<T>; children?: ReactNode };

/** Shares one store with the components below. */
export function ChordProvider<T = unknown>(props: ChordProviderProps<T>): ReactNode;

/** The store of the nearest `ChordProvider`; throws outside one. */
export function useChordStore<T = unknown>(): ChordStore<T>;

/** Options of `useChord`. */
export interface UseChordOptions<S> {
  /** When two selected values are the same (default `Object.is`). */
  equals?: (a: S, b: S) => boolean;
}

/** Where `useChord` reads from: a store, or a stream URL (one shared follower per URL). */
export type ChordSource<T = unknown> = ChordStore<T> | string | URL;

/**
 * The selected slice of the nearest `ChordProvider`'s value (`undefined` before the first
 * base batch, unless the store has an `initialValue`), re-rendering only when it changed.
 */
export function useChord<T = unknown, S = unknown>(selector: (value: T | undefined) => S, options?: UseChordOptions<S>): S;
/** The whole of `source`'s value. */
export function useChord<T = unknown>(
  source: ChordSource<T>,
  selector?: undefined,
  options?: UseChordOptions<T | undefined>,
): T | undefined;
/** The selected slice of `source`'s value. */
export function useChord<T = unknown, S = unknown>(
  source: ChordSource<T>,
  selector: (value: T | undefined) => S,
  options?: UseChordOptions<S>,
): S;

/** The follower's status, or the part a selector picks (re-rendering only when it changed). */
export function useChordStatus<S = ChordStatus>(selector?: (status: ChordStatus) => S): S;
export function useChordStatus<S = ChordStatus>(source: ChordSource, selector?: (status: ChordStatus) => S): S;

/** Holds a store's follower while the calling component is mounted; the store. */
export function useChordFollow<T = unknown>(source?: ChordSource<T>): ChordStore<T>;
