// Uses every export of chord-replica.mjs through its declarations: `tsc -p js` fails when the
// declarations and their use disagree. Not run, only type-checked. The @ts-expect-error lines
// must be errors (tsc fails on one that is not), so they test what the types refuse.
import * as client from '@durable-streams/client';
import type { LaneView, Message, Status } from '../../demo/src/agent_lane/lane.js';
import {
  apply,
  BASE_OFFSET_HEADER,
  baseOffset,
  checkOp,
  checkWireOp,
  ChordError,
  createDecoder,
  DEFAULT_LIMITS,
  DEFAULT_MAX_EVENT,
  durableStreamsTransport,
  EventParser,
  follow,
  type FollowErrorInfo,
  type FollowEvent,
  formatPath,
  isBase,
  MAX_PATH_SEGMENTS,
  MAX_WIRE_NESTING,
  type Op,
  Replica,
  RESERVED,
  sseTransport,
  StreamEventError,
  StreamHttpError,
  type HeadersOption,
  type HeaderValues,
  type CredentialOptions,
  type ChangeListener,
  type Follower,
  type FollowOptions,
  type ReplicaOptions,
  type SelectorInput,
  type Subscribe,
  validOffset,
  validOp,
  validWireOp,
} from 'chord-replica';

const decoder = createDecoder();
const ops: Op[] = decoder.decodeText('[["r",{"text":""}]]');
let value: unknown = apply(undefined, ops, { maxWork: DEFAULT_LIMITS.maxWork });
value = apply(value, [['a', ['text'], 'hi']]);
const ok: boolean = isBase(ops) && validOp(ops[0]) && validWireOp(checkWireOp(['d', 0]));
const op: Op = checkOp(['s', ['n'], 1]);
const where: string = formatPath(['transcript', 3, 'text']);
const limits: number = MAX_PATH_SEGMENTS + RESERVED.length;
const poisoned: boolean = decoder.poisoned;

const replica = new Replica({ onChange: (v: unknown, batch: Op[]) => void [v, batch] });
replica.applyWireText('[["r",1]]');
replica.applyWire([['r', 2]]);
const failed: ChordError | null = replica.failed;
if (failed) {
  const kind: string = failed.kind;
  const at: number | undefined = failed.opIndex;
  void [kind, at];
}
replica.reset();
const unsubscribe: () => void = replica.subscribe(
  (v: { lane: { status: string } }) => v.lane.status,
  (status: string, previous: string | undefined) => void [status.length, previous],
);
unsubscribe();

const parser = new EventParser({ maxEvent: DEFAULT_MAX_EVENT });
for (const event of parser.push(new TextEncoder().encode('event: control\ndata: {}\n\n'))) {
  const named: string = event.name + event.data + parser.examined + MAX_WIRE_NESTING;
  void named;
}
const offsetOk: boolean = validOffset('000000000000002a');

async function main(): Promise<void> {
  const offset: string = await baseOffset('/streams/lanes/main', {
    headers: { authorization: 'Bearer t' },
    credentials: 'include',
  });
  let token = 't1';
  const refreshed: HeadersOption = async () => ({ authorization: `Bearer ${token}` });
  const credentials: CredentialOptions = { headers: () => [['x-tenant', 'a']], credentials: 'same-origin' };
  const fixed: HeaderValues[] = [new Headers({ authorization: 'Bearer t' }), [['authorization', 'Bearer t']]];
  const loggedOut: HeadersOption = () => undefined;
  void [fixed, loggedOut];
  const authorized = follow('/streams/lanes/main', { headers: refreshed, credentials: 'omit' });
  const cookies = follow('/streams/lanes/main', credentials);
  // @ts-expect-error not one of fetch's credentials modes
  follow('/streams/lanes/main', { credentials: 'always' }).stop();
  // @ts-expect-error headers are an object or a function returning one
  follow('/streams/lanes/main', { headers: 'Bearer t1' }).stop();
  token = 't2';
  authorized.stop();
  cookies.stop();
  const header: 'chord-base-offset' = BASE_OFFSET_HEADER;
  const follower = follow('/streams/lanes/main', {
    replica,
    transport: sseTransport,
    backoffMin: 10,
    maxEvent: 1 << 20,
    onEvent: (e: FollowEvent) => {
      if (e.type === 'break' && e.error instanceof StreamHttpError) void e.error.status;
      if (e.type === 'batch') void [e.batch.length, e.base, e.value];
    },
    onError: (error: unknown, info: FollowErrorInfo) => {
      const stopped: boolean = info.stopped && info.source === 'stream' && !info.restart;
      if (error instanceof StreamHttpError) void [error.notEventStream, error.refused, stopped];
      if (error instanceof StreamEventError && error.kind === 'TooLarge') void error.max;
    },
  });
  const other = follow(new URL('http://localhost/streams/lanes/main'), {
    transport: durableStreamsTransport(client),
  });
  const stopWatching = follower.subscribe((v: { n: number }) => v.n, (n: number) => void n);
  stopWatching();
  follower.stop();
  other.stop();
  await follower.done;
  const resumes: number = follower.stats.resumes + (follower.offset ?? '').length;
  const errors: number = follower.stats.errors + (follower.stats.lastError ?? '').length;
  const href: string = follower.url;
  void [offset, header, resumes, errors, href, other.replica.value];
}

// ---- Typed replicas: the value typed by the declarations chord::typescript generates from
// the Rust state (demo/src/agent_lane/lane.d.ts, which the demo writes with `--types`).

