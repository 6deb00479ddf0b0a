// The atomic applier (chord/src/apply.rs): ops applied copy on write within bounds, all or
// nothing.

import { at, fail, jsonType } from './errors.mjs';
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

/** `Object.prototype.hasOwnProperty`, called on a value's containers: what `Object.hasOwn` calls. */
const hasOwn = Object.prototype.hasOwnProperty;

/** The child `path[i]` of `at`: own members and existing elements only. */
function child(at, path, i) {
  const seg = path[i];
  if (Array.isArray(at)) {
    if (typeof seg === 'string') throw missing(path, i, 'KeyOnArray');
    if (seg >= at.length || !hasOwn.call(at, seg)) throw missing(path, i, 'IndexOutOfRange', { index: seg, len: at.length });
    return at[seg];
  }
  if (typeof at === 'object' && at !== null) {
    const key = typeof seg === 'string' ? seg : String(seg);
    if (!hasOwn.call(at, key)) throw missing(path, i, 'Missing');
    return at[key];
  }
  throw missing(path, i, 'NotAContainer', { found: jsonType(at) });
}

/** The error of a walk that stopped at `path[i]`, naming the path up to it. */
function missing(path, i, kind, info) {
  return fail(kind, info).at(undefined, path.slice(0, i + 1));
}

/**
 * The container at `path[0..depth)` of `batch.root`, walked through own members and existing
 * elements; `batch.trail` keeps each container on the way (`trail[i]` at `path[0..i)`), for
 * `writable` to copy without walking again.
 */
function walk(batch, path, depth) {
  const trail = batch.trail;
  let node = batch.root;
  trail[0] = node;
  for (let i = 0; i < depth; i++) {
    node = child(node, path, i);
    trail[i + 1] = node;
  }
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
 * A shallow copy of a container `depth` containers below the root: an array's elements, an
 * object's own enumerable members (defined as own properties, so a `"__proto__"` key stays a
 * key, on a plain object).
 */
const shallowCopy = (node, depth) => (Array.isArray(node) ? node.slice() : copyObject(node, depth));

// Copying an object with a spread (`{ ...node }`) costs about as much per member as defining
// each one (V8 copies it member by member, looking up each key), several times what an
// object literal naming the same keys costs. So an object whose keys were seen before is
// copied by a function made for those keys (`copierFor`): an object literal reading each
// member. The copiers a depth last used are tried first, as the containers at one depth of
// the paths a stream keeps writing to tend to have the same keys. Where functions cannot be
// made from text (a Content Security Policy without 'unsafe-eval'), every object is copied
// with a spread.

/**
 * The most members an object may have to be copied by a copier; one with more is copied with
 * a spread (which reads its keys again).
 */
const COPIER_KEYS = 256;
/** The most copiers made, over all replicas (each is a small function). */
const COPIERS_MAX = 1024;
/** The copiers each depth tries first, the last one used first. */
const COPIERS_PER_DEPTH = 4;
/** Depths with copiers of their own to try first; deeper ones share the last. */
const COPIER_DEPTHS = 32;

/** @typedef {{keys: string[], copy: (o: object) => object}} Copier */

/** @type {Map<string, Copier> | null} by the keys as a JSON array; `null` when none can be made */
let copiers = new Map();
/** @type {Copier[][]} */
const recentCopiers = Array.from({ length: COPIER_DEPTHS }, () => []);

