// Uses every export of react.d.ts as an app would; `tsc -p test-react/tsconfig.json` checks it
// (types.test.mjs runs it). The @ts-expect-error lines must be errors.

import { createElement } from 'react';
import type { Follower } from 'chord-replica';
import type { LaneView, Status } from '../../demo/src/agent_lane/lane.js';
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

// A typed store: its follower, replica and `follow` options carry the value's type, and it is
// still an untyped store (a LaneView is an unknown).
const typed = createChordStore<LaneView>('/streams/lanes/main', {
  onEvent: (e) => void (e.type === 'batch' && e.value?.usage.outputTokens),
});
const follower: Follower<LaneView> | null = typed.follower;
const followed: Status | undefined = typed.follower?.replica.value?.status;
typed.follower?.subscribe((l) => l?.transcript.length ?? 0, (n: number) => void n);
const untyped: ChordStore = typed;
const initial = createChordStore('/streams/lanes/main', { initialValue: { status: 'idle' as Status, count: 0 } });
const fromInitial: number | undefined = initial.getValue()?.count;
void [follower, followed, untyped, fromInitial];

export function TypedHooks() {
  // Each hook infers the value's type from the store, with no cast.
  const tokens = useChord(typed, (l) => l?.usage.outputTokens ?? 0);
  const count: number = tokens;
  const whole = useChord(typed);
  const status: Status | undefined = whole?.status;
  const sameStatus: LaneView | undefined = useChord(typed, undefined, { equals: (a, b) => a?.status === b?.status });
  const held = useChordFollow(typed);
  const heldStatus: Status | undefined = held.getValue()?.status;
  const connected: boolean = useChordStatus(typed, (s) => s.connected);
  // A URL has no type: the selector's parameter gives the hook its value's type.
  const byUrl: Status | undefined = useChord('/streams/lanes/main', (l: LaneView | undefined) => l?.status);
  // The provider's store: the selector's parameter says what the provider holds.
  const fromProvider: number = useChord((l: LaneView | undefined) => l?.transcript.length ?? 0);
  // @ts-expect-error: the selected slice is a number, not a string
  const wrongSlice: string = useChord(typed, (l) => l?.usage.outputTokens ?? 0);
  // @ts-expect-error: the JSON's names are serde's (`outputTokens`), not Rust's
  useChord(typed, (l) => l?.usage.output_tokens);
  // @ts-expect-error: the whole value is a LaneView, not a number
  const wrongWhole: number | undefined = useChord(typed);
  // @ts-expect-error: the followed value is a LaneView, whose status is not a number
  const wrongFollowed: number | undefined = useChordFollow(typed).follower?.replica.value?.status;
  // @ts-expect-error: equals compares slices, numbers here
  useChord(typed, (l) => l?.usage.outputTokens ?? 0, { equals: (a: string, b: string) => a === b });
  void [count, status, sameStatus, heldStatus, connected, byUrl, fromProvider, wrongSlice, wrongWhole, wrongFollowed];
  return createElement('p', null, String(tokens));
}

export const typedApp = createElement(ChordProvider, { store: typed }, createElement(TypedHooks));

// @ts-expect-error: initialValue is a LaneView
createChordStore<LaneView>('/s', { initialValue: { status: 'idle' } });
// @ts-expect-error: a batch event's value is a LaneView, which has no `answer`
createChordStore<LaneView>('/s', { onEvent: (e) => void (e.type === 'batch' && e.value?.answer) });
// @ts-expect-error: a store's URL is a string or a URL
createChordStore(42);
// @ts-expect-error: the store makes its own replica
createChordStore('/s', { replica: undefined as never as object });
