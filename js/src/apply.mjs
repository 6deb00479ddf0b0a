// The atomic applier (chord/src/apply.rs): ops applied copy on write within bounds, all or
// nothing.

import { at, fail, isObject, jsonType } from './errors.mjs';
import { checkOp, validOp } from './grammar.mjs';

/**
 * The default bounds on what one batch may make of a document, the same as chord's `Limits`:
 * nesting depth 120, arrays up to 16,777,216 elements, strings up to 256 MiB of UTF-8, and
 * 16,777,216 (2^24) units of work per batch (see `apply` and js/README.md for the units).
 * Depth and lengths bound growth only: `a` and `p`/`s` that lengthen, values that nest. The
 * work budget bounds the time a batch may take beyond reading its own payloads.
 * @type {Readonly<{maxDepth: number, maxArrayLen: number, maxStringLen: number, maxWork: number}>}
 */
export const DEFAULT_LIMITS = Object.freeze({
  maxDepth: 120,
  maxArrayLen: 1 << 24,
  maxStringLen: 256 << 20,
  maxWork: 2 ** 24,
});

/** Writes an own data property: never assignment, so no inherited setter can run. */
function define(obj, key, value) {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** A scalar itself, or an empty container of the same kind, for a value placed `depth` deep. */
function shell(v, depth, limits) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      if (Number.isFinite(v)) return v;
      throw fail('NotJson', { reason: `the number ${v}` });
    case 'object': {
      if (v === null) return v;
      if (depth + 1 > limits.maxDepth) throw fail('LimitExceeded', { limit: 'max_depth', max: limits.maxDepth });
      if (Array.isArray(v)) return [];
      const proto = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null) return {};
      throw fail('NotJson', { reason: Object.prototype.toString.call(v) });
    }
    default:
      throw fail('NotJson', { reason: `a value of type ${typeof v}` });
  }
}

/**
 * A structural copy of a JSON value placed `depth` containers deep, checking the depth limit
 * and that it is JSON. Iterative, so a hostile value cannot overflow the stack. Keys are
 * defined as own properties, so a `"__proto__"` key stays a key.
 */
function copyJson(value, depth, limits) {
  const top = shell(value, depth, limits);
  const stack = typeof top === 'object' && top !== null ? [[value, top, depth]] : [];
  while (stack.length) {
    const [src, dst, d] = stack.pop();
    const keys = Array.isArray(src) ? src.keys() : Object.keys(src);
    for (const k of keys) {
      const c = shell(src[k], d + 1, limits);
      if (Array.isArray(dst)) dst.push(c);
      else define(dst, k, c);
      if (typeof c === 'object' && c !== null) stack.push([src[k], c, d + 1]);
    }
  }
  return top;
}

/**
 * A value parsed by `JSON.parse` and checked by `checkWireJson`, held nowhere else, taken as
 * it is after checking the depth limit (`JSON.parse` makes plain objects with own keys, a
 * `"__proto__"` key included, and the check refused numbers out of range): no copy, so a
 * large value costs its tree once. Iterative, as `copyJson`.
 */
function adoptJson(value, depth, limits) {
  if (typeof value !== 'object' || value === null) return value;
  const stack = [value, depth + 1];
  while (stack.length > 0) {
    const d = stack.pop();
    const node = stack.pop();
    if (d > limits.maxDepth) throw fail('LimitExceeded', { limit: 'max_depth', max: limits.maxDepth });
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const c of children) if (typeof c === 'object' && c !== null) stack.push(c, d + 1);
  }
  return value;
}

/**
 * Replaces `remove` elements at `index` with `inserted`, in place, without spreading
 * arguments. The tail moves only when the length changes, so this costs what the work
 * budget charges a `p`.
 */
function splice(arr, index, remove, inserted) {
  const k = inserted.length;
  if (k < remove) {
    arr.splice(index + k, remove - k);
  } else if (k > remove) {
    const len = arr.length;
    const grow = k - remove;
    for (let j = 0; j < grow; j++) arr.push(null);
    for (let j = len - 1; j >= index + remove; j--) arr[j + grow] = arr[j];
  }
  for (let j = 0; j < k; j++) arr[index + j] = inserted[j];
}

/** The child `path[i]` of `at`: own members and existing elements only. */
function child(at, path, i) {
  const seg = path[i];
  const here = (kind, info) => fail(kind, info).at(undefined, path.slice(0, i + 1));
  if (Array.isArray(at)) {
    if (typeof seg === 'string') throw here('KeyOnArray');
    if (seg >= at.length || !Object.hasOwn(at, seg)) throw here('IndexOutOfRange', { index: seg, len: at.length });
    return at[seg];
  }
  if (isObject(at)) {
    if (!Object.hasOwn(at, String(seg))) throw here('Missing');
    return at[String(seg)];
  }
  throw here('NotAContainer', { found: jsonType(at) });
}