/** Whether two arrays of keys are the same keys in the same order. */
function sameKeys(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A shallow copy of an object: its own enumerable string-keyed members, in order, on a plain
 * object (`Object.keys` once, then each member read once, as a spread reads them).
 */
function copyObject(obj, depth) {
  const keys = Object.keys(obj);
  const recent = recentCopiers[depth < COPIER_DEPTHS ? depth : COPIER_DEPTHS - 1];
  for (let i = 0; i < recent.length; i++) {
    const c = recent[i];
    if (sameKeys(keys, c.keys)) return c.copy(obj);
  }
  const c = copierFor(keys);
  if (c === null) return { ...obj };
  if (recent.length >= COPIERS_PER_DEPTH) recent.pop();
  recent.unshift(c);
  return c.copy(obj);
}

/**
 * The copier for objects with `keys`, made if need be, or `null` when there is none: too
 * many keys, a `"__proto__"` key (which an object literal would take for the prototype), all
 * copiers made, or no functions made from text.
 */
function copierFor(keys) {
  if (copiers === null || keys.length > COPIER_KEYS) return null;
  // As JSON, two lists of keys never share a name (joined with a separator, `[]` and `[""]`
  // would, and so would `["a\0", "b"]` and `["a", "\0b"]`).
  const name = JSON.stringify(keys);
  let c = copiers.get(name);
  if (c !== undefined) return c;
  if (copiers.size >= COPIERS_MAX || keys.includes('__proto__')) return null;
  // Each key a JSON string, which is a JavaScript string literal (JSON.stringify escapes lone
  // surrogates): the literal names exactly these keys, in this order.
  const members = keys.map((k) => {
    const q = JSON.stringify(k);
    return `${q}: o[${q}]`;
  });
  let copy;
  try {
    copy = new Function('o', `return { ${members.join(', ')} };`);
  } catch {
    // No functions from text here: copies without copiers from now on.
    copiers = null;
    return null;
  }
  c = { keys, copy };
  copiers.set(name, c);
  return c;
}

/**
 * Writes `obj[key]`, a member or element `obj` has as its own already (walked to, or copied
 * with it): an assignment, which changes that property and reaches no prototype.
 */
function setOwn(obj, key, value) {
  if (key === '__proto__') define(obj, key, value);
  else obj[key] = value;
}

/**
 * Strings at least this long are made flat now and then as they grow by appends (see
 * `flatten`); shorter ones are left as V8 makes them.
 */
const FLAT_MIN = 64;

/**
 * `next`, the string `s` with an append, made flat when its length crosses a multiple of
 * 1/16 to 1/32 of itself (a power of two). In V8, `s + add` is a rope node over `s` and `add`
 * (a cons string, 32 bytes) and stays one however long the rope grows, so a string built by
 * one small append per batch held some 8 bytes of heap per byte of text. Made flat once per
 * 1/32 to 1/16 of its length appended, the nodes it holds weigh at most about as much as its
 * text (4-byte appends: half as much), and the copying costs each appended character 16 to
 * 32 characters copied, amortized. Reading a character of a rope is what makes V8 flatten
 * it (in place: the string is the same, with one flat part).
 */
function flatten(s, next) {
  const n = next.length;
  if (n >= FLAT_MIN) {
    const shift = 27 - Math.clz32(n); // log2(n) - 4, rounded down
    if (n >>> shift !== s.length >>> shift) next.charCodeAt(0);
  }
  return next;
}

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
    /**
     * The containers this batch copied, which it may write into: `null` before its first
     * write (or since an `r`), then the path that write copied every container of (nothing
     * was the batch's own), with `ownedDepth`, made a Set when a second write looks them up.
     * Local to the batch, so dropped with it.
     * @type {ReadonlyArray<string|number> | Set<object> | null}
     */
    this.owned = null;
    this.ownedDepth = 0;
    /** @type {unknown[]} the containers the op being applied walked through (see `walk`) */
    this.trail = new Array(16);
    this.work = 0;
    /** @type {Set<object> | null} objects a member delete has been charged for in this batch */
    this.ordered = null;
    /** @type {Map<object, Map<string|number, [string, number]>> | null} parent -> last -> [string, UTF-8 length] */
    this.bytes = null;
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
    const known = this.bytes?.get(parent)?.get(last);
    return known !== undefined && known[0] === s ? known[1] : utf8Len(s);
  }

  remember(parent, last, s, bytes) {
    this.bytes ??= new Map();
    let byKey = this.bytes.get(parent);
    if (byKey === undefined) this.bytes.set(parent, (byKey = new Map()));
    byKey.set(last, [s, bytes]);
  }

  /**
   * Whether a member delete on `obj` was charged already in this batch; marks it charged.
   * @param {object} obj
   */
  charged(obj) {
    this.ordered ??= new Set();
    if (this.ordered.has(obj)) return true;
    this.ordered.add(obj);
    return false;
  }

  /**
   * The copies of the batch's first write as a Set: the containers at `path[0..depth)`, its
   * path, which no write since has moved (a write changes only what its own path ends in).
   */
  #ownedSet(path, depth) {
    const owned = new Set();
    let node = this.root;
    owned.add(node);
    for (let i = 0; i < depth; i++) {
      node = node[path[i]];
      owned.add(node);
    }
    this.owned = owned;
    return owned;
  }

  /**
   * The container at `path[0..depth)` as this batch's own copy, copying it and each
   * container above it that this batch has not copied yet (each linked into its copied
   * parent). The path has just been walked (`walk`), its containers left in `trail`.
   */
  writable(path, depth) {
    const trail = this.trail;
    let owned = this.owned;
    let node = this.root;
    if (owned === null) {
      // The batch's first write: every container on the path is copied.
      node = shallowCopy(node, 0);
      this.root = node;
      for (let i = 0; i < depth; i++) {
        const copy = shallowCopy(trail[i + 1], i + 1);
        setOwn(node, path[i], copy);
        node = copy;
      }
      this.owned = path;
      this.ownedDepth = depth;
      return node;
    }
    if (!(owned instanceof Set)) owned = this.#ownedSet(owned, this.ownedDepth);
    // Below a container this write copies, nothing is the batch's own (a copy is reachable
    // only through copies), so the rest of the path is copied without looking.
    let copying = !owned.has(node);
    if (copying) {
      node = shallowCopy(node, 0);
      owned.add(node);
      this.root = node;
    }
    for (let i = 0; i < depth; i++) {
      const next = trail[i + 1];
      if (!copying && owned.has(next)) {
        node = next;
        continue;
      }
      copying = true;
      const copy = shallowCopy(next, i + 1);
      owned.add(copy);
      setOwn(node, path[i], copy);
      node = copy;
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
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (typeof seg === 'string') units += seg.length;
  }
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
  const verb = op[0];
  if (verb === 'r') {
    batch.root = batch.take(op[1], 0);
    // The new value is no copy of this batch's (it is written into only once copied).
    batch.owned = null;
    return;
  }
  if (batch.root === undefined) throw fail('NoValue');
  const path = op[1];
  batch.spend(walkCost(path));
  if (verb === 's') set(batch, path, op[2]);
  else if (verb === 'd') remove(batch, path);
  else if (verb === 'a' || verb === 't') text(batch, path, verb, op[2]);
  else splicing(batch, path, op);
}

