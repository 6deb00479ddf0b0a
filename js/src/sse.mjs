// The `text/event-stream` parser (EventParser) and its errors, as chord's replica reads SSE.

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
 * without one) and carrying the last event id (`id`: the value of the latest `id:` field of
 * this or an earlier event, `''` before any, as browsers keep it for `Last-Event-ID`;
 * `lastEventId` holds it too, also after an event without data, which is not returned); a
 * byte-order mark at the start, comments and `retry:` are read past.
 * Unlike a browser it refuses what chord never sends: a line or an event's data over
 * `maxEvent` bytes (`TooLarge`), a line that is not UTF-8 (`NotUtf8`: a `data` line's when
 * its event ends, any other line's when it is read).
 *
 * Cost: each byte is examined once or twice (`examined` counts them), whatever the chunking;
 * memory is the unfinished line (copied out of its chunks into one buffer that grows by
 * doubling: at most twice its bytes and never over `maxEvent`, however small the chunks)
 * plus the event's data so far (UTF-8 in one buffer of at most `maxEvent` bytes, each line
 * costing what it is counted), and when the event ends, its text. No chunk is kept past the
 * `push` it came in.
 */
export class EventParser {
  #max;
  // The unfinished line: the bytes of the chunks it came in so far, copied into a buffer
  // that grows by doubling. (Views of the chunks would cost an object each, many times the
  // bytes of a small chunk, and keep each chunk's whole buffer alive.) Handed over with the
  // line when it ends, so never shared with what the parser returns.
  #lineBuffer = null;
  #lineBytes = 0;
  #afterCr = false;
  #atStart = true;
  #utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  #name = '';
  // The last event id buffer: set by an `id:` field (unless its value holds a NUL) and kept
  // across events.
  #idBuffer = '';
  /** The last event id as of the last event's end (`''` before any `id:` field). */
  lastEventId = '';
  // The event's data so far as UTF-8, its lines joined by LF, in a buffer that grows by
  // doubling up to the bound: a line costs what it is counted, so a flood of empty `data:`
  // lines (one byte each, the LF) holds at most the bound. (A string a line would cost an
  // array slot each, at least: ten times the byte counted.) Decoded once, when the event ends.
  #data = null;
  #dataBytes = 0;
  #hasData = false;
  /** Bytes the line search has looked at so far. */
  examined = 0;

  /**
   * @param {{ maxEvent?: number, lastEventId?: string }} [options] `lastEventId`: the id
   *   an earlier connection's events ended with, kept until an `id:` field changes it
   */
  constructor({ maxEvent = DEFAULT_MAX_EVENT, lastEventId = '' } = {}) {
    if (!Number.isSafeInteger(maxEvent) || maxEvent < 1) {
      throw new TypeError(`maxEvent must be a positive integer of bytes, found ${maxEvent}`);
    }
    if (typeof lastEventId !== 'string') throw new TypeError('lastEventId must be a string');
    this.#max = maxEvent;
    this.#idBuffer = lastEventId;
    this.lastEventId = lastEventId;
  }

  #tooLarge() {
    return new StreamEventError('TooLarge', `an event is larger than ${this.#max} bytes`, { max: this.#max });
  }

  /**
   * Adds bytes read from the stream; returns the events they complete, in order.
   * @param {Uint8Array} bytes
   * @returns {Array<{ name: string, data: string, id: string }>}
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
        if (this.#lineBytes + n - i > this.#max) throw this.#tooLarge();
        this.#keep(bytes.subarray(i));
        break;
      }
      const length = this.#lineBytes + end - i;
      if (length > this.#max) throw this.#tooLarge();
      let line = bytes.subarray(i, end);
      // A line begun in an earlier chunk is the parser's own, not a view of the caller's bytes.
      const owned = this.#lineBuffer !== null;
      if (owned) {
        this.#keep(line);
        line = this.#lineBuffer.subarray(0, length);
        this.#lineBuffer = null;
        this.#lineBytes = 0;
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
   * Copies `bytes` to the end of the unfinished line, growing its buffer by doubling (never
   * past the bound, which the caller has checked the line's length against): each byte is
   * copied about twice however the line is chunked, and the buffer is at most twice the line.
   */
  #keep(bytes) {
    const length = this.#lineBytes + bytes.length;
    const held = this.#lineBuffer === null ? 0 : this.#lineBuffer.length;
    if (length > held) {
      const grown = new Uint8Array(Math.min(this.#max, Math.max(length, 2 * held, 64)));
      if (this.#lineBytes > 0) grown.set(this.#lineBuffer.subarray(0, this.#lineBytes));
      this.#lineBuffer = grown;
    }
    this.#lineBuffer.set(bytes, this.#lineBytes);
    this.#lineBytes = length;
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
      this.lastEventId = this.#idBuffer;
      if (this.#hasData) {
        let data = '';
        if (this.#dataBytes > 0) {
          try {
            data = this.#utf8.decode(this.#data.subarray(0, this.#dataBytes));
          } catch {
            throw new StreamEventError('NotUtf8', 'an event line is not UTF-8');
          }
        }
        event = { name: this.#name || 'message', data, id: this.lastEventId };
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
    if (field === 'event' || field === 'id') {
      const raw = colon < 0 ? '' : line.slice(colon + 1);
      const value = raw.startsWith(' ') ? raw.slice(1) : raw;
      if (field === 'event') this.#name = value;
      else if (!value.includes('\0')) this.#idBuffer = value;
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