function walk(root, path, depth) {
  let node = root;
  for (let i = 0; i < depth; i++) node = child(node, path, i);
  return node;
}

/** The element a last segment addresses on an array: existing, or one past the end. */
function indexOf(seg, len) {
  if (typeof seg === 'string') throw fail('KeyOnArray');
  if (seg > len) throw fail('IndexOutOfRange', { index: seg, len });
  return seg;
}

function checkLen(len, limits) {
  if (len > limits.maxArrayLen) throw fail('LimitExceeded', { limit: 'max_array_len', max: limits.maxArrayLen });
}

/** UTF-8 length of a JavaScript string, as chord's byte-counted string limit sees it. */
function utf8Len(s) {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) n += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1;
  }
  return n;
}

/**
 * A shallow copy of a container: an array's elements, an object's own enumerable members
 * (defined as own properties, so a `"__proto__"` key stays a key, on a plain object).
 */
const shallowCopy = (node) => (Array.isArray(node) ? node.slice() : { ...node });

/**
 * One batch being applied, copy on write: `root` is the new value so far. The previous
 * value is never modified: the first change under a container in this batch copies it
 * (shallowly) and every container above it up to the root, once each (`owned` holds the
 * copies), and later changes in the batch write into those copies. So after a batch every
 * container on a changed path is a new object and every other subtree is the very object
 * it was, and a failed batch is rolled back by dropping `root`. Also the work spent
 * against `maxWork`, the objects whose first member delete was charged, and the UTF-8
 * lengths of long strings appended to.
 */
export class Batch {
  /**
   * @param {typeof DEFAULT_LIMITS} limits
   * @param {unknown} root the value before the batch
   * @param {boolean} [adopt] whether the ops' values were parsed for this batch alone and are
   *   held nowhere else (a streamed text whose ops nobody is given), so that they become part
   *   of the value as they are; otherwise they are copied in
   */
  constructor(limits, root, adopt = false) {
    this.limits = limits;
    this.root = root;
    this.adopt = adopt;
    /** @type {WeakSet<object>} the containers this batch copied, which it may write into */
    this.owned = new WeakSet();
    /**
     * The member or element the last `a` or `t` changed, and the appends since its string
     * was last made flat: a string built by many appends is made flat now and then.
     * @type {{ parent: object | null, key: string, appends: number }}
     */
    this.text = { parent: null, key: '', appends: 0 };
    this.work = 0;
    /** @type {WeakSet<object>} objects a member delete has been charged for in this batch */
    this.ordered = new WeakSet();
    /** @type {WeakMap<object, Map<string|number, [string, number]>>} parent -> last -> [string, UTF-8 length] */
    this.bytes = new WeakMap();
  }

  /** An op's value placed `depth` containers deep, as the value will hold it. */
  take(value, depth) {
    return this.adopt ? adoptJson(value, depth, this.limits) : copyJson(value, depth, this.limits);
  }

  /** Adds `units` of work; over `maxWork` is a `LimitExceeded` error. */
  spend(units) {
    this.work += units;
    if (this.work > this.limits.maxWork) throw fail('LimitExceeded', { limit: 'max_work', max: this.limits.maxWork });
  }

  /** The UTF-8 length of `s`, the string at `parent[last]`: counted once per batch, not per append. */
  utf8At(parent, last, s) {
    const known = this.bytes.get(parent)?.get(last);
    return known !== undefined && known[0] === s ? known[1] : utf8Len(s);
  }

  remember(parent, last, s, bytes) {
    let byKey = this.bytes.get(parent);
    if (byKey === undefined) this.bytes.set(parent, (byKey = new Map()));
    byKey.set(last, [s, bytes]);
  }

  /** `node`, or its copy if this batch has not copied it yet. */
  #own(node) {
    if (this.owned.has(node)) return node;
    const copy = shallowCopy(node);
    this.owned.add(copy);
    return copy;
  }

  /**
   * The container at `path[0..depth)` as this batch's own copy, copying it and each
   * container above it that this batch has not copied yet (each linked into its copied
   * parent). The path has been walked already: every step exists.
   */
  writable(path, depth) {
    let node = this.#own(this.root);
    this.root = node;
    for (let i = 0; i < depth; i++) {
      const seg = path[i];
      const key = Array.isArray(node) ? seg : String(seg);
      const next = node[key];
      const own = this.#own(next);
      if (own !== next) {
        if (Array.isArray(node)) node[key] = own;
        else define(node, key, own);
      }
      node = own;
    }
    return node;
  }
}

