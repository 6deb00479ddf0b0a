// The entry imports its modules by relative paths, so whatever serves chord-replica.mjs as a
// file must serve each module it reaches at the path a browser resolves the import to. These
// check the demo's server (demo/src/agent_lane/server.rs) and the npm package's files.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const js = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const lane = path.join(js, '../demo/src/agent_lane');

/** The files `entry` reaches by relative imports (itself excluded), relative to js/. */
function reached(entry) {
  const seen = new Set();
  const visit = (file) => {
    const text = fs.readFileSync(path.join(js, file), 'utf8');
    for (const [, spec] of text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*'([^']+)'/gm)) {
      assert.ok(spec.startsWith('./') || spec.startsWith('../'), `${file} imports ${spec}: only relative imports load unchanged everywhere`);
      const target = path.posix.join(path.posix.dirname(file), spec);
      if (!seen.has(target)) {
        seen.add(target);
        visit(target);
      }
    }
  };
  visit(entry);
  return [...seen].sort();
}

test('the entry reaches every module in src/, and only by relative imports', () => {
  const modules = reached('chord-replica.mjs');
  const files = fs.readdirSync(path.join(js, 'src')).filter((f) => f.endsWith('.mjs')).map((f) => `src/${f}`).sort();
  assert.deepEqual(modules, files);
});

test('the demo serves every module the entry reaches, beside the entry', () => {
  const server = fs.readFileSync(path.join(lane, 'server.rs'), 'utf8');
  assert.match(server, /\.route\("\/chord-replica\.mjs", /, 'the demo serves the entry at /chord-replica.mjs');
  const served = new Map(
    [...server.matchAll(/\("(\/[^"]+\.mjs)", include_str!\("([^"]+)"\)\)/g)].map(([, url, file]) => [url, file]),
  );
  for (const module of reached('chord-replica.mjs')) {
    // The entry is served at /chord-replica.mjs, so `./src/x.mjs` resolves to /src/x.mjs.
    const url = `/${module}`;
    assert.ok(served.has(url), `the demo's server does not serve ${url}, which the entry imports`);
    const included = path.join(lane, served.get(url));
    assert.equal(fs.readFileSync(included, 'utf8'), fs.readFileSync(path.join(js, module), 'utf8'), `${url} serves a file other than js/${module}`);
  }
});

test("the package's files hold every module the entry reaches", () => {
  const { files } = JSON.parse(fs.readFileSync(path.join(js, 'package.json'), 'utf8'));
  for (const module of reached('chord-replica.mjs')) {
    assert.ok(files.includes(module) || files.includes(path.posix.dirname(module)) || files.includes(`${path.posix.dirname(module)}/`), `package.json's files lacks ${module}`);
  }
});
