// A batch's text read op by op, without parsing it whole: what lets a replica stream a
// large batch and a transport check an event before any of its batches applies.

import { fail } from './errors.mjs';

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
export function eachElement(text, visit, read = (element) => JSON.parse(element), syntax = syntaxError) {
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