/**
 * The work of walking a path: one unit per segment plus the length (in UTF-16 units) of
 * every key segment. Every op but `r` pays it.
 */
function walkCost(path) {
  let units = path.length;
  for (const seg of path) if (typeof seg === 'string') units += seg.length;
  return units;
}

const isScalar = (v) => typeof v !== 'object' || v === null;

/**
 * Applies one checked op to `batch.root`, copy on write. The path is walked and every check
 * made before anything is copied; an op that changes nothing (a missing member's delete,
 * an empty append, a cut of nothing, an empty splice, a scalar written over itself) copies
 * nothing.
 */
export function step(batch, op) {
  const { limits } = batch;
  const verb = op[0];
  if (verb === 'r') {
    batch.root = batch.take(op[1], 0);
    return;
  }
  const root = batch.root;
  if (root === undefined) throw fail('NoValue');
  const path = op[1];
  const depth = path.length - 1;
  const last = path[depth];
  batch.spend(walkCost(path));
  if (verb === 's') {
    const value = batch.take(op[2], path.length);
    const parent = walk(root, path, depth);
    if (Array.isArray(parent)) {
      const i = indexOf(last, parent.length);
      if (i === parent.length) {
        checkLen(i + 1, limits);
        define(batch.writable(path, depth), String(i), value);
      } else if (!(isScalar(value) && Object.is(parent[i], value))) {
        batch.writable(path, depth)[i] = value;
      }
    } else if (isObject(parent)) {
      const key = String(last);
      if (!(isScalar(value) && Object.hasOwn(parent, key) && Object.is(parent[key], value))) {
        define(batch.writable(path, depth), key, value);
      }
    } else {
      throw fail('NotAContainer', { found: jsonType(parent) });
    }
  } else if (verb === 'd') {
    const parent = walk(root, path, depth);
    if (Array.isArray(parent)) {
      const i = indexOf(last, parent.length);
      if (i === parent.length) throw fail('IndexOutOfRange', { index: i, len: i });
      batch.spend(parent.length - i - 1);
      batch.writable(path, depth).splice(i, 1);
    } else if (isObject(parent)) {
      const key = String(last);
      if (Object.hasOwn(parent, key)) {
        const obj = batch.writable(path, depth);
        // The first member delete on an object in a batch costs its member count, later ones
        // 1: the units chord's replica and this one agree on (see js/README.md).
        if (batch.ordered.has(obj)) {
          batch.spend(1);
        } else {
          batch.spend(Object.keys(obj).length);
          batch.ordered.add(obj);
        }
        delete obj[key];
      }
    } else {
      throw fail('NotAContainer', { found: jsonType(parent) });
    }
  } else if (verb === 'a' || verb === 't') {
    const parent = walk(root, path, depth);
    const s = child(parent, path, depth);
    if (typeof s !== 'string') throw fail('NotAString', { found: jsonType(s) });
    let next;
    let bytes;
    if (verb === 'a') {
      const add = op[2];
      const units = s.length + add.length;
      const max = limits.maxStringLen;
      // Each UTF-16 unit is 1 to 3 bytes of UTF-8: count bytes only when the units cannot tell,
      // and a long string's bytes once per batch (counting them per append would be quadratic).
      if (add !== '' && units * 3 > max) {
        if (units > max) throw fail('LimitExceeded', { limit: 'max_string_len', max });
        bytes = batch.utf8At(parent, last, s) + utf8Len(add);
        if (bytes > max) throw fail('LimitExceeded', { limit: 'max_string_len', max });
      }
      if (add === '') return;
      next = s + add;
    } else {
      const n = op[2];
      if (n > 0 && n < s.length && isHigh(s.charCodeAt(n - 1)) && isLow(s.charCodeAt(n))) {
        throw fail('SplitsCharacter', { count: n });
      }
      batch.spend(n >= s.length ? 0 : s.length - n);
      if (n === 0 || s === '') return;
      next = n >= s.length ? '' : s.slice(n);
    }
    const target = batch.writable(path, depth);
    if (bytes !== undefined) batch.remember(target, last, next, bytes);
    const key = String(last);
    const run = batch.text;
    const again = run.parent === target && run.key === key;
    // A string of many appends is a rope of one node each; made flat once the nodes
    // would outweigh its text, which costs each append a bounded share of the copying.
    let appends = again ? run.appends + 1 : 1;
    if (verb === 'a' && appends * 32 > next.length) {
      next.charCodeAt(0);
      appends = 0;
    }
    if (Array.isArray(target)) target[last] = next;
    else define(target, key, next);
    run.parent = target;
    run.key = key;
    run.appends = appends;
  } else {
    const inserted = op[4].map((item) => batch.take(item, path.length + 1));
    const arr = walk(root, path, path.length);
    if (!Array.isArray(arr)) throw fail('NotAnArray', { found: jsonType(arr) });
    const index = Math.min(op[2], arr.length);
    const remove = Math.min(op[3], arr.length - index);
    if (inserted.length > remove) checkLen(arr.length - remove + inserted.length, limits);
    batch.spend(remove + inserted.length + (inserted.length === remove ? 0 : arr.length - index - remove));
    if (remove > 0 || inserted.length > 0) splice(batch.writable(path, path.length), index, remove, inserted);
  }
}

