// chord-replica/ag-ui: the official AG-UI client (`@ag-ui/client`'s HttpAgent) with runs
// that survive a dropped connection, for chord's AG-UI endpoint.
//
// chord serves a run's events as a view of its durable log, each with an SSE `id:`; a POST of
// the same RunAgentInput with a `Last-Event-ID` header answers the events after that id (no
// second RUN_STARTED, no second producer). HttpAgent reads past `id:` lines and stops at a
// dropped connection; ResumableHttpAgent gives it a `fetch` that reconnects, so the agent's state
// and messages end as if the connection had never dropped.
//
//   import { ResumableHttpAgent } from 'chord-replica/ag-ui';
//
//   const agent = new ResumableHttpAgent({ url: 'http://127.0.0.1:8788/' });
//   agent.subscribe({ onStateChanged: ({ state }) => render(state) });
//   await agent.runAgent();
//
// `@ag-ui/client` is an optional peer dependency: install it beside chord-replica to use
// this entry (the rest of the package does not need it).

import { HttpAgent } from '@ag-ui/client';
import { agUiRunError, resumableFetch } from './src/resume.mjs';

export { agUiRunError, isAgUiTerminal, ResumeError, resumableFetch } from './src/resume.mjs';

/** The `fetch` each agent's resuming `fetch` wraps (a clone's too). */
const BASE_FETCH = new WeakMap();

/** A resuming `fetch` over `base` that counts `agent`'s reconnects. */
function reconnecting(agent, base) {
  BASE_FETCH.set(agent, base);
  return resumableFetch({
    ...agent.reconnect,
    fetch: base,
    onReconnect(info) {
      agent.reconnects += 1;
      agent.reconnect.onReconnect?.(info);
    },
    giveUp(error) {
      agent.resumeError = error;
      return agUiRunError(error);
    },
  });
}

/**
 * An `HttpAgent` whose runs resume: when the connection drops before `RUN_FINISHED` or
 * `RUN_ERROR`, it POSTs the same `RunAgentInput` again with `Last-Event-ID` and goes on
 * with the events after it (see {@link resumableFetch}; `reconnect` holds its options, and
 * `fetch`, if given, is the one it wraps). `reconnects` counts the requests sent again.
 * A run that cannot be resumed (a refused request, attempts run out) ends with a
 * `RUN_ERROR` event (code `RESUME_FAILED`, the reason in its message), and `resumeError`
 * holds the {@link ResumeError}.
 */
export class ResumableHttpAgent extends HttpAgent {
  /** @param {import('./ag-ui.d.ts').ResumableHttpAgentConfig} config */
  constructor(config) {
    const { reconnect = {}, ...rest } = config;
    super(rest);
    /** The reconnect options this agent (and its clones) use. */
    this.reconnect = reconnect;
    /** How many times this agent sent a run's request again after a drop. */
    this.reconnects = 0;
    /** Why the last run that could not be resumed could not (undefined if none). */
    this.resumeError = undefined;
    this.fetch = reconnecting(this, this.fetch);
  }

  /** A copy with its own `reconnects` count, resuming as this agent does. */
  clone() {
    const cloned = super.clone();
    cloned.reconnect = this.reconnect;
    cloned.reconnects = 0;
    cloned.resumeError = undefined;
    cloned.fetch = reconnecting(cloned, BASE_FETCH.get(this));
    return cloned;
  }
}
