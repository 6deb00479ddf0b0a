// What one batch costs to apply from its text, JSON.parse included: chord's replica
// (`Replica#applyWireText`), fast-json-patch's in-place apply and Immer's `produce`, counted
// in instructions by callgrind, and the heap a replica holds for a string built by many
// small appends. Writes the table into js/PERFORMANCE.md between the marker comments.
//
//   node js/tools/apply-cost.mjs [--runs 3] [--baseline <git rev>] [--write] [--heap-batches 1000000]
//
// With `--baseline <rev>`, chord's replica as it was at <rev> (its js/src and
// js/chord-replica.mjs, read with `git archive` into a temporary directory that is removed
// afterwards) is measured too, as the "before" rows. `--write` replaces the section of
// js/PERFORMANCE.md between `<!-- apply-cost:begin -->` and `<!-- apply-cost:end -->`.
// Needs valgrind; about 20 minutes with a baseline and 3 runs on a 2-core machine.
//
// The parts it runs, each in a fresh `node` (what the driver starts):
//   node js/tools/apply-cost.mjs run <impl> <shape> <batches> [chord dir]
//     applies <batches> batches of <shape> with <impl> (chord, fjp, immer) and checks the result
//   node js/tools/apply-cost.mjs heap <batches> [chord dir]
//     appends 4 bytes per batch to one string, <batches> times, and prints the heap held
//
// Instructions per batch: the same run with N1 and N2 batches under
// `valgrind --tool=callgrind`, (I(N2) - I(N1)) / (N2 - N1), so the start (node, the
// modules, building the document) cancels out. Each batch is applied from its text: chord's
// wire batch (inline paths), parsed by the replica; the same ops parsed with `JSON.parse`
// and applied by an Immer recipe; the same change as a JSON Patch op parsed with
// `JSON.parse` and applied by `applyPatch(doc, ops, false, true)` (no validation, in place,
// so without structural sharing: the document is modified).

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const jsDir = join(here, '..');
const self = fileURLToPath(import.meta.url);

// ---------------------------------------------------------------------------------------
// The shapes: a document, and the batch texts of each implementation.

const DEPTH = 12; // path segments of the deep shape's `s`
const WIDE = 10_000; // transcript entries of the wide shape
const WIDE_AT = 5_000; // the entry it changes
const MESSAGES = 16; // strings the append shape appends to, in turn
const TEXT_BYTES = 4096; // each one's length at the start
const APPEND = 'abcd'; // what each batch appends
const CYCLE = 64; // distinct values the `s` shapes write, in turn: each batch changes the value

/** JSON Pointer of a path. */
const pointer = (path) => path.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** A filler text of `n` one-byte characters. */
const filler = (n, seed) => {
  let s = '';
  while (s.length < n) s += `${seed} lorem ipsum dolor sit amet, `;
  return s.slice(0, n);
};

export const SHAPES = {
  // One `s` of a number 12 segments deep; every level has siblings the batch does not change.
  deep: {
    doc() {
      let node = { v: 0, w: 'unchanged', sib: { x: 1, y: [1, 2, 3] } };
      for (let i = DEPTH - 2; i >= 0; i--) node = { [`k${i}`]: node, n: i, name: `level ${i}`, sib: { x: i, y: [i] } };
      return node;
    },
    path: (i) => [...Array.from({ length: DEPTH - 1 }, (_, j) => `k${j}`), 'v'],
    value: (i) => (i % CYCLE) + 1,
    check(doc, i) {
      let node = doc;
      for (let j = 0; j < DEPTH - 1; j++) node = node[`k${j}`];
      return node.v === ((i - 1) % CYCLE) + 1;
    },
  },
  // A 4-byte `a` to a string of 4 KB: 16 of them (an entry's `text` each), in turn, so that
  // each stays about 4 KB however many batches run.
  append: {
    doc() {
      const messages = [];
      for (let k = 0; k < MESSAGES; k++) messages.push({ role: 'assistant', text: filler(TEXT_BYTES, k), done: false });
      return { title: 'lane', messages, usage: { input: 10, output: 20 } };
    },
    path: (i) => ['messages', i % MESSAGES, 'text'],
    check(doc, n) {
      return doc.messages.every((m, k) => m.text.length === TEXT_BYTES + APPEND.length * Math.floor((n - k + MESSAGES - 1) / MESSAGES));
    },
  },
  // One `s` of one entry's field in a transcript of 10,000 entries.
  wide: {
    doc() {
      const transcript = [];
      for (let k = 0; k < WIDE; k++) transcript.push({ role: k % 2 ? 'user' : 'assistant', text: `message ${k}`, n: 0 });
      return { title: 'lane', transcript, status: 'running' };
    },
    path: () => ['transcript', WIDE_AT, 'n'],
    value: (i) => (i % CYCLE) + 1,
    check: (doc, i) => doc.transcript[WIDE_AT].n === ((i - 1) % CYCLE) + 1,
  },
};

