// The two op grammars (chord/src/validate.rs): decoded ops and wire ops, checked before
// anything decodes or applies.

import { ChordError, at, fail, isCount, jsonType, show } from './errors.mjs';
import { elementTexts } from './batch-text.mjs';

/**
 * How an integer is written: digits, with no fraction or exponent. A count, an index, an id
 * or a path's index written otherwise (`1.0`, `1e0`) is refused, as chord's decoder refuses
 * it (serde_json reads it as a float), although `JSON.parse` makes it the same number.
 */
const INTEGER_TEXT = /^\s*-?(?:0|[1-9][0-9]*)\s*$/;

/**
 * Whether a text may spell a number with a fraction or an exponent anywhere: a digit before
 * a `.`, `e` or `E` (a JSON number's fraction and exponent always follow a digit).
 */
const mayHaveFloats = (text) => text !== undefined && /[0-9][.eE]/.test(text);

/** Path segments refused everywhere a path is walked (never as keys inside values); `checkPath` names them. */
export const RESERVED = Object.freeze(['__proto__', 'constructor', 'prototype']);

/**
 * The most segments a path may have, on both grammars (decoded ops and wire ops, `#`
 * definitions included), as in chord. No location within the depth limit is deeper, and a
 * bounded path keeps the cost of every op bounded.
 */
export const MAX_PATH_SEGMENTS = 128;

/** The verb of an op, checked to be a tuple starting with a string. */
function verbOf(op) {
  if (!Array.isArray(op)) throw fail('NotATuple');
  if (op.length === 0 || typeof op[0] !== 'string') throw fail('MissingVerb');
  return op[0];
}

/**
 * The texts of a wire op's elements up to its last structural one (`last`), read from the
 * op's text only when a number among them is checked and the text may spell a float: most
 * ops (a path of keys, a payload) never need them.
 */
class Written {
  /**
   * @param {string | undefined} text the op's text
   * @param {number} last the index of its last element that is not a payload
   */
  constructor(text, last) {
    this.text = text;
    this.last = last;
    /** @type {string[] | null} */
    this.elements = null;
  }

  /** The text of element `k`, or `undefined` when no number in the op can be a float. */
  at(k) {
    if (this.elements === null) {
      this.elements = this.last > 0 && mayHaveFloats(this.text) ? elementTexts(this.text, this.last + 1) : [];
    }
    return this.elements[k];
  }
}

/**
 * An inline path: an array of at most {@link MAX_PATH_SEGMENTS} strings and non-negative
 * integers, no reserved segment. The length is checked before any segment is looked at.
 * `written` is the path's text, or the op's texts and the path's index among them.
 */
function checkPath(path, written, k) {
  if (!Array.isArray(path)) {
    throw fail('InvalidPath', { reason: `expected an array of segments, found ${jsonType(path)}` });
  }
  if (path.length > MAX_PATH_SEGMENTS) {
    throw fail('InvalidPath', { reason: `${path.length} segments; a path has at most ${MAX_PATH_SEGMENTS}` });
  }
  // How the segments were written, read at the first index when the path's text may hold a
  // float: `null` when it cannot.
  let segs;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (typeof seg === 'string') {
      if (seg === '__proto__' || seg === 'constructor' || seg === 'prototype') {
        throw fail('ReservedSegment', { segment: seg, position: i });
      }
    } else if (typeof seg === 'number') {
      if (!isCount(seg)) throw fail('InvalidPath', { reason: `segment ${i} is ${show(seg)}; indices are non-negative integers` });
      if (segs === undefined) {
        const text = written instanceof Written ? written.at(k) : written;
        segs = mayHaveFloats(text) ? elementTexts(text) : null;
      }
      if (segs !== null && !INTEGER_TEXT.test(segs[i])) {
        throw fail('InvalidPath', { reason: `segment ${i} is ${segs[i].trim()}; indices are non-negative integers` });
      }
    } else {
      throw fail('InvalidPath', { reason: `segment ${i} is ${jsonType(seg)}; segments are strings or non-negative integers` });
    }
  }
  return path;
}

/** A count; `written` is the op's texts and `k` the count's index among them. */
function count(v, field, written, k) {
  if (!isCount(v)) throw fail('InvalidCount', { field, found: show(v) });
  const text = written?.at(k);
  if (mayHaveFloats(text) && !INTEGER_TEXT.test(text)) throw fail('InvalidCount', { field, found: text.trim() });
}

function text(v) {
  if (typeof v !== 'string') throw fail('TextNotString');
}

function items(v) {
  if (!Array.isArray(v)) throw fail('ItemsNotArray');
}

export function nonEmpty(path, verb) {
  if (path.length === 0) throw fail('EmptyPath', { verb });
  return path;
}

function decodedPath(v) {
  if (typeof v === 'number') throw fail('WireForm', { what: 'an interned path id' });
  return checkPath(v);
}

const arity = (verb, n, expected) => fail('Arity', { verb, found: n + 1, expected });
// Maps, not object literals: a verb such as "constructor" must not find an inherited entry.
const FULL = new Map([['r', 1], ['s', 2], ['d', 1], ['a', 2], ['t', 2], ['p', 4]]);
const SHORT = new Map([['s', 1], ['a', 1], ['t', 1], ['d', 0], ['p', 3]]);

