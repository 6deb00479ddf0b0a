// The wire decoder (chord/src/wire/decoder.rs): a stream's id table, short forms and `#`
// definitions, decoded into ops.

import { ChordError, at, fail } from './errors.mjs';
import { checkWireOp, eachOp, nonEmpty } from './grammar.mjs';
import { eachElement, parseJson } from './batch-text.mjs';

/**
 * Ids a stream may use, `0..MAX_IDS`, and the most key text (UTF-16 code units over all of its
 * keys) a path with an id may hold: the Rust encoder's rule, so a decoder's table stays
 * bounded whatever a stream sends. A definition beyond either is refused.
 */
export const MAX_IDS = 1024;
export const MAX_ID_PATH_UNITS = 256;

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
 * {@link MAX_WIRE_NESTING} or more. One pass over the parsed tree, depth first, holding one
 * frame per open container: at most `MAX_WIRE_NESTING` (a hostile batch cannot overflow the
 * stack), however many ops the batch has. `outer` is the number of
 * containers around `value` (0 for a whole batch, 1 for one of its ops), so that an op
 * checked on its own is refused exactly where its batch would be.
 */
export function checkWireJson(value, outer = 0) {
  if (typeof value !== 'object' || value === null) checkScalar(value);
  else checkContainer(value, outer, 1);
}

/**
 * Checks the members or elements of `node`, the `open`-th container from the top, depth
 * first. Recursive: `open` never passes {@link MAX_WIRE_NESTING}, so neither does the stack.
 */
function checkContainer(node, outer, open) {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const v = node[i];
      if (typeof v === 'object' && v !== null) checkNested(v, outer, open);
      else checkScalar(v);
    }
  } else {
    const keys = Object.keys(node);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (!key.isWellFormed()) throw fail('Json', { reason: 'a key holds a lone surrogate' });
      const v = node[key];
      if (typeof v === 'object' && v !== null) checkNested(v, outer, open);
      else checkScalar(v);
    }
  }
}

function checkNested(v, outer, open) {
  if (outer + open + 1 >= MAX_WIRE_NESTING) {
    throw fail('Json', { reason: `recursion limit exceeded: more than ${MAX_WIRE_NESTING - 1} nested arrays and objects` });
  }
  checkContainer(v, outer, open + 1);
}

function checkScalar(v) {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw fail('Json', { reason: `number out of range (${v})` });
  } else if (typeof v === 'string' && !v.isWellFormed()) {
    throw fail('Json', { reason: 'a string holds a lone surrogate' });
  }
}

/** A checked wire path as decoded ops hold it: copied once, frozen, then shared by every use. */
const shared = (path) => Object.freeze(path.slice());

/**
 * Decodes a wire batch the caller parsed itself and holds nowhere else (the text of
 * `decodeText`, each op `Replica#applyWireText` parsed, the events `sseTransport` parsed):
 * it is decoded in place, so that the decoded batch costs little beyond `JSON.parse`'s tree.
 */
export const IN_PLACE = Symbol('decode in place');

/** A decoder's op-by-op interface, for a batch streamed from its text. */
export const STREAM = Symbol('decode op by op');

/** A decoder's id table as it is now, which the decoder will not change (see `decoderWith`). */
export const IDS = Symbol('the id table');

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
   * `kept`: whether the decoded ops are kept or given to anyone; when they are not (a
   * streamed batch nobody reads the ops of), an inline path is used as parsed, not frozen,
   * as nothing holds it after the batch. A definition's path is frozen either way: the id
   * table holds it for later batches.
   */
  function batchDecoder(inPlace, kept = true) {
    const define = inPlace ? Object.freeze : shared;
    const own = !inPlace ? shared : kept ? Object.freeze : null;
    let previous = null;
    const resolve = (hasPath, ref) => {
      let path = previous;
      if (hasPath) path = typeof ref === 'number' ? ids.get(ref) : own === null ? ref : own(ref);
      if (!path) throw hasPath ? fail('UnknownId', { id: ref }) : fail('NoPreviousPath');
      previous = path;
      return path;
    };
    return (w) => {
      const verb = w[0];
      const n = w.length - 1;
      if (verb === '#') {
        if (w[1] >= MAX_IDS) throw fail('LimitExceeded', { limit: 'path id', max: MAX_IDS - 1 });
        let units = 0;
        for (const seg of w[2]) if (typeof seg === 'string') units += seg.length;
        if (units > MAX_ID_PATH_UNITS) {
          throw fail('LimitExceeded', { limit: 'UTF-16 units of key text in a path with an id', max: MAX_ID_PATH_UNITS });
        }
        writableIds().set(w[1], define(w[2]));
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
      // A full form (a path in place 1) is rewritten in place; a short form gets a new op.
      if (verb === 'p') {
        const full = n === 4;
        const path = resolve(full, w[1]);
        if (full && inPlace) {
          w[1] = path;
          return w;
        }
        return ['p', path, w[n - 2], w[n - 1], w[n]];
      }
      if (verb === 'd') {
        const full = n === 1;
        const path = nonEmpty(resolve(full, w[1]), 'd');
        if (full && inPlace) {
          w[1] = path;
          return w;
        }
        return ['d', path];
      }
      const full = n === 2;
      const path = nonEmpty(resolve(full, w[1]), verb);
      if (full && inPlace) {
        w[1] = path;
        return w;
      }
      return [verb, path, w[n]];
    };
  }

  /**
   * Decodes `batch`: into a new array of new ops, or, `inPlace`, into the batch itself: an
   * op of full form becomes the decoded op (its path array frozen where it is), a short
   * form is replaced by a new op, and `#` definitions are dropped.
   */
  function decodeBatch(batch, inPlace, texts) {
    checkWireJson(batch);
    // With the ops' texts, the grammar also sees how their numbers were written.
    eachOp(batch, texts ? (op, i) => checkWireOp(op, texts[i]) : (op) => checkWireOp(op));
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
        // Parsed op by op, each op's text kept for the grammar (see `checkWireOp`).
        let batch = [];
        const texts = [];
        let isArray;
        try {
          isArray = eachElement(textBatch, (op, i, text) => {
            batch.push(op);
            texts.push(text);
          });
          if (!isArray) batch = parseJson(textBatch);
        } catch (e) {
          throw e instanceof ChordError ? e : fail('Json', { reason: e.message });
        }
        return decodeBatch(batch, true, isArray ? texts : undefined);
      }),
    [IN_PLACE]: (batch) => guarded(() => decodeBatch(batch, true)),
    /**
     * @internal One batch decoded op by op, as a Replica streams a batch's text: `decode`
     * takes each op (checked, parsed by the caller and held nowhere else); `poison` marks
     * the decoder failed, as a failed batch does.
     */
    [STREAM]: (kept = true) => {
      if (poisoned) throw fail('DecoderPoisoned');
      return {
        decode: batchDecoder(true, kept),
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
export function decodeAgain(text, ids) {
  const decode = decoderWith(ids, true)[STREAM]().decode;
  const ops = [];
  eachElement(text, (w) => {
    const op = decode(w);
    if (op !== null) ops.push(op);
  });
  return ops;
}
