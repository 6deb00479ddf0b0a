// chord-replica.mjs: a dependency-free chord replica (wire decoder + atomic applier) for
// browsers and Node. It follows the Rust crate's rules exactly (chord/src/validate.rs,
// wire/decoder.rs, apply.rs, error.rs); see js/README.md for where the two cannot agree.

/** Path segments refused everywhere a path is walked (never as keys inside values). */
export const RESERVED = Object.freeze(['__proto__', 'constructor', 'prototype']);

/**
 * The most segments a path may have, on both grammars (decoded ops and wire ops, `#`
 * definitions included), as in chord. No location within the depth limit is deeper, and a
 * bounded path keeps the cost of every op bounded.
 */
export const MAX_PATH_SEGMENTS = 128;

/**
 * Ids a stream may use, `0..MAX_IDS`, and the most key text (UTF-16 code units over all of its
 * keys) a path with an id may hold: the Rust encoder's rule, so a decoder's table stays
 * bounded whatever a stream sends. A definition beyond either is refused.
 */
export const MAX_IDS = 1024;
export const MAX_ID_PATH_UNITS = 256;

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

const show = (v) => (Object.is(v, -0) ? '-0' : typeof v === 'number' ? String(v) : JSON.stringify(v));

/** What each error kind says; the same kinds and wording as chord's `ErrorKind`. */
const MESSAGES = {
  Json: (i) => `invalid JSON: ${i.reason}`,
  NotABatch: () => 'a batch must be a JSON array of ops',
  NotATuple: () => 'an op must be a JSON array such as ["s", ["a"], 1]',
  MissingVerb: () => 'an op must start with its verb as a string',
  UnknownVerb: (i) => `unknown verb ${JSON.stringify(i.verb)} (expected one of r, s, d, a, t, p)`,
  Arity: (i) => `\`${i.verb}\` takes ${i.expected} elements, found ${i.found}`,
  WireForm: (i) => `${i.what} is a wire form; decode wire batches with a decoder before using them`,
  InvalidPath: (i) => `invalid path: ${i.reason}`,
  EmptyPath: (i) => `\`${i.verb}\` needs a non-empty path (only \`r\` and \`p\` may target the root)`,
  ReservedSegment: (i) => `path segment ${i.position} is the reserved name ${JSON.stringify(i.segment)}`,
  InvalidCount: (i) => `${i.field} must be a non-negative integer, found ${i.found}`,
  ItemsNotArray: () => 'splice items must be a JSON array',
  TextNotString: () => 'append text must be a JSON string',
  UnknownId: (i) => `path id ${i.id} is not defined in this stream`,
  NoPreviousPath: () => 'short form with no previous path in this batch (omission never crosses a batch)',
  DecoderPoisoned: () => 'the decoder failed on an earlier batch; restart from a base batch with a fresh decoder',
  ReplicaFailed: () => 'the replica failed on an earlier batch; it takes only a base batch (resubscribe) or reset()',
  NoValue: () => 'there is no value yet: a stream must start with an `r` op',
  NotBase: () => 'the first batch of a start is not a base batch',
  Missing: () => 'no such member or element',
  NotAContainer: (i) => `cannot walk into ${i.found}: only objects and arrays have children`,
  KeyOnArray: () => 'a string segment cannot address an array element',
  IndexOutOfRange: (i) =>
    `index ${i.index} is past the end of an array of length ${i.len} (an op may write at most one past the end)`,
  NotAString: (i) => `expected a string, found ${i.found}`,
  NotAnArray: (i) => `expected an array, found ${i.found}`,
  SplitsCharacter: (i) => `truncating ${i.count} UTF-16 units would split a surrogate pair`,
  LimitExceeded: (i) => `exceeds the ${i.limit} limit of ${i.max}`,
  NotJson: (i) => `not representable in JSON: ${i.reason}`,
};

/**
 * A path in chord's readable form: `transcript[3].text`, `$` for the root,
 * `meta["two words"]` for keys that are not identifiers.
 * @param {ReadonlyArray<string|number>} path
 * @returns {string}
 */
export function formatPath(path) {
  if (path.length === 0) return '$';
  return path
    .map((s, i) =>
      typeof s === 'number' ? `[${s}]` : /^[A-Za-z_$][\w$]*$/.test(s) ? (i ? '.' : '') + s : `[${JSON.stringify(s)}]`)
    .join('');
}

/**
 * The one error type of the replica. `kind` is chord's `ErrorKind` name (`"UnknownVerb"`,
 * `"IndexOutOfRange"`, ...); `opIndex` is the failing op's position in its batch and `path`
 * the document location, when known. The kind's fields (`verb`, `index`, `len`, `limit`,
 * `max`, `segment`, `position`, ...) are properties of the error too. The message names what
 * and where, as chord's does: `op 1 at xs[5]: index 5 is past the end of ...`.
 */
export class ChordError extends Error {
  /**
   * @param {string} kind one of chord's error kinds
   * @param {object} [info] the kind's fields
   */
  constructor(kind, info = {}) {
    super(MESSAGES[kind](info));
    this.name = 'ChordError';
    this.kind = kind;
    /** @type {number|undefined} */
    this.opIndex = undefined;
    /** @type {Array<string|number>|undefined} */
    this.path = undefined;
    Object.assign(this, info);
    this.detail = this.message;
  }

  /** @internal Records the op's position and renders the message again. */
  at(opIndex, path) {
    if (opIndex !== undefined) this.opIndex = opIndex;
    if (path !== undefined && this.path === undefined) this.path = path.slice();
    const where = this.path === undefined ? '' : ` at ${formatPath(this.path)}`;
    this.message = this.opIndex === undefined ? (where ? `${where.slice(1)}: ` : '') + this.detail
      : `op ${this.opIndex}${where}: ${this.detail}`;
    return this;
  }
}

const fail = (kind, info) => new ChordError(kind, info);
const at = (e, i, path) => (e instanceof ChordError ? e.at(i, path) : e);
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (n) => Number.isSafeInteger(n) && n >= 0 && !Object.is(n, -0);

function jsonType(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return { boolean: 'a boolean', number: 'a number', string: 'a string', object: 'an object' }[typeof v]
    ?? `a non-JSON ${typeof v}`;
}

// ---- the two grammars (chord/src/validate.rs) ----

/** Splits an op into its verb and the number of elements after it. */
function tuple(op) {
  if (!Array.isArray(op)) throw fail('NotATuple');
  if (op.length === 0 || typeof op[0] !== 'string') throw fail('MissingVerb');
  return [op[0], op.length - 1];
}

/**
 * An inline path: an array of at most {@link MAX_PATH_SEGMENTS} strings and non-negative
 * integers, no reserved segment. The length is checked before any segment is looked at.
 */