/** A hand-written interface types a replica as well as a generated type. */
interface Counter {
  n: number;
  label: string;
}

function typedReplicas(): void {
  // follow<T>: the replica, its value, the follower's subscribe and onEvent are typed.
  const follower: Follower<LaneView> = follow<LaneView>('/streams/lanes/main', {
    onEvent: (e) => {
      if (e.type === 'batch') {
        const transcript: Message[] | undefined = e.value?.transcript;
        void transcript;
      }
    },
  });
  const lane: LaneView | undefined = follower.replica.value;
  const status: Status | undefined = follower.replica.value?.status;
  const streaming: string | undefined = follower.replica.value?.streamingMessage?.text;
  const tools: string[] = (follower.replica.value?.tools ?? []).map((t) => t.name);
  const stopTokens = follower.subscribe(
    (l) => l?.usage.outputTokens ?? 0,
    (tokens, previous) => {
      const now: number = tokens;
      const before: number | undefined = previous;
      void [now, before];
    },
  );
  const stopStatus: () => void = follower.replica.subscribe(
    (l) => l?.status,
    (s: Status | undefined) => void s,
  );
  stopTokens();
  stopStatus();
  void [lane, status, streaming, tools];

  // new Replica<T>(): onChange, the value applyWire returns, and follow takes T from it.
  const replica = new Replica<LaneView>({
    onChange: (l, batch) => void [l?.transcript.length, batch.length],
  });
  const applied: LaneView | undefined = replica.applyWireText('[["r",{}]]');
  const again: LaneView | undefined = replica.applyWire([['r', {}]]);
  replica.onChange = (l: LaneView | undefined) => void l?.usage.inputTokens;
  replica.onChange = null;
  const fromReplica: Follower<LaneView> = follow('/streams/lanes/main', { replica });
  const inline: Follower<LaneView> = follow<LaneView>('/streams/lanes/main', { replica: new Replica() });
  // An onChange that declares its parameter types the replica.
  const counters: Replica<Counter> = new Replica({ onChange: (c: Counter | undefined) => void c?.n });
  const label: string | undefined = counters.value?.label;
  const options: FollowOptions<Counter> = { replica: counters, onEvent: (e) => void (e.type === 'batch' && e.value?.n) };
  const counted: Follower<Counter> = follow('/streams/counter', options);
  const replicaOptions: ReplicaOptions<Counter> = { onChange: (c) => void c?.label };
  const listener: ChangeListener<Counter> = (c) => void c?.n;
  const input: SelectorInput<Counter> = counters.value;
  const subscribe: Subscribe<Counter> = counters.subscribe;
  subscribe((c) => c?.n, (n: number | undefined) => void n)();
  void [applied, again, fromReplica, inline, label, counted, replicaOptions, listener, input];

  // A typed replica or follower is still an untyped one (a Lane is an unknown).
  const untypedReplica: Replica = replica;
  const untypedFollower: Follower = follower;
  const untypedSubscribe: Subscribe = follower.subscribe;
  void [untypedReplica, untypedFollower, untypedSubscribe];

  // Untyped, the value is unknown and a selector may declare the shape it expects.
  const plain = follow('/streams/lanes/main');
  const unknownValue: unknown = plain.replica.value;
  const anyInput: SelectorInput<unknown> = 'any';
  plain.subscribe((l) => l.status, (s) => void s);
  // @ts-expect-error: an untyped value is unknown
  void plain.replica.value.status;
  void [unknownValue, anyInput];

  const value = follower.replica.value;
  if (value === undefined) return;
  // @ts-expect-error: `status` is a string union, not a number
  const wrongType: number = value.status;
  // @ts-expect-error: the JSON's names are serde's (`outputTokens`), not Rust's
  void value.usage.output_tokens;
  // @ts-expect-error: a LaneView has no `answer`
  void value.answer;
  // @ts-expect-error: the value is `undefined` before the first base batch
  const always: LaneView = follower.replica.value;
  // @ts-expect-error: the selected slice is a number, not a string
  follower.subscribe((l) => l?.usage.outputTokens ?? 0, (tokens) => void tokens.toUpperCase());
  // @ts-expect-error: a listener of strings for a slice of numbers
  follower.subscribe((l) => l?.usage.outputTokens ?? 0, (tokens: string) => void tokens);
  // @ts-expect-error: a selector of a typed replica may not claim another shape
  follower.subscribe((l: Counter) => l.n, () => {});
  // @ts-expect-error: a Message has no `body`
  replica.subscribe((l) => l?.transcript[0].body, () => {});
  // @ts-expect-error: onChange's value is a LaneView, whose usage has no `total`
  new Replica<LaneView>({ onChange: (l) => void l?.usage.total });
  // @ts-expect-error: onChange's value is a LaneView, not a number
  replica.onChange = (n: number) => void n;
  // @ts-expect-error: a batch event's value is a LaneView, not a Counter
  follow<LaneView>('/s', { onEvent: (e) => void (e.type === 'batch' && e.value?.n) });
  // @ts-expect-error: a Replica<Counter> does not keep a LaneView current
  follow<LaneView>('/s', { replica: counters });
  // @ts-expect-error: nor does an untyped one (its value is unknown)
  follow<LaneView>('/s', { replica: new Replica<unknown>() });
  // @ts-expect-error: applyWire returns a LaneView, not a Counter
  const notCounter: Counter | undefined = replica.applyWire([['r', {}]]);
  void [wrongType, always, notCounter];
}

void [value, ok, op, where, limits, poisoned, offsetOk, main, typedReplicas];
