// react.d.ts checked by the repository's TypeScript: test-react/types.ts uses every export
// as an app would, and its @ts-expect-error lines must be errors.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const js = fileURLToPath(new URL('..', import.meta.url));

test('react.d.ts type-checks against an app using every export', () => {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'test-react/tsconfig.json'], {
    cwd: js,
    encoding: 'utf8',
  });
  assert.equal(tsc.status, 0, `tsc failed:\n${tsc.stdout}${tsc.stderr}`);
});
