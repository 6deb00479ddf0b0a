// js/README.md's React page with the official AG-UI client (its `jsx` block importing
// chord-replica/ag-ui), rendered in Node with react-test-renderer against chord's example
// agent, through a proxy that cuts the connection once mid-run: after a click on Ask the page
// must show the producer's plan and tools and the whole answer, and no error.
// Driven by chord/tests/ag_ui_clients.rs, which starts the example:
//   CHORD_AG_UI_ANSWER='...' node js/test-ag-ui/react-page.mjs http://127.0.0.1:PORT/
// Prints one JSON line (what the page showed) and exits 0, or says what failed and exits 1.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import esbuild from 'esbuild';
import TestRenderer from 'react-test-renderer';
import { createElement } from 'react';

import { getJson, proxy } from './shared.mjs';

const [url] = process.argv.slice(2);
const answer = process.env.CHORD_AG_UI_ANSWER;
assert.ok(url && answer, 'usage: CHORD_AG_UI_ANSWER=... node react-page.mjs URL');

/** The address the README's page uses, replaced with the proxy's. */
const README_ADDRESS = 'http://127.0.0.1:8788/';

const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
const blocks = [...readme.matchAll(/^```jsx\n([\s\S]*?)^```$/gm)].map((m) => m[1]).filter((b) => b.includes("'chord-replica/ag-ui'"));
assert.equal(blocks.length, 1, 'js/README.md has one jsx block importing chord-replica/ag-ui');
assert.ok(blocks[0].includes(README_ADDRESS), `the page does not use ${README_ADDRESS}`);
assert.ok(blocks[0].includes('export function AgentPage'), 'the page exports no AgentPage');

// One cut mid-run (after about half of an answer's bytes), then straight through.
const cutting = await proxy(new URL(url), [{ cut: 2500 }]);
const { code } = await esbuild.transform(blocks[0].replace(README_ADDRESS, cutting.url), {
  loader: 'jsx',
  jsx: 'automatic',
  format: 'esm',
});
// The page's imports, resolved from this package as an app resolves them from its own.
const resolved = code.replace(/from "([^"]+)"/g, (_, specifier) => `from ${JSON.stringify(import.meta.resolve(specifier))}`);
const { AgentPage } = await import(`data:text/javascript,${encodeURIComponent(resolved)}`);

globalThis.IS_REACT_ACT_ENVIRONMENT = true;
const { act } = TestRenderer;
const errors = [];
const consoleError = console.error;
console.error = (...args) => {
  if (String(args[0]).startsWith('react-test-renderer is deprecated')) return;
  errors.push(args.map(String).join(' '));
  consoleError(...args);
};

let page;
await act(async () => {
  page = TestRenderer.create(createElement(AgentPage));
});
const text = (node) => (typeof node === 'string' ? node : (node.children ?? []).map(text).join(''));
const button = page.root.findByType('button');
assert.equal(text(button), 'Ask');
await act(async () => {
  button.props.onClick();
});
const deadline = Date.now() + 60_000;
for (;;) {
  const paragraphs = page.root.findAllByType('p').map(text);
  if (!page.root.findByType('button').props.disabled && paragraphs.length > 0) break;
  assert.ok(Date.now() < deadline, `the page never finished: ${JSON.stringify(page.toJSON())}`);
  await act(() => new Promise((resolve) => setTimeout(resolve, 20)));
}
cutting.server.close();

const items = page.root.findAllByType('li').map(text);
const paragraphs = page.root.findAllByType('p').map(text);
assert.deepEqual(paragraphs, [answer], 'the page shows another answer (or an error)');
assert.equal(page.root.findAllByProps({ role: 'alert' }).length, 0);
assert.deepEqual(errors, []);
assert.equal(cutting.connections.length, 2, 'the connection was not cut and resumed');
// What the page shows of the state is the producer's: the run's ids are in the POST's body.
const request = cutting.connections[0].request;
const { threadId, runId } = JSON.parse(request.slice(request.indexOf('\r\n\r\n') + 4));
const state = await getJson(new URL(`runs/${encodeURIComponent(threadId)}/${encodeURIComponent(runId)}/state`, url));
assert.deepEqual(items, [
  ...state.plan.map((step) => `${step.title}: ${step.status}`),
  ...state.tools.map((tool) => `${tool.name}: ${tool.output}`),
]);
assert.ok(state.plan.every((step) => step.status === 'done'), JSON.stringify(state.plan));
process.stdout.write(`${JSON.stringify({ items, answer: paragraphs[0], connections: cutting.connections.length })}\n`);
process.exit(0);
