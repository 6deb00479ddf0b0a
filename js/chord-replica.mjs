// chord-replica.mjs: a dependency-free chord replica (wire decoder + atomic applier) for
// browsers and Node. It follows the Rust crate's rules exactly (chord/src/validate.rs,
// wire/decoder.rs, apply.rs, error.rs); see js/README.md for where the two cannot agree.
//
// The entry: every export of the package, each from the module in src/ that does one job.
// The modules import each other by relative paths only, so Node and browsers load them
// unchanged, with no build step; a server that serves this file serves src/ beside it.
//
//   src/errors.mjs      ChordError and its messages, shared value checks
//   src/grammar.mjs     the two op grammars (decoded ops, wire ops)
//   src/batch-text.mjs  a batch's text read op by op
//   src/wire.mjs        the wire decoder and its id table
//   src/apply.mjs       the atomic applier and its limits
//   src/replica.mjs     Replica
//   src/sse.mjs         the SSE parser (EventParser) and its errors
//   src/http.mjs        stream URLs, headers and credentials, HTTP errors, the base offset
//   src/transports.mjs  sseTransport and durableStreamsTransport
//   src/follow.mjs      follow

export { ChordError, formatPath } from './src/errors.mjs';
export { MAX_PATH_SEGMENTS, RESERVED, checkOp, checkWireOp, isBase, validOp, validWireOp } from './src/grammar.mjs';
export { MAX_IDS, MAX_ID_PATH_UNITS, MAX_WIRE_NESTING, createDecoder } from './src/wire.mjs';
export { DEFAULT_LIMITS, apply } from './src/apply.mjs';
export { Replica } from './src/replica.mjs';
export { DEFAULT_MAX_EVENT, EventParser, StreamEventError, validOffset } from './src/sse.mjs';
export { BASE_OFFSET_HEADER, StreamHttpError, baseOffset } from './src/http.mjs';
export { durableStreamsTransport, sseTransport } from './src/transports.mjs';
export { follow } from './src/follow.mjs';
