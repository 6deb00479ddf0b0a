// Uses every export of react.d.ts as an app would; `tsc -p test-react/tsconfig.json` checks it
// (types.test.mjs runs it). The @ts-expect-error lines must be errors.

import { createElement } from 'react';
import type { LaneView } from '../../chord/examples/agent_lane/lane.js';
import {
  ChordProvider,
  createChordStore,
  isChordStore,
  useChord,
  useChordFollow,
  useChordStatus,
  useChordStore,
  type ChordStatus,
  type ChordStore,
} from 'chord-replica/react';

const store: ChordStore<LaneView> = createChordStore<LaneView>('/streams/lanes/main', {
  linger: 100,
  backoffMax: 1000,
  onError: (error, { stopped }) => console.log(error, stopped),
});
const other = createChordStore(new URL('http://127.0.0.1:8080/streams/lanes/main'));
const maybe: unknown = other;
if (isChordStore(maybe)) maybe.retain()();
const lane: LaneView | undefined = store.getValue();
const status: ChordStatus = store.getStatus();
const batches: number = status.stats.batches;
const connected: boolean = status.connected;
void [lane, batches, connected];

export function Transcript() {
  const transcript = useChord(store, (l) => l?.transcript ?? []);
  const texts: string[] = transcript.map((m) => m.text);
  // @ts-expect-error: a Message has no `body`
  useChord(store, (l) => l?.transcript[0].body);
  return createElement('ol', null, texts.join('\n'));
}

export function Answer() {
  const text = useChord<LaneView, string>((l) => l?.streamingMessage?.text ?? '', { equals: (a, b) => a === b });
  const whole: LaneView | undefined = useChord(store);
  const byUrl = useChord('/streams/lanes/main', (v) => v);
  const live: boolean = useChordStatus((s) => s.connected);
  const all: ChordStatus = useChordStatus(store);
  const mine: ChordStore = useChordStore();
  const held: ChordStore<LaneView> = useChordFollow(store);
  void [whole, byUrl, live, all, mine, held];
  return createElement('p', null, text);
}

export const app = createElement(
  ChordProvider,
  { store },
  createElement(Transcript),
  createElement(Answer),
);
export const byUrl = createElement(ChordProvider, { url: '/streams/lanes/main', options: { linger: 5 } });

// @ts-expect-error: a store's URL is a string or a URL
createChordStore(42);
// @ts-expect-error: the store makes its own replica
createChordStore('/s', { replica: undefined as never as object });
