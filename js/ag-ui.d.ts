// Types of chord-replica/ag-ui: the official AG-UI client's HttpAgent with runs that resume.
import { HttpAgent, type HttpAgentConfig } from '@ag-ui/client';

/** What `onReconnect` is told before each request sent again. */
export interface ReconnectInfo {
  /** The id of the last event received (`''` if none had an id yet): sent as `Last-Event-ID`. */
  lastEventId: string;
  /** 1 for the first attempt after a drop, 2 for the next if that one failed, and so on. */
  attempt: number;
  /** Why: the connection's error, a refused attempt's, or undefined when the body just ended. */
  error: unknown;
}

/** How a stream reconnects. */
export interface ResumeOptions {
  /** The `fetch` that sends each request (default: the global one, looked up at each call). */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** Attempts in a row that bring no event before the body fails (default 8). */
  retries?: number;
  /** The first backoff, in ms, doubled at each failed attempt (default 100). */
  backoffMin?: number;
  /** The largest backoff, in ms (default 5000). */
  backoffMax?: number;
  /** Whether an event ends the stream (default: AG-UI's RUN_FINISHED or RUN_ERROR). */
  isTerminal?: (event: { name: string; data: string; id: string }) => boolean;
  /** Called before each request sent again. */
  onReconnect?: (info: ReconnectInfo) => void;
  /**
   * When the stream cannot go on: a string is the data of one last event the body ends with
   * (instead of failing with the error).
   */
  giveUp?: (error: ResumeError) => string | undefined;
  /** The largest SSE event accepted, in bytes (default 64 MiB). */
  maxEvent?: number;
}

/**
 * A resumed stream that could not go on: a refused request (`status`), an answer that is not
 * an event stream, no event id to resume after, or `attempts` failed attempts in a row.
 */
export class ResumeError extends Error {
  readonly status: number | undefined;
  readonly attempts: number | undefined;
  readonly lastEventId: string;
}

/** The data of the RUN_ERROR event (code `RESUME_FAILED`) a run that cannot be resumed ends with. */
export function agUiRunError(error: ResumeError): string;

/** Whether an SSE event's data is AG-UI's RUN_FINISHED or RUN_ERROR. */
export function isAgUiTerminal(event: { data: string }): boolean;

/**
 * A `fetch` whose event-stream responses resume after a drop: the same request sent again
 * with `Last-Event-ID`, the new response's events continuing the same body.
 */
export function resumableFetch(
  options?: ResumeOptions,
): (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** HttpAgent's configuration, and how its runs resume. */
export interface ResumableHttpAgentConfig extends HttpAgentConfig {
  reconnect?: Omit<ResumeOptions, 'fetch' | 'giveUp'>;
}

/**
 * An HttpAgent whose runs resume after a dropped connection (POST again with `Last-Event-ID`).
 * A run that cannot be resumed ends with a RUN_ERROR event (code `RESUME_FAILED`).
 */
export class ResumableHttpAgent extends HttpAgent {
  constructor(config: ResumableHttpAgentConfig);
  /** The resume options this agent and its clones use. */
  reconnect: Omit<ResumeOptions, 'fetch' | 'giveUp'>;
  /** How many times this agent sent a run's request again after a drop. */
  reconnects: number;
  /** Why the last run that could not be resumed could not: it ended with a RUN_ERROR (code `RESUME_FAILED`). */
  resumeError: ResumeError | undefined;
  clone(): ResumableHttpAgent;
}
