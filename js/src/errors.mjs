// Errors: ChordError, its kinds' messages (chord/src/error.rs) and the small value checks
// every other module shares.

export const show = (v) => (Object.is(v, -0) ? '-0' : typeof v === 'number' ? String(v) : JSON.stringify(v));

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

export const fail = (kind, info) => new ChordError(kind, info);
export const at = (e, i, path) => (e instanceof ChordError ? e.at(i, path) : e);
export const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
export const isCount = (n) => Number.isSafeInteger(n) && n >= 0 && !Object.is(n, -0);

export function jsonType(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return { boolean: 'a boolean', number: 'a number', string: 'a string', object: 'an object' }[typeof v]
    ?? `a non-JSON ${typeof v}`;
}
