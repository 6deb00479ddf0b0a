// CopilotKit's runtime in front of chord's AG-UI example agent, and the CopilotKit page that
// renders it, for chord/tests/ag_ui_copilotkit.rs:
//
//   node js/test-copilotkit/server.mjs CHORD_URL [CUT]
//
// The runtime (`@copilotkit/runtime`'s CopilotRuntime, served by its node HTTP endpoint at
// /api/copilotkit) has one agent, `chord`: chord-replica/ag-ui's ResumableHttpAgent on
// CHORD_URL, through a TCP proxy that, given CUT, cuts the first connection after CUT bytes of
// chord's answer, so that the agent resumes the run (the runtime's side of the cut is the one
// that can: see js/README.md). GET / is the page (page.jsx, bundled in memory with esbuild
// when this starts), GET /report what the agent sent to chord: each request's threadId, runId
// and Last-Event-ID, and the proxy's connections. Prints one JSON line, {"url": ...}, once it
// listens on 127.0.0.1 (any free port).

import http from 'node:http';
import { fileURLToPath } from 'node:url';

import { CopilotRuntime, ExperimentalEmptyAdapter, copilotRuntimeNodeHttpEndpoint } from '@copilotkit/runtime';
import { ResumableHttpAgent } from 'chord-replica/ag-ui';
import { build, stop } from 'esbuild';

import { proxy } from '../test-ag-ui/shared.mjs';

const [chordUrl, cutArg] = process.argv.slice(2);
if (!chordUrl) {
  console.error('usage: node server.mjs CHORD_URL [CUT]');
  process.exit(2);
}
const cut = cutArg === undefined ? undefined : Number(cutArg);

const page = await build({
  entryPoints: [fileURLToPath(new URL('page.jsx', import.meta.url))],
  bundle: true,
  write: false,
  format: 'esm',
  jsx: 'automatic',
  // CopilotKit's stylesheets (and the fonts they name) are left out: the page draws no chat.
  loader: { '.css': 'empty' },
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
});
const bundle = page.outputFiles[0].contents;
// esbuild's service process is not needed again: it would outlive this one when killed.
await stop();

const link = await proxy(new URL(chordUrl), cut === undefined ? [] : [{ cut }]);
/** What the agent sent to chord, in order. */
const requests = [];
const agent = new ResumableHttpAgent({
  url: link.url,
  reconnect: { backoffMin: 50, backoffMax: 500 },
  fetch(input, init) {
    const body = JSON.parse(init.body);
    requests.push({
      threadId: body.threadId,
      runId: body.runId,
      lastEventId: new Headers(init.headers).get('last-event-id') ?? '',
    });
    return fetch(input, init);
  },
});
const runtime = new CopilotRuntime({ agents: { chord: agent } });
const endpoint = copilotRuntimeNodeHttpEndpoint({
  endpoint: '/api/copilotkit',
  runtime,
  serviceAdapter: new ExperimentalEmptyAdapter(),
});

const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>chord · CopilotKit</title></head>
<body><div id="root"></div><script type="module" src="/page.js"></script></body></html>
`;

const server = http.createServer((req, res) => {
  const { pathname } = new URL(req.url, 'http://localhost');
  if (pathname.startsWith('/api/copilotkit')) {
    Promise.resolve(endpoint(req, res)).catch((error) => {
      console.error('the runtime failed:', error);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
    return;
  }
  const send = (type, body) => {
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(body);
  };
  if (req.method === 'GET' && pathname === '/') send('text/html; charset=utf-8', html);
  else if (req.method === 'GET' && pathname === '/page.js') send('text/javascript; charset=utf-8', bundle);
  else if (req.method === 'GET' && pathname === '/report') {
    const connections = link.connections.map(({ plan, passed }) => ({ plan, passed }));
    send('application/json', JSON.stringify({ requests, connections }));
  } else {
    res.writeHead(404);
    res.end();
  }
});
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/` }));
});