function set(batch, path, v) {
  const depth = path.length - 1;
  const last = path[depth];
  const value = batch.take(v, path.length);
  const parent = walk(batch, path, depth);
  if (Array.isArray(parent)) {
    const i = indexOf(last, parent.length);
    if (i === parent.length) {
      checkLen(i + 1, batch.limits);
      define(batch.writable(path, depth), String(i), value);
    } else if (!(isScalar(value) && Object.is(parent[i], value))) {
      batch.writable(path, depth)[i] = value;
    }
  } else if (typeof parent === 'object' && parent !== null) {
    const key = typeof last === 'string' ? last : String(last);
    const has = hasOwn.call(parent, key);
    if (!(has && isScalar(value) && Object.is(parent[key], value))) {
      const obj = batch.writable(path, depth);
      // A member the object has is assigned; a new one is defined, reaching no setter.
      if (has) setOwn(obj, key, value);
      else define(obj, key, value);
    }
  } else {
    throw fail('NotAContainer', { found: jsonType(parent) });
  }
}

function remove(batch, path) {
  const depth = path.length - 1;
  const last = path[depth];
  const parent = walk(batch, path, depth);
  if (Array.isArray(parent)) {
    const i = indexOf(last, parent.length);
    if (i === parent.length) throw fail('IndexOutOfRange', { index: i, len: i });
    batch.spend(parent.length - i - 1);
    batch.writable(path, depth).splice(i, 1);
  } else if (typeof parent === 'object' && parent !== null) {
    const key = String(last);
    if (hasOwn.call(parent, key)) {
      const obj = batch.writable(path, depth);
      // The first member delete on an object in a batch costs its member count, later ones
      // 1: the units chord's replica and this one agree on (see js/README.md).
      batch.spend(batch.charged(obj) ? 1 : Object.keys(obj).length);
      delete obj[key];
    }
  } else {
    throw fail('NotAContainer', { found: jsonType(parent) });
  }
}

function text(batch, path, verb, arg) {
  const depth = path.length - 1;
  const last = path[depth];
  const parent = walk(batch, path, depth);
  const s = child(parent, path, depth);
  if (typeof s !== 'string') throw fail('NotAString', { found: jsonType(s) });
  let next;
  let bytes;
  if (verb === 'a') {
    const add = arg;
    const units = s.length + add.length;
    const max = batch.limits.maxStringLen;
    // Each UTF-16 unit is 1 to 3 bytes of UTF-8: count bytes only when the units cannot tell,
    // and a long string's bytes once per batch (counting them per append would be quadratic).
    if (add !== '' && units * 3 > max) {
      if (units > max) throw fail('LimitExceeded', { limit: 'max_string_len', max });
      bytes = batch.utf8At(parent, last, s) + utf8Len(add);
      if (bytes > max) throw fail('LimitExceeded', { limit: 'max_string_len', max });
    }
    if (add === '') return;
    next = flatten(s, s + add);
  } else {
    const n = arg;
    if (n > 0 && n < s.length && isHigh(s.charCodeAt(n - 1)) && isLow(s.charCodeAt(n))) {
      throw fail('SplitsCharacter', { count: n });
    }
    batch.spend(n >= s.length ? 0 : s.length - n);
    if (n === 0 || s === '') return;
    next = n >= s.length ? '' : s.slice(n);
  }
  const target = batch.writable(path, depth);
  if (bytes !== undefined) batch.remember(target, last, next, bytes);
  setOwn(target, last, next);
}

function splicing(batch, path, op) {
  const inserted = op[4].map((item) => batch.take(item, path.length + 1));
  const arr = walk(batch, path, path.length);
  if (!Array.isArray(arr)) throw fail('NotAnArray', { found: jsonType(arr) });
  const index = Math.min(op[2], arr.length);
  const remove = Math.min(op[3], arr.length - index);
  if (inserted.length > remove) checkLen(arr.length - remove + inserted.length, batch.limits);
  batch.spend(remove + inserted.length + (inserted.length === remove ? 0 : arr.length - index - remove));
  if (remove > 0 || inserted.length > 0) splice(batch.writable(path, path.length), index, remove, inserted);
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
 * `"__proto__"` key inside a value stays an own key. Walks use own properties only, a new
 * member is written with `Object.defineProperty` and one that exists is assigned on the
 * batch's own copy, so no op reaches a prototype. A copied object is a
 * plain object with the original's own enumerable string-keyed members, in their order.
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
  const batch = new Batch(limits === undefined ? DEFAULT_LIMITS : { ...DEFAULT_LIMITS, ...limits }, target);
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
