// A replica of one stream: a decoder, the current value and its subscribers.

import { ChordError, at, fail } from './errors.mjs';
import { checkWireOp, isBase, validOp } from './grammar.mjs';
import { eachElement, parseJson } from './batch-text.mjs';
import { IDS, IN_PLACE, STREAM, checkWireJson, createDecoder, decodeAgain } from './wire.mjs';
import { Batch, DEFAULT_LIMITS, apply, step } from './apply.mjs';

// How far a streamed batch has failed, most serious first: the first error at one level wins
// over every error at a later one, wherever in the batch each is, as when the batch is parsed
// whole, checked whole, decoded whole and then applied (see `Replica#applyWireText`).
const NOT_BASE = 1; // a failed replica's batch is not a base batch: only syntax can beat it
const WIRE_JSON = 2; // what JSON.parse accepts and chord's decoder refuses
const GRAMMAR = 3; // the wire grammar
const DECODE = 4; // ids, short forms
const APPLY = 5; // an op that cannot apply
const NONE = 6;

/**
 * One replica of one stream: a decoder and the current value. Feed it every wire batch of a
 * subscription in order; the first must be a base batch.
 *
 * After a failure (a decode error, an op that cannot apply) it refuses further batches with
 * `ReplicaFailed` until the next base batch, which rebuilds it from scratch: that is what a
 * resubscription's first batch is, so reconnecting is all recovery takes. `reset()` forgets
 * everything at once, for an explicit resubscription; `reset({ keepValue: true })` forgets
 * the ids and any failure but keeps the value, for a resubscription whose base batch may
 * repeat much of it.
 *
 * Values are copy on write (see {@link apply}): after a batch, every subtree it did not
 * change is the same object as before (`===`), and every container on a changed path, the
 * root included, is new. `subscribe(selector, listener)` builds on that: the listener runs
 * only when its slice changed. A failed batch leaves `value` the very object it was.
 *
 * A base batch keeps that too when the replica holds a value (a producer that restarted
 * writes one; a resubscription begins with one): every object or array of the new value
 * deep-equal to the one at the same place in the held value is the held object, so only
 * what the base changed is new (see `keepEqualParts` below). A base equal to
 * the held value leaves `value` the very object it was: `onChange` still runs (once per
 * batch, as always, with that same value), and no subscription's listener does.
 *
 * `onChange` runs after a batch has applied, then each subscription. If one throws, the
 * batch stays applied (`value` is the new one, `failed` stays `null`), the others still run,
 * and `applyWire` rethrows the first error to its caller; `follow` reports such an error
 * (`onError`, else `console.error`) and keeps following.
 *
 * In TypeScript the value's type is a parameter, `Replica<T>` (`unknown` by default): with
 * the declarations `chord::typescript` generates from the Rust state, `new Replica<Lane>()`
 * types `value`, `onChange` and `subscribe`'s selector (see chord-replica.d.ts).
 *
 * @example
 * // Kept current by `follow`, which resumes from the stream's offsets:
 * const replica = new Replica({ onChange: (value) => console.log(value) });
 * const stop = replica.subscribe((lane) => lane.status, (status) => console.log(status));
 * follow('http://127.0.0.1:8080/streams/lanes/main', { replica });
 */
export class Replica {
  #decoder;
  #value;
  #failed = null;
  // After `reset({ keepValue: true })` with a value: only a base batch may follow (a `NotBase`
  // error otherwise), as the ops of a new subscription are not read against the old value.
  #awaitingBase = false;
  /** @type {Set<{ selector: Function, listener: Function, selected: unknown }>} */
  #subscriptions = new Set();

  /**
   * @param {object} [options]
   * @param {Partial<typeof DEFAULT_LIMITS>} [options.limits] bounds for `apply`
   * @param {(value: unknown, ops: Array) => void} [options.onChange] called after every
   *   batch that applied, with the new value and the decoded ops (full paths, an append's
   *   text); a throw leaves the batch applied and is rethrown by `applyWire`
   */
  constructor({ limits, onChange } = {}) {
    this.limits = limits;
    /** @type {((value: unknown, ops: Array) => void) | null} */
    this.onChange = onChange ?? null;
    this.reset();
  }

  /** The current value (`undefined` before the first base batch). Treat it as read-only. */
  get value() {
    return this.#value;
  }

  /** The error that stopped the replica, or `null`. */
  get failed() {
    return this.#failed;
  }

