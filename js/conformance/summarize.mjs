// Reads vitest's JSON report of the conformance suite, prints passed/failed/skipped per group,
// and compares the run with expected.json: every test listed there must pass (`--write`
// records the tests that passed, keeping only those that also passed in the recorded runs
// before, so that a test that passes only sometimes is not listed).
//   node summarize.mjs <report.json> [--write]
import { readFileSync, writeFileSync } from 'node:fs';

//   node summarize.mjs <report.json> --no-failures   (also: no test of the suite failed)
const [reportPath, ...flags] = process.argv.slice(2);
const write = flags.find((f) => f.startsWith('--write'));
const noFailures = flags.includes('--no-failures');
const report = JSON.parse(readFileSync(reportPath, 'utf8'));
const groups = new Map();
const passing = [];
const failedNames = [];
const count = { passed: 0, failed: 0, skipped: 0 };
for (const file of report.testResults) {
  for (const t of file.assertionResults) {
    if (t.ancestorTitles[0] === 'reference server') continue;
    const status = t.status === 'passed' ? 'passed' : t.status === 'failed' ? 'failed' : 'skipped';
    const group = t.ancestorTitles[1] ?? t.ancestorTitles[0];
    const g = groups.get(group) ?? { passed: 0, failed: 0, skipped: 0 };
    g[status] += 1;
    groups.set(group, g);
    count[status] += 1;
    // fast-check's property tests draw random inputs: never listed, whatever they did.
    if (status === 'failed') failedNames.push([...t.ancestorTitles.slice(1), t.title].join(' > '));
    if (status === 'passed' && group !== 'Property-Based Tests (fast-check)') passing.push([...t.ancestorTitles.slice(1), t.title].join(' > '));
  }
}
for (const [group, g] of [...groups].sort()) {
  console.log(`${group}: ${g.passed} passed, ${g.failed} failed, ${g.skipped} skipped`);
}
const total = count.passed + count.failed + count.skipped;
console.log(`conformance: ${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped of ${total}`);
const expectedPath = new URL('./expected.json', import.meta.url);
if (write === '--write' || write === '--write-fresh') {
  let keep = passing.sort();
  if (write === '--write') {
    try {
      const before = JSON.parse(readFileSync(expectedPath, 'utf8')).passing;
      keep = keep.filter((name) => before.includes(name));
    } catch {}
  }
  writeFileSync(expectedPath, JSON.stringify({ passing: keep }, null, 2) + '\n');
  process.exit(0);
}
const expected = JSON.parse(readFileSync(expectedPath, 'utf8'));
const lost = expected.passing.filter((name) => !passing.includes(name));
let ok = true;
if (lost.length > 0) {
  console.error(`no longer passing:\n  ${lost.join('\n  ')}`);
  ok = false;
}
if (noFailures && failedNames.length > 0) {
  console.error(`failed:\n  ${failedNames.join('\n  ')}`);
  ok = false;
}
process.exit(ok ? 0 : 1);