function checkPath(path) {
  if (!Array.isArray(path)) {
    throw fail('InvalidPath', { reason: `expected an array of segments, found ${jsonType(path)}` });
  }
  if (path.length > MAX_PATH_SEGMENTS) {
    throw fail('InvalidPath', { reason: `${path.length} segments; a path has at most ${MAX_PATH_SEGMENTS}` });
  }
  path.forEach((seg, i) => {
    if (typeof seg === 'number') {
      if (!isCount(seg)) throw fail('InvalidPath', { reason: `segment ${i} is ${show(seg)}; indices are non-negative integers` });
    } else if (typeof seg !== 'string') {
      throw fail('InvalidPath', { reason: `segment ${i} is ${jsonType(seg)}; segments are strings or non-negative integers` });
    } else if (RESERVED.includes(seg)) {
      throw fail('ReservedSegment', { segment: seg, position: i });
    }
  });
  return path;
}

function count(v, field) {
  if (!isCount(v)) throw fail('InvalidCount', { field, found: show(v) });
}

function text(v) {
  if (typeof v !== 'string') throw fail('TextNotString');
}

function items(v) {
  if (!Array.isArray(v)) throw fail('ItemsNotArray');
}

function nonEmpty(path, verb) {
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
  const [verb, n] = tuple(op);
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

function pathRef(v) {
  if (typeof v === 'number') count(v, 'id');
  else checkPath(v);
}

/**
 * Checks one wire op (what a decoder takes): the decoded grammar plus interned ids
 * (`["a", 0, "x"]`), definitions (`["#", 0, ["out"]]`) and short forms that reuse the
 * previous op's path (`["a", "x"]`). Arity tells a short form from a full one.
 * @param {unknown} op
 * @returns {Array} the op itself
 * @throws {ChordError} the first violation
 */
export function checkWireOp(op) {
  const [verb, n] = tuple(op);
  switch (verb) {
    case 'r':
      if (n !== 1) throw arity(verb, n, '2');
      return op;
    case '#':
      if (n !== 2) throw arity(verb, n, '3');
      count(op[1], 'id');
      checkPath(op[2]);
      return op;
    case 's':
      if (n !== 1 && n !== 2) throw arity(verb, n, '2 or 3');
      if (n === 2) pathRef(op[1]);
      return op;
    case 'd':
      if (n > 1) throw arity(verb, n, '1 or 2');
      if (n === 1) pathRef(op[1]);
      return op;
    case 'a':
    case 't':
      if (n !== 1 && n !== 2) throw arity(verb, n, '2 or 3');
      if (n === 2) pathRef(op[1]);
      if (verb === 'a') text(op[n]);
      else count(op[n], 'count');
      return op;
    case 'p':
      if (n !== 3 && n !== 4) throw arity(verb, n, '4 or 5');
      if (n === 4) pathRef(op[1]);
      count(op[n - 2], 'index');
      count(op[n - 1], 'remove');
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

function eachOp(batch, check) {
  if (!Array.isArray(batch)) throw fail('NotABatch');
  batch.forEach((op, i) => {
    try {
      check(op);
    } catch (e) {
      throw at(e, i);
    }
  });
}

// ---- the decoder (chord/src/wire/decoder.rs) ----

/**
 * The most arrays and objects a wire batch may nest, the batch's own array and each op's
 * tuple included: the recursion limit of serde_json, which chord's decoder parses with, so
 * a batch nested this deep fails to decode in both replicas.
 */
export const MAX_WIRE_NESTING = 128;

/**
 * Refuses what `JSON.parse` accepts but chord's decoder (serde_json) does not, so that both
 * replicas fail the same batch at the same stage: strings and keys with a lone surrogate
 * (`"\ud800"`), numbers out of range (`1e400` parses to `Infinity`), and nesting of
 * {@link MAX_WIRE_NESTING} or more. One pass over the parsed tree, depth first and iterative
 * (a hostile batch cannot overflow the stack), holding one frame per open container: at
 * most `MAX_WIRE_NESTING`, however many ops the batch has. `outer` is the number of
 * containers around `value` (0 for a whole batch, 1 for one of its ops), so that an op
 * checked on its own is refused exactly where its batch would be.
 */
function checkWireJson(value, outer = 0) {
  if (typeof value !== 'object' || value === null) return checkScalar(value);
  const keysOf = (node) => (Array.isArray(node) ? null : Object.keys(node));
  const nodes = [value];
  const keyLists = [keysOf(value)];
  const next = [0];
  while (nodes.length > 0) {
    const top = nodes.length - 1;
    const node = nodes[top];
    const keys = keyLists[top];
    const i = next[top];
    if (i === (keys === null ? node.length : keys.length)) {
      nodes.pop();
      keyLists.pop();
      next.pop();
      continue;
    }
    next[top] = i + 1;
    let v;
    if (keys === null) {
      v = node[i];
    } else {
      if (!keys[i].isWellFormed()) throw fail('Json', { reason: 'a key holds a lone surrogate' });
      v = node[keys[i]];
    }
    if (typeof v !== 'object' || v === null) {
      checkScalar(v);
    } else if (outer + nodes.length + 1 >= MAX_WIRE_NESTING) {
      throw fail('Json', { reason: `recursion limit exceeded: more than ${MAX_WIRE_NESTING - 1} nested arrays and objects` });
    } else {
      nodes.push(v);
      keyLists.push(keysOf(v));
      next.push(0);
    }
  }
}

function checkScalar(v) {
  if (typeof v === 'string' && !v.isWellFormed()) throw fail('Json', { reason: 'a string holds a lone surrogate' });
  if (typeof v === 'number' && !Number.isFinite(v)) throw fail('Json', { reason: `number out of range (${v})` });
}

/** A checked wire path as decoded ops hold it: copied once, frozen, then shared by every use. */
const shared = (path) => Object.freeze(path.slice());

/**
 * Decodes a wire batch the caller parsed itself and holds nowhere else (the text of
 * `decodeText`, each op `Replica#applyWireText` parsed, the events `sseTransport` parsed):
 * it is decoded in place, so that the decoded batch costs little beyond `JSON.parse`'s tree.
 */
const IN_PLACE = Symbol('decode in place');

/** A decoder's op-by-op interface, for a batch streamed from its text. */
const STREAM = Symbol('decode op by op');

/** A decoder's id table as it is now, which the decoder will not change (see `decoderWith`). */
const IDS = Symbol('the id table');

/**
 * @typedef {object} Decoder
 * @property {(wireBatch: unknown) => Array} decode decodes one parsed wire batch into ops
 * @property {(text: string) => Array} decodeText parses and decodes one wire batch
 * @property {boolean} poisoned whether an earlier batch failed
 */

/**
 * A decoder for ONE stream, with chord's semantics: a batch is checked whole against the wire
 * grammar first, then `#` definitions fill the id table (ids live across batches until an
 * `r`, which clears them), short forms reuse the previous op's path within the batch only,
 * and resolved paths must fit the decoded grammar (`s`, `d`, `a`, `t` never name the root).
 * A failed batch poisons the decoder: every later call throws `DecoderPoisoned`, because
 * later batches may use ids the failed one defined. Start again from a base batch with a
 * fresh decoder. Decoded ops share their values with the wire batch; `apply` copies them.
 *
 * Decoded ops share their resolved paths too: an inline path is frozen once (`decode` copies
 * it first, `decodeText` freezes the array it parsed), and every op that reuses it (a short
 * form, an interned id, in this batch or a later one) holds that same frozen array. So a
 * decoded batch takes memory proportional to its wire text, never to the number of reuses
 * times the path's length. `decodeText` decodes the batch it parsed in place: its ops are the
 * parsed tuples, so decoding adds little to `JSON.parse`'s tree.
 * @returns {Decoder}
 */
export function createDecoder() {
  return decoderWith(new Map(), false);
}

/**
 * A decoder starting from the id table `initial`; `held` when someone else holds that
 * table, which is then copied before its first change.
 */
function decoderWith(initial, held) {
  let ids = initial;
  // Whether `ids` is held elsewhere (a snapshot taken by `[IDS]`): it is then never changed,
  // but replaced by a changed copy, so that a snapshot costs nothing until a definition.
  let idsShared = held;
  const writableIds = () => {
    if (idsShared) {
      ids = new Map(ids);
      idsShared = false;
    }
    return ids;
  };
  let poisoned = false;

  /**
   * The decoder of one batch: a function from a wire op (already checked against the wire
   * grammar) to its decoded op, or `null` for a `#` definition, which fills the id table.
   * It holds the previous op's path, which short forms reuse within the batch. `inPlace`:
   * the op is held nowhere else, so an op of full form becomes the decoded op (its path
   * array frozen where it is); otherwise every decoded op is new and paths are copied.
   */
  function batchDecoder(inPlace) {
    const own = inPlace ? (path) => Object.freeze(path) : shared;
    let previous = null;
    const resolve = (hasPath, ref) => {
      let path = previous;
      if (hasPath) path = typeof ref === 'number' ? ids.get(ref) : own(ref);
      if (!path) throw hasPath ? fail('UnknownId', { id: ref }) : fail('NoPreviousPath');
      previous = path;
      return path;
    };
    return (w) => {
      const verb = w[0];
      const n = w.length - 1;
      // A full form (a path in place 1) is rewritten in place; a short form gets a new op.
      const full = verb === 'p' ? n === 4 : verb === 'd' ? n === 1 : n === 2;
      const op = (...fields) => {
        if (inPlace && full) {
          w[1] = fields[1];
          return w;
        }
        return fields;
      };
      if (verb === '#') {
        if (w[1] >= MAX_IDS) throw fail('LimitExceeded', { limit: 'path id', max: MAX_IDS - 1 });
        let units = 0;
        for (const seg of w[2]) if (typeof seg === 'string') units += seg.length;
        if (units > MAX_ID_PATH_UNITS) {
          throw fail('LimitExceeded', { limit: 'UTF-16 units of key text in a path with an id', max: MAX_ID_PATH_UNITS });
        }
        writableIds().set(w[1], own(w[2]));
        return null;
      }
      if (verb === 'r') {
        if (idsShared) {
          ids = new Map();
          idsShared = false;
        } else {
          ids.clear();
        }
        previous = null;
        return inPlace ? w : ['r', w[1]];
      }
      if (verb === 'p') return op('p', resolve(n === 4, w[1]), w[n - 2], w[n - 1], w[n]);
      if (verb === 'd') return op('d', nonEmpty(resolve(n === 1, w[1]), 'd'));
      return op(verb, nonEmpty(resolve(n === 2, w[1]), verb), w[n]);
    };
  }

  /**
   * Decodes `batch`: into a new array of new ops, or, `inPlace`, into the batch itself: an
   * op of full form becomes the decoded op (its path array frozen where it is), a short
   * form is replaced by a new op, and `#` definitions are dropped.
   */
  function decodeBatch(batch, inPlace) {
    checkWireJson(batch);
    eachOp(batch, checkWireOp);
    const decodeOp = batchDecoder(inPlace);
    const out = inPlace ? batch : [];
    let k = 0;
    for (let i = 0; i < batch.length; i++) {
      let op;
      try {
        op = decodeOp(batch[i]);
      } catch (e) {
        throw at(e, i);
      }
      if (op !== null) out[k++] = op;
    }
    out.length = k;
    return out;
  }

  function guarded(run) {
    if (poisoned) throw fail('DecoderPoisoned');
    try {
      return run();
    } catch (e) {
      poisoned = true;
      throw e;
    }
  }

  return {
    decode: (wireBatch) => guarded(() => decodeBatch(wireBatch, false)),
    decodeText: (textBatch) =>
      guarded(() => {
        let batch;
        try {
          batch = JSON.parse(textBatch);
        } catch (e) {
          throw fail('Json', { reason: e.message });
        }
        return decodeBatch(batch, true);
      }),
    [IN_PLACE]: (batch) => guarded(() => decodeBatch(batch, true)),
    /**
     * @internal One batch decoded op by op, as a Replica streams a batch's text: `decode`
     * takes each op (checked, parsed by the caller and held nowhere else); `poison` marks
     * the decoder failed, as a failed batch does.
     */
    [STREAM]: () => {
      if (poisoned) throw fail('DecoderPoisoned');
      return {
        decode: batchDecoder(true),
        poison: () => {
          poisoned = true;
        },
      };
    },
    /** @internal The id table as it is now; the decoder copies it before changing it. */
    [IDS]: () => {
      idsShared = true;
      return ids;
    },
    get poisoned() {
      return poisoned;
    },
  };
}

/**
 * The decoded ops of a batch text that has applied, decoded again from the text with the
 * id table `ids` the decoder had before it (a snapshot from `[IDS]`): for a reader that
 * asks for the ops after the batch applied without them (`follow`'s `onEvent`), so that
 * they cost nothing unless asked for.
 */
function decodeAgain(text, ids) {
  const decode = decoderWith(ids, true)[STREAM]().decode;
  const ops = [];
  eachElement(text, (w) => {
    const op = decode(w);
    if (op !== null) ops.push(op);
  });
  return ops;
}

// ---- a batch's text, op by op ----

/** JSON's whitespace: space, tab, LF and CR (JSON.parse's, no other). */
const isSpace = (c) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(text, i) {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/**
 * Where the element of an array starting at `i` ends: the index of the `,` or `]` after it,
 * found by counting brackets outside strings (a `\` skips the character after it), or -1
 * when the text ends first or a `}` closes the array. Each character is read once; whether
 * the element is JSON is for `JSON.parse` to say.
 */
function elementEnd(text, i) {
  const n = text.length;
  let depth = 0;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; ; i++) {
        if (i >= n) return -1;
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
    } else if (c === 0x5d || c === 0x7d) {
      if (depth === 0) return c === 0x5d ? i : -1;
      depth--;
    } else if (c === 0x2c && depth === 0) {
      return i;
    }
  }
  return -1;
}

/** Texts shorter than this are parsed whole for a syntax error's message: it costs little. */
const SHORT_TEXT = 4096;

/**
 * The `Json` error of a batch text with a syntax error at or after the element starting
 * at `at`, with `JSON.parse`'s own message for the whole text. The message names the
 * position and the characters around it (V8 shows ten either side), so the text is parsed
 * with the elements that end well before `at` replaced by spaces (line ends kept): the same
 * error at the same position, from a tree of the few elements after `starts`' choice.
 * @param {string} text
 * @param {number} open the index of the batch's `[`
 * @param {number[]} starts where recent elements start (after their separator), ascending
 * @param {number} at where the element with the error, or after which it is, starts
 */
function syntaxError(text, open, starts, at) {
  let keep = open + 1;
  if (text.length >= SHORT_TEXT) for (const s of starts) if (s + 64 <= at) keep = s;
  let probe = text;
  if (keep > open + 1) {
    const gap = text.slice(open + 1, keep);
    const blank = /[\r\n]/.test(gap) ? gap.replace(/[^\r\n]+/g, (run) => ' '.repeat(run.length)) : ' '.repeat(gap.length);
    probe = text.slice(0, open + 1) + blank + text.slice(keep);
  }
  for (const candidate of probe === text ? [text] : [probe, text]) {
    try {
      JSON.parse(candidate);
    } catch (e) {
      return fail('Json', { reason: e.message });
    }
  }
  return fail('Json', { reason: 'the batch does not parse' });
}

/**
 * Reads a batch text that is a JSON array one element at a time, each element's text given
 * to `JSON.parse` on its own (so numbers, escapes and errors are exactly `JSON.parse`'s),
 * and hands each parsed element to `visit(element, index)` before the next is read: the
 * batch is never held as one tree. Throws the `Json` error of the first syntax error
 * anywhere in the text, after visiting the elements before it.
 *
 * `read` turns an element's text into what `visit` gets (`JSON.parse` by default; it throws
 * when the text is not JSON) and `syntax` makes the error thrown for a syntax error.
 * @returns {boolean} false when the text is not an array (nothing was visited)
 */
function eachElement(text, visit, read = (element) => JSON.parse(element), syntax = syntaxError) {
  const open = skipSpace(text, 0);
  if (text.charCodeAt(open) !== 0x5b) return false;
  let i = open + 1;
  const close = skipSpace(text, i);
  if (text.charCodeAt(close) === 0x5d) {
    if (skipSpace(text, close + 1) !== text.length) throw syntax(text, open, [], i);
    return true;
  }
  // The starts of the last few elements: enough to reach 64 characters back.
  const starts = [];
  for (let index = 0; ; index++) {
    const end = elementEnd(text, i);
    if (end < 0) throw syntax(text, open, starts, i);
    let element;
    try {
      element = read(text.slice(i, end));
    } catch {
      throw syntax(text, open, starts, i);
    }
    starts.push(i);
    if (starts.length > 40) starts.splice(0, 8);
    visit(element, index);
    element = undefined;
    if (text.charCodeAt(end) === 0x5d) {
      if (skipSpace(text, end + 1) !== text.length) throw syntax(text, open, starts, i);
      return true;
    }
    i = end + 1;
  }
}

const NOT_JSON = Symbol('not JSON');

/**
 * Whether `text` is JSON, found without holding its tree when it is an array (one element
 * parsed at a time, as `eachElement` reads a batch, nested arrays element by element).
 */
function isJson(text) {
  try {
    if (!eachElement(text, () => {}, undefined, () => NOT_JSON)) JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The batch texts of an SSE event's data (a JSON array of wire batches), each checked to be
 * JSON, so that a syntax error anywhere in the event is found before any of its batches
 * applies, as when the event is parsed whole; `null` when the data is not an array.
 * @throws {ChordError} `Json`, with `JSON.parse`'s message for the whole data
 */
function batchTexts(data) {
  const texts = [];
  const read = (text) => {
    if (!isJson(text)) throw NOT_JSON;
    return text;
  };
  return eachElement(data, (text) => texts.push(text), read) ? texts : null;
}

/** Whether a batch text (known to be JSON) is a base batch: its first op is `r`, as `isBase`. */
function isBaseText(text) {
  let base = false;
  const stop = Symbol('stop');
  try {
    eachElement(text, (op) => {
      base = Array.isArray(op) && op[0] === 'r';
      throw stop;
    });
  } catch (e) {
    if (e !== stop) throw e;
  }
  return base;
}

// ---- the applier (chord/src/apply.rs) ----

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
class Batch {
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
function step(batch, op) {
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

// ---- a replica ----

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
 * everything at once, for an explicit resubscription.
 *
 * Values are copy on write (see {@link apply}): after a batch, every subtree it did not
 * change is the same object as before (`===`), and every container on a changed path, the
 * root included, is new. `subscribe(selector, listener)` builds on that: the listener runs
 * only when its slice changed. A failed batch leaves `value` the very object it was.
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
   */
  reset() {
    this.#decoder = createDecoder();
    this.#value = undefined;
    this.#failed = null;
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
    if (this.#failed) {
      if (!isBase(wireBatch)) throw fail('ReplicaFailed');
      this.reset();
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
    const failed = this.#failed !== null;
    const decoder = failed ? createDecoder() : this.#decoder;
    // For ops decoded later, from the text: the ids as they were before this batch.
    const ids = lazy ? decoder[IDS]() : null;
    const stream = decoder[STREAM]();
    // Without anyone to give the ops to, their values (parsed here, one op at a time) become
    // part of the value as they are.
    let batch = new Batch({ ...DEFAULT_LIMITS, ...this.limits }, failed ? undefined : this.#value, !wantOps);
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
      isArray = typeof text === 'string' && eachElement(text, (w, i) => {
        // Each stage runs while no error of it or of a more serious stage has been seen.
        if (level <= NOT_BASE) return;
        if (i === 0 && failed && !(Array.isArray(w) && w[0] === 'r')) return raise(fail('ReplicaFailed'), NOT_BASE);
        if (level <= WIRE_JSON) return;
        try {
          checkWireJson(w, 1);
        } catch (e) {
          return raise(e, WIRE_JSON);
        }
        if (level <= GRAMMAR) return;
        try {
          checkWireOp(w);
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
          step(batch, checkOp(op));
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
        parsed = JSON.parse(text);
      } catch (e) {
        throw this.#fail(fail('Json', { reason: e.message }));
      }
      return this.#apply(parsed, true, wantOps || lazy, decoded);
    }
    // An empty batch is not a base batch either (any other reached `ReplicaFailed` or an `r`).
    if (error === null && failed && applied === 0) raise(fail('ReplicaFailed'), NOT_BASE);
    if (error !== null) {
      if (level === NOT_BASE) throw error;
      // A failed replica's base batch starts it over, whether or not it then applies.
      if (failed) this.reset();
      throw this.#fail(error);
    }
    if (failed) {
      this.reset();
      this.#decoder = decoder;
    }
    return this.#applied(batch.root, ops, base, decoded, lazy ? () => decodeAgain(text, ids) : null);
  }

  /** Takes the value a batch made, then tells `decoded`, `onChange` and the subscriptions. */
  #applied(value, ops, base, decoded, later = null) {
    this.#value = value;
    decoded?.(ops, base, later);
    let thrown = null;
    try {
      this.onChange?.(value, ops);
    } catch (e) {
      thrown = { e };
    }
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
    if (thrown !== null) throw thrown.e;
    return value;
  }

  #fail(e) {
    this.#failed = e;
    return e;
  }
}

// ---------------------------------------------------------------------------------------
// Following a chord stream served as a Durable Stream.

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
  }

  /** Whether the server refused the read: 401 (no credential it accepts) or 403 (not allowed). */
  get refused() {
    return this.status === 401 || this.status === 403;
  }
}

/** Whether an error means starting again from the latest base batch. */
function restarts(error) {
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
function fatal(error, renewable) {
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
function streamUrl(url) {
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
function message(error) {
  const text = String(error?.message ?? error);
  const cause = error?.cause?.message;
  return cause ? `${text} (${cause})` : text;
}

function withQuery(url, params) {
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
function checkCredentials(who, { headers, credentials }) {
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
function credentialed(fetchImpl, { headers, credentials }) {
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

/** Throws the error of a response that is not OK, its body (a refusal's is empty) let go. */
async function refuse(response, url) {
  await response.body?.cancel().catch(() => {});
  throw new StreamHttpError(response.status, String(url));
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

/** The default largest SSE event (and line) accepted, in bytes: 64 MiB, as chord's replica. */
export const DEFAULT_MAX_EVENT = 64 * 1024 * 1024;

/**
 * A stream of events that cannot be read, or a control event that breaks the protocol.
 * `kind` says which: `"TooLarge"` (a line or an event's data over `max` bytes), `"NotUtf8"`
 * (a line that is not UTF-8), `"Control"` (a control event that is not a JSON object) or
 * `"BadOffset"` (its `streamNextOffset` is missing or not an offset: see {@link validOffset}). `follow`
 * resumes after the first three, as chord's replica does, and starts over from the latest
 * base after a `"BadOffset"`, since the position it was given cannot be trusted.
 */
export class StreamEventError extends Error {
  /**
   * @param {'TooLarge' | 'NotUtf8' | 'Control' | 'BadOffset'} kind
   * @param {string} message
   * @param {object} [info] the kind's fields (`max` for `TooLarge`)
   */
  constructor(kind, message, info = {}) {
    super(message);
    this.name = 'StreamEventError';
    this.kind = kind;
    Object.assign(this, info);
  }
}

/**
 * Whether `offset` can be a Durable Streams offset: a non-empty string of visible ASCII
 * without `,`, `&`, `=`, `?` or `/` (the characters the protocol forbids in an offset). A
 * space, a control character or a non-string is refused: it could never be sent back.
 * @param {unknown} offset
 * @returns {boolean}
 */
export function validOffset(offset) {
  return typeof offset === 'string' && /^[\x21-\x7e]+$/.test(offset) && !/[,&=?/]/.test(offset);
}

/**
 * An incremental `text/event-stream` parser, as chord's replica has: bytes in, each complete
 * event's name and data out. Lines end in CR, LF or CRLF (also split across chunks); `data:`
 * lines join with `\n`; a blank line ends an event, named by its `event:` field (`message`
 * without one); a byte-order mark at the start, comments, `id:` and `retry:` are read past.
 * Unlike a browser it refuses what chord never sends: a line or an event's data over
 * `maxEvent` bytes (`TooLarge`), a line that is not UTF-8 (`NotUtf8`: a `data` line's when
 * its event ends, any other line's when it is read).
 *
 * Cost: each byte is examined once or twice (`examined` counts them), whatever the chunking;
 * memory is the unfinished line (at most `maxEvent` bytes, kept as views of its chunks) plus
 * the event's data so far (UTF-8 in one buffer of at most `maxEvent` bytes, each line
 * costing what it is counted), and when the event ends, its text.
 */
export class EventParser {
  #max;
  #pieces = [];
  #pieceBytes = 0;
  #afterCr = false;
  #atStart = true;
  #utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  #name = '';
  // The event's data so far as UTF-8, its lines joined by LF, in a buffer that grows by
  // doubling up to the bound: a line costs what it is counted, so a flood of empty `data:`
  // lines (one byte each, the LF) holds at most the bound. (A string a line would cost an
  // array slot each, at least: ten times the byte counted.) Decoded once, when the event ends.
  #data = null;
  #dataBytes = 0;
  #hasData = false;
  /** Bytes the line search has looked at so far. */
  examined = 0;

  /** @param {{ maxEvent?: number }} [options] */
  constructor({ maxEvent = DEFAULT_MAX_EVENT } = {}) {
    if (!Number.isSafeInteger(maxEvent) || maxEvent < 1) {
      throw new TypeError(`maxEvent must be a positive integer of bytes, found ${maxEvent}`);
    }
    this.#max = maxEvent;
  }

  #tooLarge() {
    return new StreamEventError('TooLarge', `an event is larger than ${this.#max} bytes`, { max: this.#max });
  }

  /**
   * Adds bytes read from the stream; returns the events they complete, in order.
   * @param {Uint8Array} bytes
   * @returns {Array<{ name: string, data: string }>}
   * @throws {StreamEventError} `TooLarge` or `NotUtf8`; the parser is then unusable
   */
  push(bytes) {
    const events = [];
    const n = bytes.length;
    let i = 0;
    if (this.#afterCr && n > 0) {
      this.#afterCr = false;
      this.examined += 1;
      if (bytes[0] === 10) i = 1;
    }
    // The next LF and CR at or after `i`, each searched for again only once passed.
    let lf = -2;
    let cr = -2;
    const search = (byte, from) => {
      const found = bytes.indexOf(byte, from);
      this.examined += (found < 0 ? n : found + 1) - from;
      return found;
    };
    while (i < n) {
      if (lf !== -1 && lf < i) lf = search(10, i);
      if (cr !== -1 && cr < i) cr = search(13, i);
      const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      if (end < 0) {
        this.#pieces.push(bytes.subarray(i));
        this.#pieceBytes += n - i;
        if (this.#pieceBytes > this.#max) throw this.#tooLarge();
        break;
      }
      const length = this.#pieceBytes + end - i;
      if (length > this.#max) throw this.#tooLarge();
      let line = bytes.subarray(i, end);
      // A line joined from its pieces is the parser's own, not a view of the caller's bytes.
      const owned = this.#pieces.length > 0;
      if (owned) {
        const whole = new Uint8Array(length);
        let at = 0;
        for (const piece of this.#pieces) {
          whole.set(piece, at);
          at += piece.length;
        }
        whole.set(line, at);
        line = whole;
        this.#pieces = [];
        this.#pieceBytes = 0;
      }
      const event = this.#line(line, owned);
      if (event !== null) events.push(event);
      i = end + 1;
      if (bytes[end] === 13) {
        if (i === n) this.#afterCr = true;
        else if (bytes[i] === 10) i += 1;
      }
    }
    return events;
  }

  /**
   * Takes one line (without its end); returns the event a blank line completes, if any.
   * `owned` when the bytes are the parser's own array, which it may keep as it is.
   */
  #line(bytes, owned) {
    if (this.#atStart) {
      this.#atStart = false;
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    }
    if (bytes.length === 0) {
      let event = null;
      if (this.#hasData) {
        let data = '';
        if (this.#dataBytes > 0) {
          try {
            data = this.#utf8.decode(this.#data.subarray(0, this.#dataBytes));
          } catch {
            throw new StreamEventError('NotUtf8', 'an event line is not UTF-8');
          }
        }
        event = { name: this.#name || 'message', data };
      }
      this.#name = '';
      this.#dataBytes = 0;
      this.#hasData = false;
      // A small buffer serves the next event; a large one is not held between events.
      if (this.#data !== null && this.#data.length > KEPT_DATA_BUFFER) this.#data = null;
      return event;
    }
    if (isDataLine(bytes)) {
      // The value (after `data:` and one space, if any) joins the event's bytes, checked to
      // be UTF-8 when the event ends.
      let from = 5;
      if (bytes[from] === 0x20) from += 1;
      this.#appendData(bytes.subarray(Math.min(from, bytes.length)), owned);
      return null;
    }
    let line;
    try {
      line = this.#utf8.decode(bytes);
    } catch {
      throw new StreamEventError('NotUtf8', 'an event line is not UTF-8');
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field === 'event') {
      const value = colon < 0 ? '' : line.slice(colon + 1);
      this.#name = value.startsWith(' ') ? value.slice(1) : value;
    }
    return null;
  }

  /**
   * Adds one `data` line's value (bytes) to the event: after an LF unless it is the first.
   * An `owned` first value (a long line, joined from the chunks it came in) becomes the
   * buffer as it is, rather than being copied.
   */
  #appendData(value, owned) {
    const separator = this.#hasData ? 1 : 0;
    const length = this.#dataBytes + separator + value.length;
    if (length > this.#max) throw this.#tooLarge();
    if (owned && !this.#hasData) {
      this.#data = value;
      this.#dataBytes = length;
      this.#hasData = true;
      return;
    }
    const held = this.#data === null ? 0 : this.#data.length;
    if (this.#data === null || length > held) {
      // Doubling, never past the bound: at most the bound is held, and each byte is copied
      // about twice however the event's lines come.
      const grown = new Uint8Array(Math.min(this.#max, Math.max(length, 2 * held, 256)));
      if (this.#dataBytes > 0) grown.set(this.#data.subarray(0, this.#dataBytes));
      this.#data = grown;
    }
    if (separator) this.#data[this.#dataBytes] = 10;
    this.#data.set(value, this.#dataBytes + separator);
    this.#dataBytes = length;
    this.#hasData = true;
  }
}

/** The largest event data buffer an `EventParser` keeps for the next event (64 KiB). */
const KEPT_DATA_BUFFER = 64 * 1024;

/**
 * Whether a line (bytes, without its end) is a `data` field: `data`, then `:` or the line's
 * end. The field's name is ASCII, so the bytes say it without decoding the line.
 */
function isDataLine(b) {
  return b.length >= 4 && b[0] === 0x64 && b[1] === 0x61 && b[2] === 0x74 && b[3] === 0x61 && (b.length === 4 || b[4] === 0x3a);
}

/** The texts of a chunk's batches, when its transport kept them as text. */
const TEXTS = Symbol('batch texts');

/**
 * A chunk whose batches are texts: `follow` streams each into its replica; `messages`
 * parses them for any other reader, when first asked.
 */
function textChunk(texts, offset) {
  let parsed = null;
  return {
    get messages() {
      parsed ??= texts.map((text) => JSON.parse(text));
      return parsed;
    },
    offset,
    [TEXTS]: texts,
  };
}

/**
 * The default transport: `fetch` with `live=sse`, parsed here by an {@link EventParser}
 * (browsers and Node 18+). Yields each `data` event's messages together with the
 * `streamNextOffset` of the `control` event after it.
 *
 * `maxEvent` (default {@link DEFAULT_MAX_EVENT}) bounds a line and an event's data in bytes;
 * a larger one ends the transport with a `StreamEventError` of kind `TooLarge`. A control
 * event that is not a JSON object is a `Control` error; one whose `streamNextOffset` is missing or
 * not a valid offset ({@link validOffset}), a `BadOffset` error.
 *
 * Being `fetch`, not `EventSource`, it can send an `Authorization` header: under `follow`
 * the `fetch` it is given adds the follower's `headers` and `credentials`. A response that
 * is not OK (a refusal's 401 or 403) throws a `StreamHttpError` before a byte of its body
 * is read.
 * @type {Transport}
 */
export async function* sseTransport({
  url,
  offset,
  signal,
  fetch: fetchImpl = globalThis.fetch,
  onBytes,
  maxEvent = DEFAULT_MAX_EVENT,
}) {
  const parser = new EventParser({ maxEvent });
  const response = await fetchImpl(withQuery(url, { offset, live: 'sse' }), {
    headers: { accept: 'text/event-stream' },
    signal,
    cache: 'no-store',
  });
  if (!response.ok) await refuse(response, url);
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/event-stream')) {
    const error = new StreamHttpError(response.status, url);
    error.message = `${url} answered ${response.status} with ${type || 'no content type'}, not text/event-stream: is it a stream's URL?`;
    error.notEventStream = true;
    await response.body?.cancel().catch(() => {});
    throw error;
  }
  const reader = response.body.getReader();
  // A fetch that does not end its body on abort still stops here.
  const stop = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', stop, { once: true });
  let pending = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onBytes?.(value.byteLength);
      for (const { name, data } of parser.push(value)) {
        if (name === 'data') {
          if (pending !== null) throw fail('Json', { reason: 'two data events without a control event' });
          pending = data;
        } else if (name === 'control') {
          let control;
          try {
            control = JSON.parse(data);
          } catch (e) {
            throw new StreamEventError('Control', `a control event is not JSON: ${e.message}`);
          }
          if (!isObject(control)) throw new StreamEventError('Control', 'a control event is not a JSON object');
          const next = Object.hasOwn(control, 'streamNextOffset') ? control.streamNextOffset : undefined;
          if (!validOffset(next)) {
            const shown = next === undefined ? 'missing' : typeof next === 'string' ? JSON.stringify(next.slice(0, 64)) : jsonType(next);
            throw new StreamEventError('BadOffset', `a control event's streamNextOffset is not an offset: ${shown}`);
          }
          let messages = [];
          let texts = null;
          if (pending !== null) {
            // An array of batches (what chord sends) is split into their texts, which a
            // Replica streams op by op; anything else is parsed whole, as it cannot be read
            // as batches.
            texts = batchTexts(pending);
            if (texts === null) {
              try {
                messages = JSON.parse(pending);
              } catch (e) {
                throw fail('Json', { reason: e.message });
              }
            }
            pending = null;
          }
          if (texts === null) {
            // The batches were parsed here and are held nowhere else: they decode in place.
            yield { messages, offset: next, [IN_PLACE]: true };
          } else {
            yield textChunk(texts, next);
          }
        }
      }
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    reader.cancel().catch(() => {});
  }
}

/** A client's error with an HTTP status as a `StreamHttpError`, which `follow` acts on. */
function httpError(error, url) {
  const status = error?.status;
  if (typeof status !== 'number' || error instanceof StreamHttpError) return error;
  return new StreamHttpError(status, String(url));
}

/**
 * A transport over the official client, `@durable-streams/client` (pass the imported
 * module; chord does not depend on it).
 *
 * The follower's `headers` and `credentials` reach every request the client makes (its
 * catch-up `GET`, each SSE connection, its own retries) through the `fetch` the transport
 * is given, which adds them, resolving a `headers` function again for each request. The
 * client's own `headers` option (a record of strings or per-header functions, sync or async,
 * called per request) and `params` are not used: a `fetch` is the one way to give it
 * `credentials`, which it has no option for. An error with a status (the client's
 * `FetchError` or `DurableStreamError`, e.g. a 401) becomes a `StreamHttpError`.
 * @param {{ stream: Function }} client `import * as client from '@durable-streams/client'`
 * @returns {Transport}
 */
export function durableStreamsTransport(client) {
  return async function* ({ url, offset, signal, fetch: fetchImpl }) {
    const queue = [];
    let wake = null;
    let finished = false;
    let failure = null;
    let session;
    try {
      session = await client.stream({
        url: String(url),
        offset,
        live: 'sse',
        json: true,
        signal,
        ...(fetchImpl ? { fetch: fetchImpl } : {}),
        // Every error ends the session: `follow` decides whether to resume or restart.
        onError: (error) => {
          failure = error;
        },
      });
    } catch (error) {
      throw httpError(error, url);
    }
    const unsubscribe = session.subscribeJson((batch) => {
      queue.push({ messages: batch.items, offset: batch.offset });
      wake?.();
    });
    session.closed.then(
      () => {
        finished = true;
        wake?.();
      },
      (error) => {
        failure ??= error;
        finished = true;
        wake?.();
      },
    );
    try {
      for (;;) {
        while (queue.length > 0) yield queue.shift();
        if (finished) break;
        await new Promise((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
      if (failure) throw httpError(failure, url);
    } finally {
      unsubscribe();
      session.cancel();
    }
  };
}

/**
 * Follows a chord stream served as a Durable Stream and keeps `replica` current.
 *
 * It starts at the latest base batch (the offset a `HEAD` names in `chord-base-offset`) with
 * a fresh decoder. Each `data` event is applied with the `control` event after it, whose
 * `streamNextOffset` it keeps. After any break (the connection drops, the server ends the
 * response) it reconnects after a short backoff and resumes from that offset with the same
 * decoder: it receives only the batches it missed, never a base batch again. It starts over
 * from the latest base only when the server answers 410 (the offset is before the oldest base
 * kept) or 404, a batch does not decode or apply, or a control event's `streamNextOffset` is
 * not an offset (a `StreamEventError` of kind `BadOffset`). An event or a line over
 * `maxEvent` bytes (default {@link DEFAULT_MAX_EVENT}) breaks the connection with a
 * `StreamEventError` of kind `TooLarge`, reported and retried like a dropped connection.
 *
 * Errors reach the caller:
 * - a URL that is not absolute (with no page `location` to resolve it against) or not
 *   http(s), or an option of the wrong type, throws a `TypeError` at once;
 * - an answer no retry changes (a 4xx other than 404, 408, 410, 425, 429, or a response that
 *   is not an event stream) stops the follower: `onError` gets it with `stopped: true` and
 *   `done` rejects with it;
 * - a refused read (a `StreamHttpError` with `status` 401 or 403, `refused` true) is such an
 *   answer, unless `headers` is a function: then the credentials may change between tries
 *   (a token refreshed, a login), so it is retried with the backoff (`stopped: false`),
 *   calling `headers` again for each request;
 * - every retried error (the network, 5xx, a batch that does not decode or apply) goes to
 *   `onError` with `stopped: false`;
 * - a throwing `onChange` (or `onEvent`, or a subscription's selector or listener) goes to
 *   `onError` with `source: 'onChange'`; the batch has applied, and following goes on from
 *   the next one (no restart from the base).
 * Without `onError`, each distinct message is printed once: retried ones with
 * `console.warn` (again after the stream has delivered since), the others with
 * `console.error`.
 *
 * Credentials: `headers` (an object, or a function returning one, sync or async, called
 * again for every request, so a token can be refreshed) and `credentials` (`'omit'`,
 * `'same-origin'`, `'include'`: fetch's mode, `'include'` to send cookies to another
 * origin) go to every request the follower makes: the `HEAD` naming the base offset, and
 * each connection of the transport, through the `fetch` it is given (`sseTransport`'s SSE
 * `GET`, the official client's catch-up and SSE requests). A token in the URL's query
 * (`...?token=...`) stays on every request, as the offsets are added after it.
 *
 * The handle's `subscribe(selector, listener)` is the replica's (see `Replica#subscribe`).
 * `onEvent`'s `batch` events carry the batch's decoded ops, whether it was a base batch, and
 * the new value. A batch the default transport kept as text keeps no ops: the event's `batch`
 * is decoded again from that text when first read (then kept by the event), so an `onEvent`
 * that never reads it costs what following without one costs.
 *
 * In TypeScript, `follow<Lane>(url)` (or a `Replica<Lane>` in `options.replica`) types the
 * follower's value, its `subscribe` and `onEvent`'s value (see chord-replica.d.ts).
 *
 * @param {string | URL} url the stream's URL, e.g. `http://127.0.0.1:8080/streams/lanes/main`
 *   (in a browser, `/streams/lanes/main` resolves against the page's location)
 * @param {FollowOptions} [options]
 * @returns {Follower}
 * @throws {TypeError} a URL or an option that can never work
 * @example
 * const replica = new Replica({ onChange: (value) => console.log(value) });
 * const follower = follow('http://127.0.0.1:8080/streams/lanes/main', { replica });
 * // Called only when a batch changed the lane's status (values are copy on write):
 * const unsubscribe = follower.subscribe((lane) => lane.status, (status) => console.log(status));
 * // later: unsubscribe(); follower.stop();
 */
export function follow(url, options = {}) {
  const href = streamUrl(url);
  if (options.replica !== undefined && !(options.replica instanceof Replica)) {
    throw new TypeError('follow: options.replica must be a Replica');
  }
  for (const name of ['fetch', 'transport', 'onEvent', 'onError']) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new TypeError(`follow: options.${name} must be a function`);
    }
  }
  checkCredentials('follow', options);
  const replica = options.replica ?? new Replica();
  const transport = options.transport ?? sseTransport;
  const plainFetch = options.fetch ?? globalThis.fetch;
  if (typeof plainFetch !== 'function') {
    throw new TypeError('follow: no fetch here (Node 18 or later has one): pass options.fetch');
  }
  // Every request the follower makes, the transport's included, carries its credentials.
  const fetchImpl = credentialed(plainFetch, options);
  const renewable = typeof options.headers === 'function';
  const maxEvent = options.maxEvent ?? DEFAULT_MAX_EVENT;
  if (!Number.isSafeInteger(maxEvent) || maxEvent < 1) {
    throw new TypeError(`follow: options.maxEvent must be a positive integer of bytes, found ${maxEvent}`);
  }
  const min = options.backoffMin ?? 50;
  const max = Math.max(min, options.backoffMax ?? 2000);
  const controller = new AbortController();
  options.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  const stats = {
    starts: 0,
    resumes: 0,
    batches: 0,
    bases: 0,
    bytes: 0,
    breaks: 0,
    lastBreak: null,
    errors: 0,
    lastError: null,
  };

  // What the console has been told, when there is no `onError`: stream errors until the
  // stream delivers again, the app's errors for the follower's life.
  const told = { stream: new Set(), onChange: new Set() };
  const report = (error, info) => {
    stats.errors += 1;
    stats.lastError = message(error);
    if (options.onError) {
      try {
        options.onError(error, info);
      } catch (e) {
        console.error(`chord-replica: onError threw while reporting an error of ${href}:`, e);
      }
      return;
    }
    const seen = told[info.source];
    const key = message(error);
    if (seen.has(key)) return;
    seen.add(key);
    const what = key.includes(href) ? key : `${href}: ${key}`;
    if (info.source === 'onChange') {
      console.error(`chord-replica: onChange threw; the batch applied, following ${href} goes on:`, error);
    } else if (!info.stopped) {
      const next = info.restart ? 'starting over from the latest base' : 'retrying';
      console.warn(`chord-replica: ${what}; ${next} (pass onError to follow() to handle errors)`);
    } else {
      console.error(`chord-replica: ${what}; stopped (no retry can succeed)`);
    }
  };
  const deliver = (event) => {
    if (!options.onEvent) return;
    try {
      options.onEvent(event);
    } catch (e) {
      report(e, { source: 'onChange', stopped: false, restart: false });
    }
  };
  const emit = (type, detail) => deliver({ type, ...detail });
  /**
   * A batch's event. Its `batch` (the decoded ops) is a getter when the ops were not kept:
   * decoded from the batch's text at the first read (and then kept by the event), so an
   * `onEvent` that never reads it holds no decoded ops.
   */
  const emitBatch = (ops, later, base) => {
    const value = replica.value;
    if (later === null) {
      deliver({ type: 'batch', batch: ops, base, value });
      return;
    }
    let decoded = null;
    deliver({
      type: 'batch',
      get batch() {
        if (decoded === null) {
          decoded = later();
          later = null;
        }
        return decoded;
      },
      base,
      value,
    });
  };
  const follower = {
    replica,
    stats,
    url: href,
    offset: null,
    stop() {
      controller.abort();
    },
    subscribe: (selector, listener) => replica.subscribe(selector, listener),
    done: null,
  };
  const sleep = (ms) =>
    new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      controller.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });

  /**
   * Applies one batch, returning its decoded ops (`ops`, kept only for an `onEvent`, or
   * `later`, a function that decodes them from the batch's text) and whether it was a base
   * batch; an error of `onChange` or a subscription is reported, not thrown.
   */
  function applyOne(batch, inPlace, text) {
    let ops = null;
    let later = null;
    let base = false;
    try {
      replica[IN_PLACE](batch, {
        inPlace,
        text,
        // A batch streamed from its text keeps no ops for `onEvent`: an event's `batch` is
        // decoded again from the text if the callback reads it, so that a callback that
        // does not (the React store's) costs what following without one costs.
        wantOps: options.onEvent === undefined ? false : text ? 'lazy' : true,
        decoded: (decoded, isBaseBatch, decodeLater) => {
          ops = decoded;
          later = decodeLater;
          base = isBaseBatch;
        },
      });
    } catch (error) {
      // A failed batch leaves the replica failed; otherwise it applied and `onChange` threw.
      if (replica.failed !== null) throw error;
      report(error, { source: 'onChange', stopped: false, restart: false });
    }
    return { ops, later, base };
  }

  async function connection() {
    const signal = controller.signal;
    const fresh = follower.offset === null;
    const offset = fresh ? await baseOffset(href, { fetch: fetchImpl, signal }) : follower.offset;
    emit('open', { fresh, offset });
    let first = true;
    let delivered = false;
    for await (const chunk of transport({
      url: href,
      offset,
      signal,
      fetch: fetchImpl,
      maxEvent,
      onBytes: (n) => {
        stats.bytes += n;
      },
    })) {
      // Batches kept as text (the default transport's) stream into the replica op by op.
      const { offset: next, [IN_PLACE]: inPlace, [TEXTS]: texts } = chunk;
      const messages = texts ?? chunk.messages;
      for (const batch of messages) {
        if (fresh && first) {
          if (!(texts ? isBaseText(batch) : isBase(batch))) throw fail('NotBase');
          replica.reset();
        }
        first = false;
        const { ops, later, base } = applyOne(batch, inPlace === true, texts !== undefined);
        stats.batches += 1;
        if (base) stats.bases += 1;
        if (options.onEvent) emitBatch(ops, later, base);
      }
      if (fresh && first) {
        // A fresh start's first event carries its base batch.
        if (messages.length === 0 && !delivered) continue;
      }
      follower.offset = next;
      if (!delivered) {
        delivered = true;
        told.stream.clear();
        if (fresh) stats.starts += 1;
        else stats.resumes += 1;
        emit(fresh ? 'start' : 'resume', { offset: next });
        emit('live', { live: true });
      }
    }
    return delivered;
  }

  follower.done = (async () => {
    let backoff = min;
    while (!controller.signal.aborted) {
      let delivered = false;
      let why = 'ended';
      try {
        delivered = await connection();
      } catch (error) {
        if (controller.signal.aborted) break;
        why = error;
        if (fatal(error, renewable)) {
          report(error, { source: 'stream', stopped: true, restart: false });
          emit('live', { live: false });
          throw error;
        }
        // Starting over means dropping a value already held; before the first start it is a retry.
        const restart = restarts(error) && stats.starts > 0;
        if (restarts(error)) follower.offset = null;
        report(error, { source: 'stream', stopped: false, restart });
      }
      if (controller.signal.aborted) break;
      stats.breaks += 1;
      stats.lastBreak = why === 'ended' ? 'ended' : message(why);
      emit('break', { error: why === 'ended' ? null : why, restart: follower.offset === null });
      emit('live', { live: false });
      if (delivered) backoff = min;
      await sleep(backoff * (0.5 + Math.random()));
      backoff = Math.min(backoff * 2, max);
    }
  })();
  return follower;
}
