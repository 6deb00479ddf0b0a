// react.d.ts checked by the repository's TypeScript: test-react/types.ts uses every export
// as an app would, and its @ts-expect-error lines must be errors. js/README.md's `ts` blocks
// are type-checked too, as a reader would paste them beside the demo's generated lane.d.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const js = fileURLToPath(new URL('..', import.meta.url));

/** What the pinned tsc says about the project `tsconfig` (a path), run in `cwd`. */
function tsc(tsconfig, cwd = js) {
  return spawnSync(process.execPath, [join(js, 'node_modules/typescript/bin/tsc'), '-p', tsconfig], {
    cwd,
    encoding: 'utf8',
  });
}

test('react.d.ts type-checks against an app using every export', () => {
  const out = tsc('test-react/tsconfig.json');
  assert.equal(out.status, 0, `tsc failed:\n${out.stdout}${out.stderr}`);
});

test("js/README.md's ts blocks type-check against the declarations and the demo's lane.d.ts", () => {
  const readme = readFileSync(join(js, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.ok(blocks.length > 0, 'js/README.md has no ts block');
  // A scratch project: `./lane.js` is the demo's generated lane.d.ts, and the package's
  // entries map to this checkout's declarations (react.d.ts finds React's types beside it).
  const dir = mkdtempSync(join(tmpdir(), 'chord-readme-ts-'));
  try {
    copyFileSync(join(js, '../demo/src/agent_lane/lane.d.ts'), join(dir, 'lane.d.ts'));
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const files = blocks.map((block, i) => {
      const file = `readme-${i + 1}.ts`;
      writeFileSync(join(dir, file), block);
      return file;
    });
    const compilerOptions = {
      ...JSON.parse(readFileSync(join(js, 'test-react/tsconfig.json'), 'utf8')).compilerOptions,
      paths: {
        'chord-replica': [join(js, 'chord-replica.d.ts')],
        'chord-replica/react': [join(js, 'react.d.ts')],
      },
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files }, null, 2));
    const out = tsc(join(dir, 'tsconfig.json'), dir);
    assert.equal(out.status, 0, `tsc failed on js/README.md's ts blocks:\n${out.stdout}${out.stderr}\n${blocks.join('\n---\n')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