/**
 * The texts of batch `i` as a function, for each implementation: chord's wire batch, the
 * same ops (for Immer) and a JSON Patch. The `s` shapes cycle through `CYCLE` texts made
 * up front; the append's JSON Patch carries the whole new string, so it is made per batch
 * from the string the patch will replace (which is what a JSON Patch producer sends).
 */
function texts(shape, impl) {
  const s = SHAPES[shape];
  // Each text a flat string, as one decoded from the network is (`JSON.stringify` makes a rope).
  const flat = (t) => JSON.parse(JSON.stringify(t));
  if (shape === 'append') {
    if (impl !== 'fjp') {
      const list = Array.from({ length: MESSAGES }, (_, i) => flat(JSON.stringify([['a', s.path(i), APPEND]])));
      return (i) => list[i % MESSAGES];
    }
    return null; // made from the document (see `run`)
  }
  const list = Array.from({ length: CYCLE }, (_, i) =>
    flat(impl === 'fjp'
      ? JSON.stringify([{ op: 'replace', path: pointer(s.path(i)), value: s.value(i) }])
      : JSON.stringify([['s', s.path(i), s.value(i)]])));
  return (i) => list[i % CYCLE];
}

/** An Immer recipe applying chord's decoded ops (full paths) to a draft. */
function immerRecipe(ops) {
  return (draft) => {
    for (const op of ops) {
      const path = op[1];
      let node = draft;
      for (let j = 0; j < path.length - 1; j++) node = node[path[j]];
      const last = path[path.length - 1];
      switch (op[0]) {
        case 's':
          node[last] = op[2];
          break;
        case 'a':
          node[last] += op[2];
          break;
        default:
          throw new Error(`no such op in these shapes: ${op[0]}`);
      }
    }
  };
}

async function run(impl, shape, batches, chordDir) {
  const s = SHAPES[shape];
  const text = texts(shape, impl);
  let doc = s.doc();
  let step;
  if (impl === 'chord') {
    const { Replica } = await import(pathToFileURL(join(chordDir ?? jsDir, 'chord-replica.mjs')).href);
    const replica = new Replica();
    replica.applyWireText(JSON.stringify([['r', doc]]));
    step = (i) => replica.applyWireText(text(i));
    const result = () => replica.value;
    for (let i = 0; i < batches; i++) step(i);
    doc = result();
  } else if (impl === 'immer') {
    const immer = await import(pathToFileURL(join(jsDir, process.env.IMMER_BUILD ?? 'node_modules/immer/dist/immer.production.mjs')).href);
    immer.setAutoFreeze(false);
    const { produce } = immer;
    for (let i = 0; i < batches; i++) doc = produce(doc, immerRecipe(JSON.parse(text(i))));
  } else if (impl === 'fjp') {
    const { applyPatch } = await import(pathToFileURL(join(jsDir, 'node_modules/fast-json-patch/index.mjs')).href);
    if (shape === 'append') {
      const parts = Array.from({ length: MESSAGES }, (_, k) => [`[{"op":"replace","path":"${pointer(s.path(k))}","value":"`, '"}]']);
      for (let i = 0; i < batches; i++) {
        const k = i % MESSAGES;
        // The text a JSON Patch producer sends: the whole new string (no escapes in it).
        const t = parts[k][0] + doc.messages[k].text + APPEND + parts[k][1];
        doc = applyPatch(doc, JSON.parse(t), false, true).newDocument;
      }
    } else {
      for (let i = 0; i < batches; i++) doc = applyPatch(doc, JSON.parse(text(i)), false, true).newDocument;
    }
  } else {
    throw new Error(`unknown implementation ${impl}`);
  }
  if (!s.check(doc, batches)) throw new Error(`${impl} ${shape}: the document is not what ${batches} batches make`);
}