const isHigh = (c) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c) => c >= 0xdc00 && c <= 0xdfff;

/**
 * Applies a batch of decoded ops to a document, atomically, and returns the new value.
 *
 * `target` is `undefined` when the stream has no value yet (only an `r` can give it one);
 * `null` is a real JSON null. The target is never modified: the batch is applied copy on
 * write, so the result shares every subtree the batch did not change with `target` (the
 * same objects, `===`), and every container on a changed path, the root included, is a new
 * object. A UI can compare a slice with `===` to know whether it changed. An op that
 * changes nothing (a missing member's delete, an empty append or splice, a cut of nothing,
 * a scalar written over itself) leaves its path as it was. On an error the new value is
 * dropped, so the target is exactly as it was.
 *
 * Each op is checked with {@link checkOp} just before it applies, as chord does (checking a
 * path costs what walking it is charged), and a batch with an invalid op fails whole like
 * any other failure. Values are copied in (the ops are never retained or modified) and a
 * `"__proto__"` key inside a value stays an own key. Walks use own properties only and
 * writes use `Object.defineProperty`, so no op reaches a prototype. A copied object is a
 * plain object with the original's own enumerable members.
 *
 * Rules, as chord's: `s` writes a member, an existing element, or the element exactly one
 * past the end; `d` removes a member (a missing one is a no-op) or an element (the rest
 * shift); `a` and `t` need an existing string, `t` counts UTF-16 code units and refuses to
 * split a surrogate pair; `p` needs an array (the root included) and clamps index and remove
 * count; a numeric segment on an object names the member spelled with those digits; a string
 * segment on an array is an error; missing parents are errors, never created.
 *
 * Cost: proportional to the ops' payloads and paths, plus what `limits.maxWork` bounds per
 * batch, plus the copies: each container on a changed path is copied once per batch, at
 * its first change, in time and memory proportional to its own size (members or elements,
 * not its subtree). Units of work, per op: every op but `r` pays one per path segment plus
 * the length of every key segment; `d` of an element pays the elements after it; the first
 * `d` of a member of an object in a batch pays the object's member count, later ones 1; `p`
 * pays the items removed and inserted, plus the tail after them when the length changes;
 * `t` pays the UTF-16 units left after the cut; `s`, `a` and `r` pay nothing more. Going
 * over is a `LimitExceeded` error (`limit: 'max_work'`). The copies are not charged: they
 * are chord's units, which both replicas count alike.
 *
 * @param {unknown} target the current value, or `undefined`; never modified
 * @param {ReadonlyArray<unknown>} ops the batch
 * @param {Partial<typeof DEFAULT_LIMITS>} [limits] bounds; missing fields take the defaults
 * @returns {unknown} the new value, sharing what the batch did not change with `target`
 * @throws {ChordError} the first op that is invalid or cannot apply, with its `opIndex` and
 *   `path`; the target is untouched
 */
export function apply(target, ops, limits) {
  const batch = new Batch({ ...DEFAULT_LIMITS, ...limits }, target);
  if (!Array.isArray(ops)) throw fail('NotABatch');
  for (let i = 0; i < ops.length; i++) {
    try {
      // Each op is checked just before it applies, so checking its path costs no more than
      // walking it, which the work budget charges: a batch refused early is refused cheaply.
      step(batch, checkOp(ops[i]));
    } catch (e) {
      const op = ops[i];
      throw at(e, i, validOp(op) && op[0] !== 'r' ? op[1] : undefined);
    }
  }
  return batch.root;
}
