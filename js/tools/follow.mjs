// Follows a chord stream until its value's `n` reaches a target, then prints what it got.
// Driven by chord/tests/js_follow.rs against chord's server, once per transport:
//   node js/tools/follow.mjs <stream url> <n> sse|durable-streams
// (Not a test file on its own: the Rust test starts the server and checks the output.)
import { durableStreamsTransport, follow, sseTransport } from '../chord-replica.mjs';

const [url, target, kind] = process.argv.slice(2);
const transport =
  kind === 'durable-streams'
    ? durableStreamsTransport(await import('@durable-streams/client'))
    : sseTransport;
const follower = follow(url, { transport, backoffMin: 5, backoffMax: 50 });
// A part of the value no batch changes: its subscription runs for the first base only.
let fixedCalls = 0;
follower.subscribe(
  (value) => value?.fixed,
  () => {
    fixedCalls += 1;
  },
);
const deadline = Date.now() + 60_000;
while (follower.replica.value?.n !== Number(target)) {
  if (Date.now() > deadline) {
    console.error(JSON.stringify({ value: follower.replica.value, stats: follower.stats, fixedCalls }));
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 5));
}
follower.stop();
await follower.done;
console.log(JSON.stringify({ value: follower.replica.value, stats: follower.stats, fixedCalls }));
process.exit(0);