/** The heap held by a replica after `batches` batches, each appending 4 bytes to one string. */
async function heap(batches, chordDir) {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  const live = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  const { Replica } = await import(pathToFileURL(join(chordDir ?? jsDir, 'chord-replica.mjs')).href);
  const replica = new Replica();
  replica.applyWireText('[["r",{"answer":""}]]');
  const text = `[["a",["answer"],"${APPEND}"]]`;
  const before = live();
  for (let i = 0; i < batches; i++) replica.applyWireText(text);
  const after = live();
  const length = replica.value.answer.length;
  if (length !== batches * APPEND.length) throw new Error('the string is not what the appends make');
  console.log(JSON.stringify({ batches, textBytes: length, heldBytes: after - before }));
}

// ---------------------------------------------------------------------------------------
// The driver.

const IMPLS = ['chord', 'fjp', 'immer'];
const N1 = 2_000;
const N2 = 12_000;

function instructions(args) {
  const out = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, ...args], {
    encoding: 'utf8',
    env: { ...process.env, NODE_ENV: 'production' },
  });
  const m = /Collected : (\d+)/.exec(out.stderr);
  if (out.status !== 0 || m === null) throw new Error(`callgrind ${args.join(' ')} failed:\n${out.stderr.slice(-2000)}`);
  return Number(m[1]);
}

function perBatch(impl, shape, dir) {
  const extra = dir ? [dir] : [];
  const i1 = instructions([self, 'run', impl, shape, String(N1), ...extra]);
  const i2 = instructions([self, 'run', impl, shape, String(N2), ...extra]);
  return (i2 - i1) / (N2 - N1);
}