  /**
   * Forgets the value, the ids and any failure: the state of a fresh subscription.
   * Subscriptions stay, and are not called: the next batch that applies calls those whose
   * slice differs from the one they were last given.
   *
   * With `keepValue`, the value stays: the replica then takes only a base batch, as after a
   * failure, and that base keeps every part of the value it did not change (the same
   * objects), so a resubscription re-renders only what changed meanwhile. `follow` resets so
   * on each fresh start.
   * @param {{ keepValue?: boolean }} [options]
   */
  reset({ keepValue = false } = {}) {
    this.#decoder = createDecoder();
    this.#failed = null;
    if (!keepValue) this.#value = undefined;
    this.#awaitingBase = this.#value !== undefined;
  }

  /**
   * Calls `listener(selected, previous)` after every batch that changes
   * `selector(value)` (by `Object.is`), where `previous` is what it selected before. The
   * selector runs once now (if there is a value) and once after each batch that applied,
   * on the new value; before the first base batch the selected slice is `undefined`.
   * Values are copy on write, so a selector that returns a part of the value
   * (`(lane) => lane.transcript[3]`) fires exactly when a batch changed something in it.
   * @template S the slice's type
   * @param {(value: any) => S} selector
   * @param {(selected: S, previous: S | undefined) => void} listener
   * @returns {() => void} unsubscribes
   */
  subscribe(selector, listener) {
    if (typeof selector !== 'function' || typeof listener !== 'function') {
      throw new TypeError('subscribe: the selector and the listener must be functions');
    }
    const subscription = { selector, listener, selected: this.#value === undefined ? undefined : selector(this.#value) };
    this.#subscriptions.add(subscription);
    return () => {
      this.#subscriptions.delete(subscription);
    };
  }

  /**
   * Decodes and applies one wire batch given as JSON text (an SSE event's `data`), op by
   * op: the text is read once, each op parsed, checked, decoded and applied before the
   * next is read, so the batch is never held as one parsed tree (see js/README.md for the
   * heap this takes). The outcome is the same as parsing it whole, then checking, decoding
   * and applying it: a syntax error anywhere wins over every other error, then what
   * chord's decoder refuses in JSON (lone surrogates, numbers out of range, nesting), then
   * the first op breaking the wire grammar, then the first decode error, then the first op
   * that cannot apply. With no `onChange` the decoded ops are not kept.
   * @param {string} textBatch
   * @returns {unknown} the new value
   * @throws {ChordError} the batch's error; the value is left as it was
   * @throws {unknown} what `onChange` or a subscription threw, after the batch applied
   *   (`failed` stays `null`)
   */
  applyWireText(textBatch) {
    return this.#applyText(textBatch, this.onChange !== null, undefined, false);
  }

  /**
   * Decodes and applies one already parsed wire batch.
   * @param {unknown} wireBatch
   * @returns {unknown} the new value
   * @throws {ChordError} the batch's error; the value is left as it was
   * @throws {unknown} what `onChange` or a subscription threw, after the batch applied
   *   (`failed` stays `null`)
   */
  applyWire(wireBatch) {
    return this.#apply(wireBatch, false, this.onChange !== null, undefined);
  }

  /**
   * @internal As `applyWire` (or `applyWireText` for a string, `text`), handing the decoded
   * ops (when `wantOps`, else `null`) and whether the batch was a base batch to `decoded`
   * before `onChange` runs; `inPlace` when only the caller holds the batch, which is then
   * decoded in place. `wantOps: 'lazy'` for a text: the ops are not kept while the batch
   * streams (unless `onChange` wants them), and `decoded` gets, third, a function that
   * decodes them again from the text when called.
   */
  [IN_PLACE](wireBatch, { inPlace = false, text = false, wantOps = false, decoded } = {}) {
    const want = wantOps === true || this.onChange !== null;
    if (!text) return this.#apply(wireBatch, inPlace, want || wantOps === 'lazy', decoded);
    return this.#applyText(wireBatch, want, decoded, !want && wantOps === 'lazy');
  }

  #apply(wireBatch, inPlace, wantOps, decoded) {
    if (this.#failed !== null || this.#awaitingBase) {
      if (!isBase(wireBatch)) throw this.#notBase();
      // Started over, the value kept for the base to keep its unchanged parts.
      this.reset({ keepValue: true });
    }
    let ops;
    let value;
    try {
      ops = inPlace ? this.#decoder[IN_PLACE](wireBatch) : this.#decoder.decode(wireBatch);
      value = apply(this.#value, ops, this.limits);
    } catch (e) {
      throw this.#fail(e);
    }
    return this.#applied(value, wantOps ? ops : null, ops.length > 0 && ops[0][0] === 'r', decoded);
  }

  #applyText(text, wantOps, decoded, lazy) {
    // A failed replica, or one reset keeping its value, takes only a base batch, which starts
    // it over with a new decoder.
    const failed = this.#failed !== null || this.#awaitingBase;
    const decoder = failed ? createDecoder() : this.#decoder;
    // For ops decoded later, from the text: the ids as they were before this batch.
    const ids = lazy ? decoder[IDS]() : null;
    // Paths are frozen only in ops someone is given (see `batchDecoder`).
    const stream = decoder[STREAM](wantOps);
    // Without anyone to give the ops to, their values (parsed here, one op at a time) become
    // part of the value as they are.
    const limits = this.limits === undefined ? DEFAULT_LIMITS : { ...DEFAULT_LIMITS, ...this.limits };
    let batch = new Batch(limits, failed ? undefined : this.#value, !wantOps);
    let ops = wantOps ? [] : null;
    let level = NONE;
    let error = null;
    let applied = 0; // decoded ops so far: an apply error's index is among them
    let base = false;
    const raise = (e, at) => {
      error = e;
      level = at;
      // What follows is read only for an error that would win over this one.
      batch = ops = null;
      if (at <= DECODE) stream.poison();
    };
    let isArray = false;
    try {
      isArray = typeof text === 'string' && eachElement(text, (w, i, written, plain) => {
        // Each stage runs while no error of it or of a more serious stage has been seen.
        if (level <= NOT_BASE) return;
        if (i === 0 && failed && !(Array.isArray(w) && w[0] === 'r')) return raise(this.#notBase(), NOT_BASE);
        if (level <= WIRE_JSON) return;
        // A plain op (see `eachElement`) is known to be what `checkWireJson` checks: strings
        // with no lone surrogate, finite numbers, nesting well within the limit.
        if (!plain) {
          try {
            checkWireJson(w, 1);
          } catch (e) {
            return raise(e, WIRE_JSON);
          }
        }
        if (level <= GRAMMAR) return;
        try {
          checkWireOp(w, plain ? undefined : written);
        } catch (e) {
          return raise(at(e, i), GRAMMAR);
        }
        if (level <= DECODE) return;
        let op;
        try {
          op = stream.decode(w);
        } catch (e) {
          return raise(at(e, i), DECODE);
        }
        if (op === null) return;
        const j = applied++;
        if (j === 0) base = op[0] === 'r';
        if (level <= APPLY) return;
        try {
          // No `checkOp`: an op the wire grammar passed and the decoder resolved is one.
          step(batch, op);
        } catch (e) {
          return raise(at(e, j, validOp(op) && op[0] !== 'r' ? op[1] : undefined), APPLY);
        }
        ops?.push(op);
      });
    } catch (e) {
      // A syntax error: the text is not JSON, whatever else it holds.
      batch = ops = null;
      throw this.#fail(e);
    }
    if (!isArray) {
      // Not an array: parsed whole, as nothing in it can be a batch's op.
      let parsed;
      try {
        parsed = parseJson(text);
      } catch (e) {
        throw this.#fail(e instanceof ChordError ? e : fail('Json', { reason: e.message }));
      }
      return this.#apply(parsed, true, wantOps || lazy, decoded);
    }
    // An empty batch is not a base batch either (any other reached `ReplicaFailed` or an `r`).
    if (error === null && failed && applied === 0) raise(this.#notBase(), NOT_BASE);
    if (error !== null) {
      if (level === NOT_BASE) throw error;
      // A failed replica's base batch starts it over, whether or not it then applies (the
      // value it held stays until a base applies).
      if (failed) this.reset({ keepValue: true });
      throw this.#fail(error);
    }
    if (failed) {
      this.reset({ keepValue: true });
      this.#decoder = decoder;
    }
    return this.#applied(batch.root, ops, base, decoded, lazy ? () => decodeAgain(text, ids) : null);
  }

  /**
   * Takes the value a batch made (a base batch's keeping the parts of the held value it did
   * not change), then tells `decoded`, `onChange` and the subscriptions.
   */
  #applied(value, ops, base, decoded, later = null) {
    if (base && this.#value !== undefined) value = keepEqualParts(this.#value, value);
    this.#value = value;
    this.#awaitingBase = false;
    decoded?.(ops, base, later);
    let thrown = null;
    try {
      this.onChange?.(value, ops);
    } catch (e) {
      thrown = { e };
    }
    if (this.#subscriptions.size > 0) thrown ??= this.#tell(value);
    if (thrown !== null) throw thrown.e;
    return value;
  }

  /**
   * Calls each subscription whose slice of `value` changed, all of them: the first error
   * one threw (as `{ e }`), or `null`.
   */
  #tell(value) {
    let thrown = null;
    for (const subscription of [...this.#subscriptions]) {
      if (!this.#subscriptions.has(subscription)) continue;
      try {
        const next = subscription.selector(value);
        const previous = subscription.selected;
        if (Object.is(next, previous)) continue;
        subscription.selected = next;
        subscription.listener(next, previous);
      } catch (e) {
        thrown ??= { e };
      }
    }
    return thrown;
  }

  #fail(e) {
    this.#failed = e;
    return e;
  }

  /** What a batch that is not a base batch is, when only a base batch may come. */
  #notBase() {
    return this.#failed !== null ? fail('ReplicaFailed') : fail('NotBase');
  }
}

// The value a base batch leaves when the replica already held one: the base's value, with
// every part equal to the held one's being the held object itself.

/** Writes an own data property: never assignment, so a `"__proto__"` key stays a key. */
function define(obj, key, value) {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Whether `a` and `b` are both arrays, or both objects that are not arrays. */
function sameKind(a, b) {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return false;
  return Array.isArray(a) === Array.isArray(b);
}

/**
 * `next` (a base batch's value, which only the replica holds) with every container that is
 * deep-equal to the container at the same place in `held` replaced by that held object, so
 * that a part a base did not change keeps its identity (`===`) and nothing selecting it is
 * told of a change. Containers that differ stay `next`'s own objects, their equal children
 * the held ones. Equal means the same kind, the same scalars (`Object.is`), arrays of the
 * same length, objects with the same keys in the same order (the order shows when a value is
 * listed or printed), and equal children. Places are matched by key and index: an array
 * whose elements moved keeps only those still at their index.
 *
 * `next` is changed in place (its containers take the held children), never `held`. The walk
 * is iterative (a value of any depth cannot overflow the stack) and visits each container of
 * `next` once, each of its members or elements once, and each held container it is matched
 * against once: it costs about what the base's value cost to build.
 * @param {unknown} held the value the replica held
 * @param {unknown} next the base batch's value, held by nothing but the replica
 * @returns {unknown} `held` if the two are deep-equal, else `next` holding the equal parts of `held`
 */
export function keepEqualParts(held, next) {
  if (!sameKind(held, next)) return next;
  const stack = [frame(held, next, null, null)];
  let result = next;
  while (stack.length > 0) {
    const f = stack[stack.length - 1];
    if (f.i < f.length) {
      const k = f.keys === null ? f.i : f.keys[f.i];
      f.i += 1;
      const n = f.next[k];
      const has = f.keys === null ? k < f.held.length : Object.hasOwn(f.held, k);
      if (!has) {
        f.same = false;
        continue;
      }
      const o = f.held[k];
      if (sameKind(o, n)) stack.push(frame(o, n, f, k));
      else if (!Object.is(o, n)) f.same = false;
      continue;
    }
    stack.pop();
    if (f.parent === null) {
      result = f.same ? f.held : f.next;
    } else if (f.same) {
      if (f.parent.keys === null) f.parent.next[f.key] = f.held;
      else define(f.parent.next, f.key, f.held);
    } else {
      f.parent.same = false;
    }
  }
  return result;
}

/**
 * One container of `next` being walked beside its counterpart in `held`: its keys (`null`
 * for an array, walked by index), the next to visit, whether it is equal so far (the same
 * length or the same keys in the same order, and every child visited equal), and where in
 * its parent it is.
 */
function frame(held, next, parent, key) {
  if (Array.isArray(next)) {
    return { held, next, keys: null, length: next.length, i: 0, same: held.length === next.length, parent, key };
  }
  const keys = Object.keys(next);
  const heldKeys = Object.keys(held);
  let same = keys.length === heldKeys.length;
  for (let i = 0; same && i < keys.length; i++) same = keys[i] === heldKeys[i];
  return { held, next, keys, length: keys.length, i: 0, same, parent, key };
}
