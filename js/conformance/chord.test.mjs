// The official Durable Streams conformance suite (@durable-streams/server-conformance-tests,
// pinned in js/package.json) against a chord server whose URL is in CHORD_STREAMS_URL: the
// example server, or `chord serve`. Run by `npx vitest run --root conformance`
// (js/conformance/run does it all); the result is compared with expected.json there.
//
// The suite names its streams `/v1/stream/NAME`. Against `chord serve`, whose streams are
// at `/streams/NAMESPACE/KEY`, two adaptations and no other: CHORD_STREAMS_PREFIX (say
// `/streams/conformance`) replaces `/v1/stream` in the URLs and `Stream-Forked-From`
// headers the suite sends, and CHORD_STREAMS_TOKEN is sent as `Authorization: Bearer` on
// every request (the server's write token, also a read token). As a reverse proxy mapping
// the one path onto the other would, a `Location` the server answers moves back.
import { describe } from 'vitest';
import { runConformanceTests } from '@durable-streams/server-conformance-tests';

const baseUrl = process.env.CHORD_STREAMS_URL;
const prefix = process.env.CHORD_STREAMS_PREFIX;
const token = process.env.CHORD_STREAMS_TOKEN;

if (baseUrl && (prefix || token)) {
  const fetch = globalThis.fetch;
  const SUITE = '/v1/stream/';
  const moved = (path) => (prefix && path.startsWith(SUITE) ? prefix + '/' + path.slice(SUITE.length) : path);
  const back = (response) => {
    const location = response.headers.get('location');
    if (!prefix || !location) return response;
    const at = new URL(location);
    if (!at.pathname.startsWith(prefix + '/')) return response;
    at.pathname = SUITE + at.pathname.slice(prefix.length + 1);
    const headers = new Headers(response.headers);
    headers.set('location', String(at));
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };
  globalThis.fetch = (input, init = {}) => {
    let url = typeof input === 'string' || input instanceof URL ? new URL(String(input)) : new URL(input.url);
    if (url.origin === new URL(baseUrl).origin) {
      url.pathname = moved(url.pathname);
      const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
      const from = headers.get('stream-forked-from');
      if (from) headers.set('stream-forked-from', moved(from));
      if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      const sent = input instanceof Request ? fetch(new Request(url, input), { ...init, headers }) : fetch(url, { ...init, headers });
      return sent.then(back);
    }
    return fetch(input, init);
  };
}

describe.runIf(baseUrl)('chord streams_server', () => {
  runConformanceTests({ baseUrl, longPollTimeoutMs: 20_000 });
});
