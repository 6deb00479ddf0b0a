// The official Durable Streams conformance suite (@durable-streams/server-conformance-tests,
// pinned in js/package.json) against chord's example server, whose URL is in
// CHORD_STREAMS_URL. Run by `npx vitest run --root conformance` (js/conformance/run does it
// all); the result is compared with expected.json there.
import { describe } from 'vitest';
import { runConformanceTests } from '@durable-streams/server-conformance-tests';

const baseUrl = process.env.CHORD_STREAMS_URL;

describe.runIf(baseUrl)('chord streams_server', () => {
  runConformanceTests({ baseUrl, longPollTimeoutMs: 20_000 });
});
