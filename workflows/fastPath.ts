/**
 * The fast path: a call that is safe to run again goes first to a local activity, run by the worker
 * that runs the turn's workflow task, in that same task. When that worker holds the session's
 * servers this saves a round trip through the server's activity queue; when it does not, or the
 * call outlives a short bound, the regular `callTool` activity takes the call. A call that may have
 * an effect never runs here: a worker lost after it ran and before its workflow task completed would
 * leave no record of it, and the next worker would run it again.
 */
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { isCancellation, proxyLocalActivities } from '@temporalio/workflow';
import {
  FailureType,
  type CallOutcome,
  type FastPathMissDetails,
  type CallToolInput,
  type InputRequiredOutcome,
  type LocalCallOutcome,
  type ToolInfo,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { callTimeoutMs, isSafeToRetry, type Limits } from './activityOptions.js';
import { failureOutcome, isTaskOnlyRefusal } from './failures.js';
import type { TurnContext } from './turnState.js';

/**
 * The longest a fast-path call may run before the regular path takes it over. A local activity
 * holds its workflow task open and sends no heartbeat: a lost worker is noticed only by the workflow
 * task timeout, and every other command of the turn (other calls' activities, Update answers) waits
 * until the local activity ends. Most read-only calls answer in milliseconds. Under 5 s: the SDK's
 * core warns of every workflow task that lasts longer than that (TEMPORAL_WORKFLOW_TASK_DURATION_WARN_SECONDS),
 * and with the default 10 s workflow task timeout a call that reaches the bound holds its task that
 * long, so a 5 s bound made each such call a warning.
 */
export const FAST_PATH_BOUND_MS = 4500;

/** The local activity's options: the tool's public name as the UI label, one attempt, at most {@link FAST_PATH_BOUND_MS}. */
export function localCallOptions(
  tool: Pick<ToolInfo, 'name' | 'timeoutMs'>,
  limits: Pick<Limits, 'toolTimeoutMs'>,
): LocalActivityOptions {
  return {
    summary: tool.name,
    startToCloseTimeout: Math.min(FAST_PATH_BOUND_MS, callTimeoutMs(tool, limits)),
    // The regular activity is the retry: it runs where the servers are, with heartbeats and backoff.
    retry: { maximumAttempts: 1 },
  };
}

/**
 * Whether this call tries the fast path first: a retry-safe call, on a turn whose last reconcile
 * said the worker allows it (DMCP_FAST_PATH, recorded in history), and that has not missed since.
 */
export function takesFastPath(
  ctx: TurnContext,
  tool: Pick<ToolInfo, 'annotations' | 'retry'>,
  input: CallToolInput,
): boolean {
  const reconciled = ctx.state.lastReconcile;
  if (reconciled?.fastPath !== true || ctx.state.fastPathMissedOn === reconciled) return false;
  return input.inputReply === undefined && isSafeToRetry(tool);
}

/**
 * Whether a call that does not take the fast path is sent to the shared queue for eager dispatch:
 * the server hands the activity task back in the answer to the workflow task that schedules it, to
 * the worker that ran that task, instead of through the holder's own queue (a round trip through
 * matching less). Only side-effecting calls, which run at most once: a retry of the activity would
 * go to the shared queue without eager dispatch, to any worker. Asked under the same belief as the
 * fast path: the worker running the turn holds its servers, until a refusal says otherwise.
 */
export function takesEagerDispatch(
  ctx: TurnContext,
  tool: Pick<ToolInfo, 'annotations' | 'retry'>,
  input: CallToolInput,
): boolean {
  const reconciled = ctx.state.lastReconcile;
  if (reconciled?.eagerCalls !== true || ctx.state.fastPathMissedOn === reconciled) return false;
  return input.inputReply === undefined && !isSafeToRetry(tool);
}

/**
 * The regular activity sent to the turn's own (shared) queue, the one task queue whose activities
 * the SDK lets the server dispatch eagerly, naming the holder: a worker that is not the holder
 * refuses it unrun.
 */
export function eagerDispatch(
  ctx: Pick<TurnContext, 'sharedQueue'>,
  options: ActivityOptions,
  input: CallToolInput,
  holderQueue: string,
): { options: ActivityOptions; input: CallToolInput } {
  return {
    options: { ...options, taskQueue: ctx.sharedQueue, allowEagerDispatch: true },
    input: { ...input, workerQueue: holderQueue },
  };
}

/**
 * Where a new session's first reconcile goes: the worker running this workflow task, which keeps the
 * turn's later tasks (sticky execution), so its retry-safe calls can take the fast path. Undefined
 * (the shared queue, as before) when that worker has the fast path off or cannot say.
 */
export async function ownWorkerQueue(): Promise<string | undefined> {
  try {
    const info = await proxyLocalActivities<Activities>({
      startToCloseTimeout: '5s',
      retry: { maximumAttempts: 1 },
    }).workerInfo();
    return info.fastPath ? info.workerQueue : undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    return undefined;
  }
}

/** How the fast path ended: with the call's result or outcome, or handing the call to the regular path. */
export type FastCall =
  | { result: CallOutcome | InputRequiredOutcome }
  | { outcome: CallOutcome; taskOnly?: true }
  | { fallback: true; ranTool: boolean; ownerLost?: true };

/**
 * Runs `input` as a local activity. A miss (this worker does not hold the servers) stops the turn
 * trying until its next reconcile; `ownerLost` says the worker that does hold them died in the middle
 * of the turn's previous workflow task, so the turn should move before the call runs. A bad request fails the same way on any path, so it is the
 * outcome (`taskOnly`: one the regular path would not fix either, but a task may); any other failure, a timeout included, hands the call to the regular activity, which
 * may run it again: it is safe to. A cancellation is thrown, as from the regular activity.
 */
export async function fastCall(
  ctx: TurnContext,
  tool: Pick<ToolInfo, 'name' | 'timeoutMs'>,
  input: CallToolInput,
): Promise<FastCall> {
  try {
    const { callId: _callId, ...result } = await localCall(ctx, localCallOptions(tool, ctx.limits), input);
    return { result: result as CallOutcome | InputRequiredOutcome };
  } catch (err) {
    return fastCallFailed(ctx, err);
  }
}

/** The fast path's local activity for `input` ({@link localCallOptions}), scheduled in the current cancellation scope. */
export function localCall(
  ctx: TurnContext,
  options: LocalActivityOptions,
  input: CallToolInput,
): Promise<LocalCallOutcome> {
  return proxyLocalActivities<Activities>(options).callToolLocal({ ...input, workerQueue: ctx.state.workerQueue });
}

/** How a fast-path attempt that failed with `err` ends (see {@link fastCall}); a cancellation is thrown. */
export function fastCallFailed(ctx: TurnContext, err: unknown): FastCall {
  if (isCancellation(err)) throw err;
  // A local activity's failure may come without the ActivityFailure wrapper a regular one has.
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const type = cause instanceof ApplicationFailure ? cause.type : undefined;
  if (type === FailureType.FastPathMiss) {
    ctx.state.fastPathMissedOn = ctx.state.lastReconcile;
    // Recorded in the marker, so a replay takes the same way.
    const details = (cause as ApplicationFailure).details?.[0] as Partial<FastPathMissDetails> | undefined;
    return details?.ownerLost === true
      ? { fallback: true, ranTool: false, ownerLost: true }
      : { fallback: true, ranTool: false };
  }
  if (type === FailureType.BadRequest)
    return isTaskOnlyRefusal(cause)
      ? { outcome: failureOutcome(cause, true), taskOnly: true }
      : { outcome: failureOutcome(cause, true) };
  // A question sent the call on before it could finish: the regular activity's tries are its own.
  return { fallback: true, ranTool: type !== FailureType.ServerUnavailable && type !== FailureType.FastPathAsksPerson };
}

/**
 * Whether a fast call with these local-activity `options` ends before anything else can reach the turn, so that it needs no
 * cancellation scope of its own. While a local activity runs, its workflow task stays open and the
 * server holds back every Update, cancellation and signal; the SDK completes the task early, letting
 * them in, only at 80 % of the task timeout. A call bounded below that is over before a cancel of it
 * could arrive. (A turn with a short heartbeat timeout has a short task timeout, and its fast calls
 * keep their own scope.)
 */
export function endsBeforeTaskRenewal(options: LocalActivityOptions, taskTimeoutMs: number): boolean {
  // A second of margin for the time between the task's start and the call's.
  return Number(options.startToCloseTimeout) + 1000 <= 0.8 * taskTimeoutMs;
}

/**
 * The regular activity's options after a fast-path attempt that reached the tool: that attempt was
 * the call's first, so the call still gets no more attempts in all than its retry policy allows.
 */
export function afterFastAttempt(options: ActivityOptions, ranTool: boolean): ActivityOptions {
  const attempts = options.retry?.maximumAttempts;
  if (!ranTool || attempts === undefined || attempts <= 1) return options;
  return { ...options, retry: { ...options.retry, maximumAttempts: attempts - 1 } };
}

/** A regular attempt's outcome after a fast-path attempt that reached the tool: that attempt counts too. */
export function withFastAttempt(outcome: CallOutcome, ranTool: boolean): CallOutcome {
  return ranTool && outcome.status === 'ok' ? { ...outcome, attempts: outcome.attempts + 1 } : outcome;
}
