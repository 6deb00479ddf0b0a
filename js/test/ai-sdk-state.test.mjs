// createChatState and stateOf (chord-replica/ai-sdk): a run's state kept from the data parts
// useChat hands to `onData`, read by `useChord` (chord-replica/react) with render counts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createElement as h } from 'react';
import TestRenderer from 'react-test-renderer';
import { createChatState, stateOf } from '../ai-sdk.mjs';
import { isChordStore, useChord, useChordStatus } from '../react.mjs';

globalThis.IS_REACT_ACT_ENVIRONMENT = true;
const { act } = TestRenderer;

const statePart = (data) => ({ type: 'data-state', id: 'state', data });
const chordPart = (batch) => ({ type: 'data-chord', data: batch, transient: true });

/** The run's state as the agent starts it (a fresh object each call). */
const initial = () => ({
  answer: '',
  steps: 0,
  sources: [{ url: 'https://a.example', title: 'A' }, { url: 'https://b.example', title: 'B' }],
  plan: { goal: 'find out', todo: ['read', 'write'] },
});

/** Records each error a state reports, instead of the console. */
function quiet() {
  const errors = [];
  return { errors, onError: (e) => errors.push(e) };
}

test('data-state sets the value; an equal or partly equal one keeps every equal part', () => {
  const state = createChatState();
  assert.equal(state.getValue(), undefined);
  state.onData(statePart(initial()));
  const first = state.getValue();
  assert.deepEqual(first, initial());
  // The value is the store's own copy, not the part's object (the SDK keeps that one).
  const part = statePart(initial());
  state.onData(part);
  assert.equal(state.getValue(), first, 'an equal state leaves the very value');
  assert.notEqual(state.getValue(), part.data);
  const changed = initial();
  changed.steps = 3;
  changed.sources[1].title = 'B2';
  state.onData(statePart(changed));
  const next = state.getValue();
  assert.notEqual(next, first);
  assert.equal(next.steps, 3);
  assert.equal(next.plan, first.plan, 'an unchanged object keeps its identity');
  assert.equal(next.plan.todo, first.plan.todo);
  assert.equal(next.sources[0], first.sources[0], 'an unchanged element keeps its identity');
  assert.notEqual(next.sources[1], first.sources[1]);
  assert.deepEqual(next.sources[1], { url: 'https://b.example', title: 'B2' });
  assert.equal(state.getStatus().stats.bases, 3);
});

test('data-chord applies the batch copy on write; listeners of unchanged parts are not called', () => {
  const state = createChatState();
  state.onData(statePart(initial()));
  const before = state.getValue();
  const heard = { answer: [], plan: [], sources: [], any: 0 };
  state.subscribe(() => heard.any++);
  state.select((s) => s.answer, (answer, previous) => heard.answer.push([answer, previous]));
  state.select((s) => s.plan, (plan) => heard.plan.push(plan));
  state.select((s) => s.sources, (sources) => heard.sources.push(sources));

  state.onData(chordPart([['a', ['answer'], 'Hé '], ['a', ['answer'], '🎉']]));
  state.onData(chordPart([['s', ['steps'], 1]]));
  const after = state.getValue();
  assert.deepEqual(after, { ...initial(), answer: 'Hé 🎉', steps: 1 });
  assert.equal(after.plan, before.plan);
  assert.equal(after.sources, before.sources);
  assert.deepEqual(heard.answer, [['Hé 🎉', '']]);
  assert.deepEqual(heard.plan, []);
  assert.deepEqual(heard.sources, []);
  assert.equal(heard.any, 2);

  // A splice into the sources and a cut of the answer's first 3 UTF-16 units ('Hé ').
  state.onData(chordPart([['p', ['sources'], 1, 1, [{ url: 'https://c.example', title: 'C' }]], ['t', ['answer'], 3]]));
  const third = state.getValue();
  assert.deepEqual(third.sources, [{ url: 'https://a.example', title: 'A' }, { url: 'https://c.example', title: 'C' }]);
  assert.equal(third.sources[0], before.sources[0]);
  assert.equal(third.answer, '🎉');
  assert.equal(heard.sources.length, 1);
  assert.deepEqual(heard.plan, []);
  // A batch that changes nothing (a delete of a missing member) calls no one.
  state.onData(chordPart([['d', ['missing']]]));
  assert.equal(state.getValue(), third);
  assert.equal(heard.any, 3);
  assert.equal(state.getStatus().stats.batches, 4);
});

