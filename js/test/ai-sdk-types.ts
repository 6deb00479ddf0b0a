// Uses every export of ai-sdk.mjs through its declarations (chord-replica/ai-sdk), with a
// state type as chord generates them from Rust: `tsc -p js` fails when the declarations and
// their use disagree. Not run, only type-checked. (That the types fit the AI SDK's own,
// `ai` 7.0.x, is checked where `ai` is installed: see the README's "Vercel AI SDK" section.)
import {
  ChordChatError,
  ChordChatTransport,
  ChordStreamCutError,
  createChatState,
  stateOf,
  type ChatReconnectInfo,
  type ChatState,
  type ChatStateStatus,
  type ChordBatch,
  type ChordDataPart,
  type ChordDataTypes,
  type ChordUIMessage,
  type ChordUIMessageChunk,
} from 'chord-replica/ai-sdk';
import { useChord, useChordStatus, type ChordStore } from 'chord-replica/react';

/** As `chord::typescript` writes a state's declarations. */
export interface Research {
  answer: string;
  steps: number;
  sources: Source[];
}
export interface Source {
  url: string;
  title: string;
}

const transport = new ChordChatTransport<Research>({
  api: '/api/chat',
  fetch: (input, init) => globalThis.fetch(input, init),
  headers: async () => ({ authorization: 'Bearer t' }),
  body: { model: 'small' },
  credentials: 'include',
  retry: { attempts: 5, delay: 100, maxDelay: 2000 },
  maxEvent: 1 << 20,
  onReconnect: ({ chatId, lastEventId, attempt, error }: ChatReconnectInfo) => void [chatId, lastEventId, attempt, error],
});
const replay: false = transport.resumeStreamIsReplay;
void replay;
const held: string | undefined = transport.lastEventId('c1');
void held;

async function read(): Promise<void> {
  const stream = await transport.sendMessages({
    chatId: 'c1',
    messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: new AbortController().signal,
  });
  for (const chunk of await readAll(stream)) {
    if (chunk.type === 'text-delta') console.log(chunk.delta.length);
    if (chunk.type === 'data-state') console.log(chunk.data.answer, chunk.data.sources[0]?.title);
    if (chunk.type === 'data-chord') console.log(chunk.data.length);
    if (chunk.type === 'error') console.log(chunk.errorText);
    // @ts-expect-error: a text-start has no delta
    if (chunk.type === 'text-start') console.log(chunk.delta);
  }
  const resumed: ReadableStream<ChordUIMessageChunk<Research>> | null = await transport.reconnectToStream({ chatId: 'c1' });
  void resumed;
}
void read;

async function readAll<C>(stream: ReadableStream<C>): Promise<C[]> {
  const out: C[] = [];
  const reader = stream.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(r.value);
  return out;
}

function errors(error: unknown): string {
  if (error instanceof ChordStreamCutError) return `${error.chatId} ${error.lastEventId} ${error.attempts}`;
  if (error instanceof ChordChatError) return `${error.status ?? '-'} ${error.body} ${error.url}`;
  return '';
}
void errors;
const cut: TypeError = new ChordStreamCutError('network: cut', { chatId: 'c1', lastEventId: '', attempts: 3 });
void cut;

const state: ChatState<Research> = createChatState<Research>({
  initialValue: { answer: '', steps: 0, sources: [] },
  limits: { maxDepth: 64 },
  onError: (error) => console.error(error),
});
const batch: ChordBatch = [['a', ['answer'], 'tok'], ['s', ['steps'], 1], ['p', ['sources'], 0, 0, [{ url: 'u', title: 't' }]]];
const parts: ChordDataPart<Research>[] = [
  { type: 'data-state', id: 'state', data: { answer: '', steps: 0, sources: [] } },
  { type: 'data-chord', data: batch, transient: true },
];
parts.forEach(state.onData);
state.onData({ type: 'data-weather', data: { celsius: 20 } });
state.setValue({ answer: 'x', steps: 1, sources: [] });
// @ts-expect-error: not a Research
state.setValue({ answer: 1 });
const answer: string | undefined = state.getValue()?.answer;
void answer;
const stop = state.select(
  (s) => s?.steps ?? 0,
  (steps: number, previous: number) => console.log(previous, '->', steps),
);
stop();
const status: ChatStateStatus = state.getStatus();
const stale: boolean = status.stale;
void stale;

// The chat state is a store of chord-replica/react.
const store: ChordStore<Research> = state;
void store;
export function useAnswer(): string {
  return useChord(state, (s) => s?.answer ?? '');
}
export function useStale(): boolean {
  return useChordStatus(state, (s) => (s as ChatStateStatus).stale);
}
export function useWrong(): number {
  // @ts-expect-error: the answer is a string
  return useChord(state, (s) => s?.answer ?? '');
}

// Messages: the state a message holds, typed by the message.
const message: ChordUIMessage<Research> = {
  id: 't1',
  role: 'assistant',
  parts: [
    { type: 'text', text: 'Hello', state: 'done' },
    { type: 'data-state', id: 'state', data: { answer: 'Hello', steps: 1, sources: [] } },
  ],
};
const final: Research | undefined = stateOf(message);
void final;
// @ts-expect-error: the state has no such field
void stateOf(message)?.answers;
// A message typed with the data parts by name (as the AI SDK's `UIMessage<unknown, ChordDataTypes<T>>` is).
type Parts = ChordDataTypes<Research>;
const named: { parts: Array<{ type: 'data-state'; data: Parts['state'] } | { type: 'data-chord'; data: Parts['chord'] } | { type: 'text'; text: string }> } = {
  parts: [{ type: 'text', text: 'hi' }],
};
const fromNamed: Research | undefined = stateOf(named);
void fromNamed;
const untyped: unknown = stateOf({ parts: [] as unknown[] });
void untyped;

// The AI SDK example's state, as `cargo run --example ai_sdk_chat -- --types` writes it from
// its Rust types (committed beside the example's page; a Rust test keeps it current).
import type { Research as ChatResearch } from '../../chord/examples/ai_sdk_chat/research.js';
const research: ChatState<ChatResearch> = createChatState<ChatResearch>();
export function useResearchAnswer(): string {
  return useChord(research, (r) => r?.answer ?? '');
}
export function usePlanDone(): number {
  return useChord(research, (r) => r?.plan.filter((s) => s.status === 'done').length ?? 0);
}
// @ts-expect-error: the example's state has no `sources`
useChord(research, (r) => r?.sources);
export const chatTransport = new ChordChatTransport<ChatResearch>({ api: '/api/chat' });
