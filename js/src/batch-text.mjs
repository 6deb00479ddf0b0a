// A batch's text read op by op, without parsing it whole: what lets a replica stream a
// large batch and a transport check an event before any of its batches applies.

import { ChordError, fail } from './errors.mjs';

/** The most names an object's repeat is looked for among one by one; more go in a Set. */
const LINEAR_NAMES = 16;

/**
 * The first member name an object of `text` (JSON, known valid) names twice, with the
 * index after its closing quote, or `null`. Names are compared unescaped (`"a"` and
 * `"\u0061"` are the same name), as chord's decoder compares them. One pass over the text,
 * holding the names of the objects open around the point read.
 * @param {string} text
 * @returns {[string, number] | null}
 */
export function repeatedName(text) {
  if (text.indexOf('{') < 0) return null;
  const n = text.length;
  // Per open container: the names of an object so far (an array, then a Set), or null for
  // an array.
  const open = [];
  let nameNext = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; ; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      if (!nameNext) continue;
      nameNext = false;
      const name = escaped ? JSON.parse(text.slice(start, i + 1)) : text.slice(start + 1, i);
      const names = open[open.length - 1];
      if (Array.isArray(names)) {
        if (names.includes(name)) return [name, i + 1];
        names.push(name);
        if (names.length > LINEAR_NAMES) open[open.length - 1] = new Set(names);
      } else {
        if (names.has(name)) return [name, i + 1];
        names.add(name);
      }
    } else if (c === 0x7b) {
      open.push([]);
      nameNext = true;
    } else if (c === 0x5b) {
      open.push(null);
    } else if (c === 0x7d || c === 0x5d) {
      open.pop();
      nameNext = false;
    } else if (c === 0x2c) {
      nameNext = open.length > 0 && open[open.length - 1] !== null;
    }
  }
  return null;
}

/**
 * `JSON.parse(text)`, refusing what chord's decoder refuses and `JSON.parse` lets through by
 * keeping the last of them: an object naming a member twice (a `Json` error naming the
 * name). JSON that chord reads is I-JSON (RFC 7493), so both replicas refuse such a batch
 * instead of each keeping a different member. The error names where the second name ends,
 * counting from `offset` (where `text` starts in the text it was cut from).
 * @param {string} text
 * @param {number} [offset]
 */
export function parseJson(text, offset = 0) {
  const value = JSON.parse(text);
  const repeated = repeatedName(text);
  if (repeated !== null) {
    const [name, end] = repeated;
    throw fail('Json', { reason: `duplicate member name ${JSON.stringify(name)} at character ${offset + end}` });
  }
  return value;
}

