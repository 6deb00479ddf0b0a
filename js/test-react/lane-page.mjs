// The main example's lane rendered with React and chord-replica/react, for the browser test
// (chord/tests/page_renders.rs bundles it with esbuild and serves it beside the lane's
// stream). Each component selects its slice and counts its renders in `window.__renders`;
// the replica's listeners of the same slices count their calls in `window.__listened`.

import { createElement as h, memo } from 'react';
import { createRoot } from 'react-dom/client';
import { ChordProvider, createChordStore, useChord, useChordStatus } from '../react.mjs';

const renders = { status: 0, usage: 0, connection: 0, transcript: 0, answer: 0, tools: 0 };
const chord = { batches: 0, live: false };
window.__renders = renders;
window.__chord = chord;

const store = createChordStore('/streams/lanes/main', {
  onEvent(e) {
    if (e.type === 'batch') chord.batches += 1;
    if (e.type === 'live') chord.live = e.live;
  },
  onError: (error) => console.warn('chord:', error),
});
window.__store = store;

// The replica's listeners of the same parts, each counting its calls in `window.__listened`:
// the store is held (and follows) for the page's life, so its follower is there at once.
const listened = { status: 0, usage: 0, transcript: 0, answer: 0, tools: 0 };
window.__listened = listened;
store.retain();
const parts = {
  status: (lane) => lane?.status,
  usage: (lane) => lane?.usage,
  transcript: (lane) => lane?.transcript,
  answer: (lane) => lane?.streamingMessage,
  tools: (lane) => lane?.tools,
};
for (const [part, selector] of Object.entries(parts)) {
  store.follower.subscribe(selector, () => (listened[part] += 1));
}

function Status() {
  const status = useChord((lane) => lane?.status);
  renders.status += 1;
  return h('span', { className: 'badge', id: 'status', 'data-status': status ?? '' }, status ?? '…');
}

function Usage() {
  const usage = useChord((lane) => lane?.usage);
  renders.usage += 1;
  return h('span', { className: 'muted', id: 'usage' }, `${usage?.inputTokens ?? 0} in · ${usage?.outputTokens ?? 0} out`);
}

function Connection() {
  const connected = useChordStatus((s) => s.connected);
  renders.connection += 1;
  return h('span', { className: 'muted', id: 'connection', 'data-live': String(connected) }, connected ? 'live' : 'connecting…');
}

// A row renders only when it is mounted or its entry changed (memo compares by identity,
// which copy on write keeps for unchanged entries).
const Row = memo(function Row({ message }) {
  return h('div', { className: 'message' }, h('span', { className: 'role' }, `${message.role}:`), h('span', { className: 'text' }, message.text));
});

function Transcript() {
  const transcript = useChord((lane) => lane?.transcript);
  renders.transcript += 1;
  return h('div', { id: 'transcript' }, (transcript ?? []).map((m, i) => h(Row, { key: i, message: m })));
}

function Answer() {
  const message = useChord((lane) => lane?.streamingMessage);
  renders.answer += 1;
  return h('div', { id: 'streaming', hidden: !message },
    h('div', { className: 'message' }, h('span', { className: 'role' }, message ? `${message.role}:` : ''), h('span', { className: 'text' }, message?.text ?? '')));
}

function Tools() {
  const tools = useChord((lane) => lane?.tools);
  renders.tools += 1;
  if (!tools || tools.length === 0) return h('div', { id: 'tools' }, h('p', null, 'no tool has run'));
  return h('div', { id: 'tools' }, tools.map((tool, i) =>
    h('div', { className: 'tool', key: i },
      h('div', { className: 'tool-head' }, h('strong', { className: 'name' }, tool.name),
        h('span', { className: 'exit muted' }, tool.exitCode === null || tool.exitCode === undefined ? 'running' : `exit ${tool.exitCode}`)),
      h('pre', { className: 'details muted' }, JSON.stringify(tool.details)),
      h('pre', { className: 'window output' }, tool.outputWindow))));
}

function Lane() {
  // The example page's layout (the test serves this page with its stylesheet).
  return h(ChordProvider, { store },
    h('header', null, h('h1', null, 'agent lane'), h(Status), h(Usage), h(Connection)),
    h('main', null,
      h('section', { id: 'conversation' }, h('h2', null, 'Transcript'), h(Transcript), h(Answer)),
      h('section', null, h('h2', null, 'Tools'), h(Tools))));
}

createRoot(document.getElementById('root')).render(h(Lane));