function heapRun(batches, dir) {
  const out = execFileSync(process.execPath, [self, 'heap', String(batches), ...(dir ? [dir] : [])], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
}

const k = (n) => `${(n / 1000).toFixed(1)}k`;
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function drive(argv) {
  const opt = (name, dflt) => {
    const i = argv.indexOf(name);
    return i < 0 ? dflt : argv[i + 1];
  };
  const runs = Number(opt('--runs', '3'));
  const baseline = opt('--baseline', null);
  const heapBatches = Number(opt('--heap-batches', '1000000'));
  const write = argv.includes('--write');

  let baseDir = null;
  let baseRev = null;
  if (baseline !== null) {
    baseRev = execFileSync('git', ['rev-parse', '--short', baseline], { cwd: jsDir, encoding: 'utf8' }).trim();
    baseDir = mkdtempSync(join(tmpdir(), 'apply-cost-'));
    const top = execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: jsDir, encoding: 'utf8' }).trim();
    const tar = execFileSync('git', ['archive', baseRev, 'js/src', 'js/chord-replica.mjs'], { cwd: top, maxBuffer: 1 << 28 });
    execFileSync('tar', ['-x', '-C', baseDir, '--strip-components=1'], { input: tar });
  }
  try {
    const rows = [];
    const impls = [...(baseDir ? [['chord-before', 'chord', baseDir]] : []), ...IMPLS.map((i) => [i, i, null])];
    for (const shape of Object.keys(SHAPES)) {
      for (const [label, impl, dir] of impls) {
        const xs = [];
        for (let r = 0; r < runs; r++) {
          xs.push(perBatch(impl, shape, dir));
          console.error(`apply-cost: ${shape} ${label} run ${r + 1}: ${Math.round(xs[r])} instructions per batch`);
        }
        rows.push({ shape, label, median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
      }
    }
    const heaps = [];
    if (baseDir) heaps.push(['before', heapRun(heapBatches, baseDir)]);
    heaps.push(['now', heapRun(heapBatches, null)]);
    for (const [label, h] of heaps) console.error(`apply-cost: heap ${label}: ${JSON.stringify(h)}`);

    const section = render({ rows, heaps, runs, baseRev, heapBatches, argv });
    console.log(section);
    if (write) {
      const file = join(jsDir, 'PERFORMANCE.md');
      const old = readFileSync(file, 'utf8');
      const begin = '<!-- apply-cost:begin -->';
      const end = '<!-- apply-cost:end -->';
      const a = old.indexOf(begin);
      const b = old.indexOf(end);
      const block = `${begin}\n${section}\n${end}`;
      writeFileSync(file, a >= 0 && b > a ? old.slice(0, a) + block + old.slice(b + end.length) : `${old.trimEnd()}\n\n${block}\n`);
      console.error(`apply-cost: wrote ${file}`);
    }
  } finally {
    if (baseDir) rmSync(baseDir, { recursive: true, force: true });
  }
}

function render({ rows, heaps, runs, baseRev, heapBatches, argv }) {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown';
  const nproc = execFileSync('nproc', { encoding: 'utf8' }).trim();
  const valgrind = execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim();
  const get = (shape, label) => rows.find((r) => r.shape === shape && r.label === label);
  const cell = (r) => (r ? `${k(r.median)} (${k(r.min)}–${k(r.max)})` : '–');
  const lines = [];
  lines.push('## What a batch costs to apply');
  lines.push('');
  lines.push('Written by `js/tools/apply-cost.mjs`; do not edit between the markers. The command:');
  lines.push('');
  lines.push('```sh');
  lines.push(`node js/tools/apply-cost.mjs ${argv.join(' ')}`.trimEnd());
  lines.push('```');
  lines.push('');
  lines.push(`Machine: ${cpu}, \`nproc\` ${nproc}; Node ${process.version}; ${valgrind}. Instructions are counted, so`);
  lines.push('the load of the machine does not change them.');
  lines.push('');
  lines.push(`Instructions per batch under callgrind, (I(${N2}) - I(${N1})) / ${N2 - N1}: each cell the median of`);
  lines.push(`${runs} runs, (min–max). Each batch is applied from its text, \`JSON.parse\` included:`);
  lines.push("**chord** is `Replica#applyWireText` of the wire batch (one op, an inline path);");
  lines.push('**fast-json-patch** 3.1.2 is `applyPatch(doc, JSON.parse(text), false, true)` of the same change');
  lines.push('as one JSON Patch `replace` (in place: the document is modified, nothing is shared or kept);');
  lines.push('**Immer** 11.2.14 (its production build, `setAutoFreeze(false)`) is `produce` with a recipe');
  lines.push("applying the same ops, parsed with `JSON.parse`. chord and Immer both leave the previous value");
  lines.push('as it was and share every part the batch did not change.');
  lines.push('');
  lines.push(`- **deep**: one \`s\` of a number, ${DEPTH} path segments deep, each level with siblings.`);
  lines.push(`- **append**: one \`a\` of 4 bytes to a string of about 4 KB (${MESSAGES} entries' \`text\`, appended to in turn,`);
  lines.push('  so each stays near 4 KB); the JSON Patch carries the whole new string, made per batch.');
  lines.push(`- **wide**: one \`s\` of a field of entry ${WIDE_AT} of a ${WIDE.toLocaleString('en-US')}-entry transcript array.`);
  lines.push('');
  const before = baseRev !== null;
  lines.push(`| shape | ${before ? `chord before (${baseRev}) | ` : ''}chord | fast-json-patch (in place) | Immer | chord / Immer | chord / fast-json-patch |`);
  lines.push(`|---|${before ? '---:|' : ''}---:|---:|---:|---:|---:|`);
  for (const shape of Object.keys(SHAPES)) {
    const c = get(shape, 'chord');
    const f = get(shape, 'fjp');
    const m = get(shape, 'immer');
    const ratio = (a, b, goal, what) => {
      const x = a.median / b.median;
      return `${x.toFixed(2)}${x > goal ? ` (over ${goal}: chord loses to ${what})` : ''}`;
    };
    lines.push(
      `| ${shape} | ${before ? `${cell(get(shape, 'chord-before'))} | ` : ''}${cell(c)} | ${cell(f)} | ${cell(m)} | ${ratio(c, m, 0.5, 'half of Immer')} | ${ratio(c, f, 3, '3x fast-json-patch')} |`,
    );
  }
  lines.push('');
  lines.push('Goals: chord at most half of Immer on every shape, and at most 3x fast-json-patch on deep');
  lines.push('(fast-json-patch modifies the document in place, which a replica whose value a UI holds cannot do).');
  lines.push('');
  lines.push(`Heap held after ${heapBatches.toLocaleString('en-US')} batches, each appending 4 bytes to one string`);
  lines.push('(`node js/tools/apply-cost.mjs heap <batches>`: `process.memoryUsage().heapUsed` after full');
  lines.push('garbage collections, less the same before the batches), over the text (one byte a character):');
  lines.push('');
  lines.push('| replica | text | heap held | per byte of text |');
  lines.push('|---|---:|---:|---:|');
  for (const [label, h] of heaps) {
    lines.push(`| ${label === 'before' ? `before (${baseRev})` : 'chord'} | ${mb(h.textBytes)} | ${mb(h.heldBytes)} | ${(h.heldBytes / h.textBytes).toFixed(2)} |`);
  }
  return lines.join('\n');
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'run') await run(rest[0], rest[1], Number(rest[2]), rest[3]);
else if (mode === 'heap') await heap(Number(rest[0] ?? 1_000_000), rest[1]);
else await drive(process.argv.slice(2));
