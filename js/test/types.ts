// Uses every export of chord-replica.mjs through its declarations: `tsc -p js` fails when the
// declarations and their use disagree. Not run, only type-checked.
import * as client from '@durable-streams/client';
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

void [value, ok, op, where, limits, poisoned, offsetOk, main];
