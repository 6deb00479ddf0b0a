// The same suite against the protocol's Node reference server (@durable-streams/server, in
// memory), for comparison: `CHORD_CONFORMANCE_REFERENCE=1 npx vitest run --root conformance`.
// Skipped otherwise.
import { afterAll, beforeAll, describe } from 'vitest';
import { runConformanceTests } from '@durable-streams/server-conformance-tests';
import { DurableStreamTestServer } from '@durable-streams/server';

const run = process.env.CHORD_CONFORMANCE_REFERENCE === '1';
const server = run ? new DurableStreamTestServer({ port: 0 }) : null;
const url = run ? await server.start() : 'http://127.0.0.1:1';

describe.runIf(run)('reference server', () => {
  beforeAll(() => {});
  afterAll(() => server?.stop());
  runConformanceTests({ baseUrl: url, longPollTimeoutMs: 20_000 });
});