/** JSON's whitespace: space, tab, LF and CR (JSON.parse's, no other). */
const isSpace = (c) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(text, i) {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

// A text is scanned from its bytes when it is ASCII, one byte per UTF-16 unit (so indices
// are the same): reading a typed array costs a few instructions a character, `charCodeAt`
// on a text that is a rope or a slice of a larger one (as JSON.stringify and the SSE parser
// make them) several times that, as it finds the characters again for each read.

const encoder = typeof TextEncoder === 'function' ? new TextEncoder() : null;

/** Texts longer than this are scanned with `charCodeAt`. */
const BYTES_MAX = 1 << 16;

/** Buffers not in use (a scan inside a scan takes another one). */
const spareBytes = [];

/**
 * The text's UTF-16 units as bytes when it is ASCII and at most `BYTES_MAX` long, in a
 * buffer the caller gives back with `releaseBytes`; otherwise `null`.
 * @returns {Uint8Array | null}
 */
function asciiBytes(text) {
  const n = text.length;
  if (encoder === null || n > BYTES_MAX) return null;
  let bytes = spareBytes.pop() ?? null;
  if (bytes === null || bytes.length < n) bytes = new Uint8Array(Math.max(256, 2 ** Math.ceil(Math.log2(n))));
  const { read, written } = encoder.encodeInto(text, bytes);
  // As many bytes as units, all of them read: every unit was one byte, so ASCII.
  if (read === n && written === n) return bytes;
  releaseBytes(bytes);
  return null;
}

function releaseBytes(bytes) {
  if (bytes !== null && spareBytes.length < 4) spareBytes.push(bytes);
}

/** The UTF-16 unit at `i` of `text`, read from its `bytes` when there are (`NaN` past the end). */
function unitAt(text, bytes, n, i) {
  if (bytes === null) return text.charCodeAt(i);
  return i < n ? bytes[i] : NaN;
}

function skipSpaceIn(text, bytes, n, i) {
  if (bytes === null) return skipSpace(text, i);
  while (i < n && isSpace(bytes[i])) i++;
  return i;
}

/** The deepest a plain element nests (see `scannedPlain`). */
const PLAIN_DEPTH = 64;

/** The most digits a plain element's number has: it is then finite (under 1e15). */
const PLAIN_DIGITS = 15;

/**
 * Whether the element `elementEndIn` last scanned is plain: its text ASCII with no `\u`
 * escape in its strings (which then hold no lone surrogate), no number written with a
 * fraction or an exponent (a digit before `.`, `e` or `E` outside strings) or with more than
 * `PLAIN_DIGITS` digits (so every number is an integer as written, and finite), and at most
 * `PLAIN_DEPTH` arrays and objects deep. What `checkWireJson` and the grammar's number texts
 * check is then known to hold.
 */
let scannedPlain = false;

/** Whether the element `elementEndIn` last scanned has an object (a `{` outside strings). */
let scannedObject = false;

/** `elementEnd` of a text's `bytes` (`n` of them); sets `scannedPlain`. */
function elementEndIn(bytes, n, i) {
  let depth = 0;
  let plain = true;
  let digits = 0;
  let object = false;
  for (; i < n; i++) {
    const c = bytes[i];
    if (c >= 0x30 && c <= 0x39) {
      if (++digits > PLAIN_DIGITS) plain = false;
      continue;
    }
    const after = digits > 0;
    digits = 0;
    if (c === 0x22) {
      for (i++; ; i++) {
        if (i >= n) return -1;
        const d = bytes[i];
        if (d === 0x5c) {
          i++;
          if (bytes[i] === 0x75) plain = false;
        } else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > PLAIN_DEPTH) plain = false;
      if (c === 0x7b) object = true;
    } else if (c === 0x5d || c === 0x7d) {
      if (depth === 0) {
        scannedPlain = plain;
        scannedObject = object;
        return c === 0x5d ? i : -1;
      }
      depth--;
    } else if (c === 0x2c) {
      if (depth === 0) {
        scannedPlain = plain;
        scannedObject = object;
        return i;
      }
    } else if (after && (c === 0x2e || c === 0x65 || c === 0x45)) {
      plain = false;
    }
  }
  return -1;
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
 * to `JSON.parse` on its own (so numbers, escapes and errors are exactly `JSON.parse`'s, and
 * an object naming a member twice is refused, see {@link parseJson}),
 * and hands each parsed element to `visit(element, index, text, plain)` before the next is
 * read: the batch is never held as one tree. Throws the `Json` error of the first syntax
 * error anywhere in the text, after visiting the elements before it. `plain` is true when
 * the element's text was found to be ASCII with no `\u` escape (so its strings hold no lone
 * surrogate), no number written with a fraction, an exponent or more than 15 digits (so its
 * numbers are finite integers, as written) and no deeper than 64 arrays and objects.
 *
 * `read` turns an element's text into what `visit` gets (`JSON.parse` by default; it throws
 * when the text is not JSON) and `syntax` makes the error thrown for a syntax error.
 * @returns {boolean} false when the text is not an array (nothing was visited)
 */
export function eachElement(text, visit, read = parseJson, syntax = syntaxError) {
  const bytes = asciiBytes(text);
  try {
    return eachElementIn(text, bytes, visit, read, syntax);
  } finally {
    releaseBytes(bytes);
  }
}

function eachElementIn(text, bytes, visit, read, syntax) {
  const n = text.length;
  const open = skipSpaceIn(text, bytes, n, 0);
  if (unitAt(text, bytes, n, open) !== 0x5b) return false;
  let i = open + 1;
  const close = skipSpaceIn(text, bytes, n, i);
  if (unitAt(text, bytes, n, close) === 0x5d) {
    if (skipSpaceIn(text, bytes, n, close + 1) !== n) throw syntax(text, open, [], i);
    return true;
  }
  // The starts of the elements before this one, the last few: enough to reach 64
  // characters back.
  let starts = EMPTY;
  for (let index = 0; ; index++) {
    const end = bytes === null ? elementEnd(text, i) : elementEndIn(bytes, n, i);
    const plain = bytes !== null && scannedPlain;
    if (end < 0) throw syntax(text, open, starts, i);
    let element;
    const elementText = text.slice(i, end);
    try {
      // An element with no object names nothing twice.
      element = read === parseJson && bytes !== null && !scannedObject ? JSON.parse(elementText) : read(elementText, i);
    } catch (e) {
      // A name repeated: JSON to `JSON.parse`, refused as chord refuses it.
      if (e instanceof ChordError) throw e;
      throw syntax(text, open, starts, i);
    }
    if (starts === EMPTY) starts = [];
    starts.push(i);
    if (starts.length > 40) starts.splice(0, 8);
    visit(element, index, elementText, plain);
    element = undefined;
    if (unitAt(text, bytes, n, end) === 0x5d) {
      if (skipSpaceIn(text, bytes, n, end + 1) !== n) throw syntax(text, open, starts, i);
      return true;
    }
    i = end + 1;
  }
}

const NOT_JSON = Symbol('not JSON');

const EMPTY = Object.freeze([]);

/**
 * Whether `text` is JSON, found without holding its tree when it is an array (one element
 * parsed at a time, as `eachElement` reads a batch, nested arrays element by element).
 */
function isJson(text) {
  try {
    if (!eachElement(text, () => {}, undefined, () => NOT_JSON)) parseJson(text);
    return true;
  } catch (e) {
    // A name repeated is not a syntax error: it is thrown as the `Json` error it is.
    if (e instanceof ChordError) throw e;
    return false;
  }
}

