// Uses every export of ag-ui.mjs through its declarations (chord-replica/ag-ui): `tsc -p js`
// fails when the declarations and their use disagree. Not run, only type-checked.
import type { Message } from '@ag-ui/client';
import {
  agUiRunError,
  isAgUiTerminal,
  ResumableHttpAgent,
  ResumeError,
  resumableFetch,
  type ReconnectInfo,
  type ResumeOptions,
} from 'chord-replica/ag-ui';

const options: ResumeOptions = {
  retries: 5,
  backoffMin: 50,
  backoffMax: 2000,
  onReconnect: ({ lastEventId, attempt }: ReconnectInfo) => void `${lastEventId} ${attempt}`,
  isTerminal: (event) => isAgUiTerminal(event) || event.name === 'end',
  giveUp: (error: ResumeError) => (error.status === 404 ? undefined : agUiRunError(error)),
  maxEvent: 1 << 20,
};
const fetchResumable: (input: string, init?: RequestInit) => Promise<Response> = resumableFetch(options);
void fetchResumable;

type Plan = { steps: { title: string; status: 'todo' | 'done' }[] };
const agent = new ResumableHttpAgent({
  url: 'http://127.0.0.1:8788/',
  headers: { authorization: 'Bearer t' },
  initialState: { steps: [] } satisfies Plan,
  reconnect: { retries: 10, onReconnect: (info) => void info.attempt },
});
const messages: Message[] = agent.messages;
const reconnects: number = agent.reconnects;
const failure: ResumeError | undefined = agent.resumeError;
const copy: ResumableHttpAgent = agent.clone();
void [messages, reconnects, failure, copy];
agent.subscribe({ onStateChanged: ({ state }) => void (state as Plan).steps.length });
void agent.runAgent({ runId: 'r1' });
// @ts-expect-error: the reconnect options take no fetch of their own (pass `fetch` beside them)
new ResumableHttpAgent({ url: '/', reconnect: { fetch: globalThis.fetch } });
// @ts-expect-error: retries is a number
resumableFetch({ retries: '3' });