test('a bad batch changes nothing, is reported in the status, and batches wait for the next data-state', () => {
  const { errors, onError } = quiet();
  const state = createChatState({ onError });
  state.onData(statePart(initial()));
  const before = state.getValue();
  let calls = 0;
  state.subscribe(() => calls++);
  // Its first op applies, its second cannot: nothing of it may show.
  assert.doesNotThrow(() => state.onData(chordPart([['a', ['answer'], 'partial'], ['a', ['steps'], 'x']])));
  assert.equal(state.getValue(), before);
  assert.equal(before.answer, '');
  assert.equal(calls, 0);
  const status = state.getStatus();
  assert.equal(status.stale, true);
  assert.equal(status.error?.name, 'ChordError');
  assert.deepEqual(status.error.path, ['steps']);
  assert.equal(status.stats.errors, 1);
  assert.equal(errors.length, 1);
  // A later batch would apply to a value it was not written for: skipped.
  state.onData(chordPart([['s', ['steps'], 2]]));
  assert.equal(state.getValue(), before);
  // Not a batch at all: skipped too, no throw.
  assert.doesNotThrow(() => state.onData(chordPart({ not: 'a batch' })));
  // The run's final data-state repairs it.
  const final = { ...initial(), answer: 'done', steps: 2 };
  state.onData(statePart(final));
  assert.deepEqual(state.getValue(), final);
  assert.equal(state.getValue().plan, before.plan);
  assert.equal(state.getStatus().stale, false);
  assert.equal(state.getStatus().error, null);
  state.onData(chordPart([['s', ['steps'], 3]]));
  assert.equal(state.getValue().steps, 3);
});

test('a data-chord before any data-state is an error, not a throw; other parts are ignored', () => {
  const { errors, onError } = quiet();
  const state = createChatState({ onError, initialValue: { answer: '' } });
  state.onData({ type: 'data-weather', data: { t: 1 } });
  state.onData({ type: 'text-delta', delta: 'x' });
  state.onData(null);
  assert.deepEqual(state.getValue(), { answer: '' });
  assert.equal(errors.length, 0);
  state.onData(chordPart([['a', ['answer'], 'x']]));
  assert.deepEqual(state.getValue(), { answer: '' });
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /before any data-state/);
  assert.equal(state.getStatus().stale, true);
  state.setValue({ answer: 'from a message' });
  state.onData(chordPart([['a', ['answer'], '!']]));
  assert.deepEqual(state.getValue(), { answer: 'from a message!' });
});

test('a throwing listener is reported; the value is applied and the other listeners run', () => {
  const { errors, onError } = quiet();
  const state = createChatState({ onError });
  const seen = [];
  state.subscribe(() => {
    throw new Error('listener');
  });
  state.subscribe(() => seen.push(state.getValue()?.n));
  assert.doesNotThrow(() => state.onData(statePart({ n: 1 })));
  assert.deepEqual(seen, [1]);
  assert.equal(errors.length, 1);
  assert.equal(errors[0].message, 'listener');
  assert.equal(state.getStatus().error, null, "a listener's error is not the state's");
});

test('stateOf reads the last data-state part of a message', () => {
  assert.equal(stateOf(undefined), undefined);
  assert.equal(stateOf({ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }), undefined);
  const message = {
    id: 't1',
    role: 'assistant',
    parts: [
      { type: 'data-state', id: 'state', data: { answer: '' } },
      { type: 'text', text: 'Hello' },
      { type: 'data-state', id: 'other', data: { answer: 'Hello' } },
    ],
  };
  assert.deepEqual(stateOf(message), { answer: 'Hello' });
});

test('useChord renders a component only when its slice changed', async () => {
  const { errors, onError } = quiet();
  const state = createChatState({ onError });
  assert.ok(isChordStore(state), 'useChord takes the chat state as a store');
  state.onData(statePart(initial()));
  const renders = { answer: 0, plan: 0, stale: 0 };
  function Answer() {
    renders.answer++;
    return h('p', null, useChord(state, (s) => s?.answer));
  }
  function Plan() {
    renders.plan++;
    const plan = useChord(state, (s) => s?.plan);
    return h('ul', null, plan.todo.map((t) => h('li', { key: t }, t)));
  }
  function Stale() {
    renders.stale++;
    return h('i', null, String(useChordStatus(state, (s) => s.stale)));
  }
  let root;
  await act(async () => {
    root = TestRenderer.create(h('div', null, h(Answer), h(Plan), h(Stale)));
  });
  assert.deepEqual(renders, { answer: 1, plan: 1, stale: 1 });
  await act(async () => {
    state.onData(chordPart([['a', ['answer'], 'Hi']]));
  });
  await act(async () => {
    state.onData(chordPart([['a', ['answer'], ' there']]));
  });
  assert.deepEqual(renders, { answer: 3, plan: 1, stale: 1 });
  assert.equal(root.root.findByType('p').children.join(''), 'Hi there');
  await act(async () => {
    state.onData(chordPart([['p', ['plan', 'todo'], 2, 0, ['ship']]]));
  });
  assert.deepEqual(renders, { answer: 3, plan: 2, stale: 1 });
  assert.deepEqual(root.root.findAllByType('li').map((li) => li.children[0]), ['read', 'write', 'ship']);
  // The run's final state, equal to what is held: nothing renders.
  await act(async () => {
    state.onData(statePart({ ...initial(), answer: 'Hi there', plan: { goal: 'find out', todo: ['read', 'write', 'ship'] } }));
  });
  assert.deepEqual(renders, { answer: 3, plan: 2, stale: 1 });
  await act(async () => {
    state.onData(chordPart([['s', ['nope', 'x'], 1]]));
  });
  assert.equal(renders.stale, 2);
  assert.equal(errors.length, 1);
  assert.equal(root.root.findByType('i').children[0], 'true');
  await act(async () => root.unmount());
});