/**
 * Checks one decoded op (what `apply` takes): a known verb with exactly its arity, inline
 * paths only (no ids, no `#`, no short forms), non-empty except for `p`, at most
 * {@link MAX_PATH_SEGMENTS} segments and no reserved one, counts that are non-negative safe
 * integers, append text a string, splice items an array. Values are not inspected.
 * @param {unknown} op
 * @returns {Array} the op itself
 * @throws {ChordError} the first violation
 */
export function checkOp(op) {
  const verb = verbOf(op);
  const n = op.length - 1;
  const full = FULL.get(verb);
  if (verb === '#') throw fail('WireForm', { what: 'a `#` path definition' });
  if (full === undefined) throw fail('UnknownVerb', { verb });
  if (n !== full) {
    if (n === SHORT.get(verb)) throw fail('WireForm', { what: 'a short form without a path' });
    throw arity(verb, n, String(full + 1));
  }
  if (verb === 'r') return op;
  const path = decodedPath(op[1]);
  if (verb !== 'p') nonEmpty(path, verb);
  if (verb === 'a') text(op[2]);
  if (verb === 't') count(op[2], 'count');
  if (verb === 'p') {
    count(op[2], 'index');
    count(op[3], 'remove');
    items(op[4]);
  }
  return op;
}

function pathRef(v, written) {
  if (typeof v === 'number') count(v, 'id', written, 1);
  else checkPath(v, written, 1);
}

/** The last element of a `verb` op of `n` elements after the verb that is not a payload. */
function lastStructural(verb, n) {
  switch (verb) {
    case '#':
      return 2;
    case 't':
      return n;
    case 'p':
      return n - 1;
    case 'r':
      return 0;
    default:
      return n === 2 || (verb === 'd' && n === 1) ? 1 : 0;
  }
}

/**
 * Checks one wire op (what a decoder takes): the decoded grammar plus interned ids
 * (`["a", 0, "x"]`), definitions (`["#", 0, ["out"]]`) and short forms that reuse the
 * previous op's path (`["a", "x"]`). Arity tells a short form from a full one.
 *
 * With the op's text (`written`, what it was parsed from), a count, an id or a path's index
 * written with a fraction or an exponent is refused too, as chord's decoder refuses it;
 * without it, such a number cannot be told from an integer (parsing made it one).
 * @param {unknown} op
 * @param {string} [written]
 * @returns {Array} the op itself
 * @throws {ChordError} the first violation
 */
export function checkWireOp(op, written) {
  const verb = verbOf(op);
  const n = op.length - 1;
  // The texts of the elements that are not payloads, read when a number among them is
  // checked and may be a float (an op with no such element, an `r`, is not scanned at all).
  const w = written === undefined ? undefined : new Written(written, lastStructural(verb, n));
  switch (verb) {
    case 'r':
      if (n !== 1) throw arity(verb, n, '2');
      return op;
    case '#':
      if (n !== 2) throw arity(verb, n, '3');
      count(op[1], 'id', w, 1);
      checkPath(op[2], w, 2);
      return op;
    case 's':
      if (n !== 1 && n !== 2) throw arity(verb, n, '2 or 3');
      if (n === 2) pathRef(op[1], w);
      return op;
    case 'd':
      if (n > 1) throw arity(verb, n, '1 or 2');
      if (n === 1) pathRef(op[1], w);
      return op;
    case 'a':
    case 't':
      if (n !== 1 && n !== 2) throw arity(verb, n, '2 or 3');
      if (n === 2) pathRef(op[1], w);
      if (verb === 'a') text(op[n]);
      else count(op[n], 'count', w, n);
      return op;
    case 'p':
      if (n !== 3 && n !== 4) throw arity(verb, n, '4 or 5');
      if (n === 4) pathRef(op[1], w);
      count(op[n - 2], 'index', w, n - 2);
      count(op[n - 1], 'remove', w, n - 1);
      items(op[n]);
      return op;
    default:
      throw fail('UnknownVerb', { verb });
  }
}

const valid = (check) => (op) => {
  try {
    check(op);
    return true;
  } catch (e) {
    if (e instanceof ChordError) return false;
    throw e;
  }
};

/**
 * Whether `op` is a valid decoded op (see {@link checkOp}).
 * @type {(op: unknown) => boolean}
 */
export const validOp = valid(checkOp);

/**
 * Whether `op` is a valid wire op (see {@link checkWireOp}).
 * @type {(op: unknown) => boolean}
 */
export const validWireOp = valid(checkWireOp);

/**
 * Whether a batch (decoded or wire) is a base batch: its first op is `r`. A token
 * comparison, as the design requires; nothing else is inspected.
 * @param {unknown} batch
 * @returns {boolean}
 */
export function isBase(batch) {
  return Array.isArray(batch) && Array.isArray(batch[0]) && batch[0][0] === 'r';
}

export function eachOp(batch, check) {
  if (!Array.isArray(batch)) throw fail('NotABatch');
  batch.forEach((op, i) => {
    try {
      check(op, i);
    } catch (e) {
      throw at(e, i);
    }
  });
}