/**
 * The batch texts of an SSE event's data (a JSON array of wire batches), each checked to be
 * JSON, so that a syntax error anywhere in the event is found before any of its batches
 * applies, as when the event is parsed whole; `null` when the data is not an array.
 * @throws {ChordError} `Json`, with `JSON.parse`'s message for the whole data
 */
export function batchTexts(data) {
  const texts = [];
  const read = (text) => {
    if (!isJson(text)) throw NOT_JSON;
    return text;
  };
  return eachElement(data, (text) => texts.push(text), read) ? texts : null;
}

/** Whether a batch text (known to be JSON) is a base batch: its first op is `r`, as `isBase`. */
export function isBaseText(text) {
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

/**
 * The texts of the first `max` elements of an array's text (JSON, known valid), as written
 * (whitespace around them kept): where a reader needs how a value was spelled, which
 * parsing loses (`1.0` and `1` parse to the same number).
 * @param {string} text
 * @param {number} [max]
 * @returns {string[]}
 */
export function elementTexts(text, max = Infinity) {
  const out = [];
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 0x5b) return out;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === 0x5d) return out;
  while (out.length < max) {
    const end = elementEnd(text, i);
    if (end < 0) break;
    out.push(text.slice(i, end));
    if (text.charCodeAt(end) === 0x5d) break;
    i = skipSpace(text, end + 1);
  }
  return out;
}

/** Whether a batch text is JSON: `Json` (with `JSON.parse`'s message) when it is not. */
export function checkBatchText(text) {
  if (!isJson(text)) throw syntaxError(text, 0, [], 0);
}

/**
 * Splits a JSON array arriving in pieces (a catch-up body: `[batch,batch,...]`) into the
 * texts of its elements, each handed out as soon as its end has arrived, so a body of any
 * length is read holding one element (and the piece in hand). Brackets are counted outside
 * strings as {@link eachElement} counts them; whether an element is JSON is for its reader
 * to say ({@link checkBatchText}).
 *
 * An element longer than `max` characters is refused (`onTooLarge(max)` makes the error);
 * so is an empty element, anything but whitespace after the array, or an array that does
 * not end (`end`): a `Json` error naming where.
 */
export class ArraySplitter {
  #max;
  #tooLarge;
  /** 0 before the `[`, 1 before an element (or the `]` of `[]`), 2 in one, 3 after the `]`. */
  #state = 0;
  #depth = 0;
  #inString = false;
  #escape = false;
  #pieces = [];
  #size = 0;
  #count = 0;
  /** Characters read before the piece in hand: where an error is. */
  #read = 0;

  /**
   * @param {number} max the longest element accepted, in characters
   * @param {(max: number) => Error} onTooLarge
   */
  constructor(max, onTooLarge) {
    this.#max = max;
    this.#tooLarge = onTooLarge;
  }

  #error(at, what) {
    return fail('Json', { reason: `${what} at character ${this.#read + at} of the catch-up body` });
  }

  /**
   * The elements that end in `piece`, in order.
   * @param {string} piece
   * @returns {string[]}
   */
  push(piece) {
    const out = [];
    const n = piece.length;
    let start = this.#state === 2 ? 0 : -1;
    for (let i = 0; i < n; i++) {
      const c = piece.charCodeAt(i);
      if (this.#state === 2) {
        if (this.#inString) {
          if (this.#escape) this.#escape = false;
          else if (c === 0x5c) this.#escape = true;
          else if (c === 0x22) this.#inString = false;
          continue;
        }
        if (c === 0x22) this.#inString = true;
        else if (c === 0x5b || c === 0x7b) this.#depth++;
        else if ((c === 0x5d || c === 0x7d) && this.#depth > 0) this.#depth--;
        else if (this.#depth === 0 && (c === 0x2c || c === 0x5d)) {
          this.#take(piece.slice(start, i));
          out.push(this.#pieces.join(''));
          this.#pieces = [];
          this.#size = 0;
          this.#count++;
          this.#state = c === 0x2c ? 1 : 3;
          start = -1;
        } else if (this.#depth === 0 && c === 0x7d) {
          throw this.#error(i, 'a "}" closing the array');
        }
        continue;
      }
      if (isSpace(c)) continue;
      if (this.#state === 0) {
        if (c !== 0x5b) throw this.#error(i, 'no JSON array');
        this.#state = 1;
      } else if (this.#state === 1) {
        if (c === 0x5d && this.#count === 0) this.#state = 3;
        else if (c === 0x2c || c === 0x5d) throw this.#error(i, 'an empty element');
        else {
          this.#state = 2;
          start = i;
          i--; // read the element's first character as part of it
        }
      } else {
        throw this.#error(i, 'text after the array');
      }
    }
    if (this.#state === 2) this.#take(piece.slice(start));
    this.#read += n;
    return out;
  }

  #take(text) {
    this.#size += text.length;
    if (this.#size > this.#max) throw this.#tooLarge(this.#max);
    this.#pieces.push(text);
  }

  /** Checks that the array ended. */
  end() {
    if (this.#state !== 3) throw this.#error(0, 'the body ends before its array does');
  }
}
