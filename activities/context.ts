/** What an activity reads from and sends to Temporal while it runs: its turn and its heartbeats. */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { FailureType } from '../contract/index.js';

/**
 * How often an activity heartbeats when Temporal gives it no heartbeat timeout: nothing then times
 * out, but a cancellation reaches an activity only in the answer to a heartbeat.
 */
const UNTIMED_HEARTBEAT_INTERVAL_MS = 2000;

/**
 * Heartbeats the activity of `ctx` until the returned function is called, every half of the
 * activity's own heartbeat timeout: a fixed interval would outlast a short timeout the turn asked
 * for, and a call still running would be taken for one whose worker was lost. The SDK sends beats
 * to the server at most every 80 % of the timeout, so half of it keeps one in every window.
 * `details` gives what each beat carries: the latest progress, so a periodic beat never replaces it
 * with less. No beat at once: the SDK sends the first beat straight away and holds later ones back,
 * and that first one is better spent on the call's first progress.
 */
export function startHeartbeat(ctx: Context, details: () => unknown = () => undefined): () => void {
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  const intervalMs = timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs / 2 : UNTIMED_HEARTBEAT_INTERVAL_MS;
  const timer = setInterval(() => ctx.heartbeat(details()), intervalMs);
  return () => clearInterval(timer);
}

/** Runs `run` heartbeating (reconcile, hooks): a lost worker is noticed like during a call. */
export async function withHeartbeat<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const stop = startHeartbeat(ctx);
  try {
    return await run(ctx.cancellationSignal);
  } finally {
    stop();
  }
}

/**
 * The run chain an activity works for, the key of what the pool lets a turn call: the workflow ID
 * as Temporal reports it, with the first run of the chain as the turn's workflow code reports it. A
 * later workflow that reuses a closed turn's ID is a chain of its own, and calls nothing that turn reconciled.
 */
export function currentTurnChain(firstRunId: string | undefined): string {
  const turnId = currentTurnId();
  if (typeof firstRunId !== 'string' || firstRunId === '') {
    throw ApplicationFailure.create({
      type: FailureType.BadRequest,
      message: `the activity input of turn ${JSON.stringify(turnId)} names no firstRunId: it runs only for a turn that reports its run chain`,
      nonRetryable: true,
    });
  }
  return `${turnId} ${firstRunId}`;
}

/** The turn an activity works for, as Temporal reports it: the workflow ID, which every run of a turn keeps. */
export function currentTurnId(): string {
  const turnId = Context.current().info.workflowExecution?.workflowId;
  // A standalone activity (started by a client, outside any workflow) belongs to no turn.
  if (turnId === undefined)
    throw ApplicationFailure.create({
      type: FailureType.BadRequest,
      message: 'this activity runs only inside a turn workflow',
      nonRetryable: true,
    });
  return turnId;
}
