/**
 * One attempt of a call, sent one of four ways, each ending in the same shape ({@link Sent}):
 *
 * - `local` (the fast path): a call that is safe to run again goes first to a local activity, run by
 *   the worker that runs the turn's workflow task, in that same task. When that worker holds the
 *   session's servers this saves a round trip through the server's activity queue; when it does not,
 *   or the call outlives a short bound, the call is handed over to the holder's queue. A call that
 *   may have an effect never runs here: a worker lost after it ran and before its workflow task
 *   completed would leave no record of it, and the next worker would run it again.
 * - `eager`: a side-effecting call goes to the turn's own (shared) queue, naming its holder, and the
 *   server hands the activity task back to the worker that scheduled it; a worker that is not the
 *   holder refuses it unrun and the call is handed over.
 * - `shared`: the regular `callTool` activity on the turn's own (shared) queue, for any worker to run
 *   over its own connection to the server: only for servers the reconcile granted as shared
 *   (stateless 2026-07-28 remote servers). A worker that cannot take it refuses it unrun and the
 *   holder takes it.
 * - `pinned`: the regular `callTool` activity on the holder's own queue, with heartbeats and retries.
 *
 * Which way a call takes, and what a failure of its attempt means, is the caller's policy.
 */
import { ActivityFailure, ApplicationFailure, type ActivityOptions } from '@temporalio/common';
import type { LocalActivityOptions } from '@temporalio/common';
import { CancellationScope, isCancellation, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import {
  FailureType,
  type CallOutcome,
  type CallRequest,
  type CallToolInput,
  type InputRequiredOutcome,
  type LocalCallOutcome,
  type SharedServer,
  type ToolInfo,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import {
  callAttemptOptions,
  eagerCallOptions,
  isSafeToRetry,
  localCallOptions,
  sharedCallOptions,
} from './activityOptions.js';
import { failureOutcome, isFailureType, isTaskOnlyRefusal } from './failures.js';
import { ownerPresumedLost } from './placement.js';
import type { TurnContext } from './turnState.js';

/** How an attempt is sent (see the module's comment). */
export type Way = 'local' | 'eager' | 'shared' | 'pinned';

/** One attempt of a call. */
export interface Attempt {
  tool: ToolInfo;
  input: CallToolInput;
  /** The holder's queue when the attempt is sent. */
  queue: string;
  way: Way;
  /** An earlier fast-path attempt of the call reached the tool: it was one of the call's attempts. */
  fastAttemptRanTool: boolean;
}

/**
 * How an attempt ended: the server's answer (a result, or questions for a person); an outcome the
 * attempt settled itself (a bad request from the fast path, `taskOnly` when a task may still run
 * it); or the call handed over to the holder's own queue, unrun unless `ranTool`, and after a move
 * first when `ownerLost`. A regular attempt's failure is thrown, for the caller's placement rule.
 */
export type Sent =
  | { answered: CallOutcome | InputRequiredOutcome }
  | { settled: CallOutcome; taskOnly: boolean }
  | { handedOver: { ranTool: boolean; ownerLost: boolean } };

/** What a pinned attempt ends with: it is never handed over. */
export type Answered = Extract<Sent, { answered: unknown }>;

/**
 * The way a call's first attempt takes, under the turn's belief since its last reconcile that the
 * worker running the turn holds its servers (DMCP_FAST_PATH, recorded in history), until a miss or a
 * refusal says otherwise: a retry-safe call the fast path, a side-effecting one eager dispatch (it
 * runs at most once: a retry would go to the shared queue without eager dispatch, to any worker).
 * Later attempts, and those carrying answers, are pinned.
 */
export function firstWay(
  ctx: TurnContext,
  tool: Pick<ToolInfo, 'annotations' | 'retry' | 'server'>,
  input: Pick<CallToolInput, 'inputReply'>,
): Way {
  const reconciled = ctx.state.lastReconcile;
  const regular = regularWay(ctx, tool);
  if (reconciled === undefined || ctx.state.fastPathMissedOn === reconciled || input.inputReply !== undefined)
    return regular;
  if (isSafeToRetry(tool)) return reconciled.fastPath === true ? 'local' : regular;
  if (regular === 'shared') return regular;
  return reconciled.eagerCalls === true ? 'eager' : 'pinned';
}

/**
 * The way of a regular attempt: `shared` while the last reconcile grants the tool's server as
 * shared and no worker has refused a shared call since, else `pinned`.
 */
export function regularWay(ctx: TurnContext, tool: Pick<ToolInfo, 'server'>): 'shared' | 'pinned' {
  return sharedGrant(ctx, tool) !== undefined ? 'shared' : 'pinned';
}

function sharedGrant(ctx: TurnContext, tool: Pick<ToolInfo, 'server'>): SharedServer | undefined {
  const reconciled = ctx.state.lastReconcile;
  if (reconciled === undefined || ctx.state.sharedMissedOn === reconciled) return undefined;
  return reconciled.shared?.[tool.server];
}

/**
 * Sends one attempt of `request` its way. A local attempt runs in the current cancellation scope,
 * without async frames of its own (see `unscopedFastCall`); a regular one is the call's asking
 * attempt while it runs: an answer to a question asked mid-call goes to the holder's own queue,
 * wherever the attempt was sent.
 */
export function sendCall(
  ctx: TurnContext,
  request: CallRequest,
  attempt: Attempt & { way: 'pinned' },
): Promise<Answered>;
export function sendCall(ctx: TurnContext, request: CallRequest, attempt: Attempt): Promise<Sent>;
export function sendCall(ctx: TurnContext, request: CallRequest, attempt: Attempt): Promise<Sent> {
  const { tool, input, queue } = attempt;
  if (attempt.way === 'local')
    return localCall(ctx, localCallOptions(tool, ctx.limits), input).then(
      ({ callId: _callId, ...result }) => ({ answered: result }),
      (err: unknown) => localCallFailed(ctx, queue, err),
    );
  return sendRegular(ctx, request, attempt);
}

async function sendRegular(ctx: TurnContext, request: CallRequest, attempt: Attempt): Promise<Sent> {
  const { state, limits } = ctx;
  const { tool, input, queue } = attempt;
  const modern = state.lastReconcile?.status.servers.find((s) => s.name === tool.server)?.era === 'modern';
  const options = callAttemptOptions(queue, tool, limits, {
    mayAskMidCall: !modern,
    fastAttemptRanTool: attempt.fastAttemptRanTool,
    carriesAnswers: input.inputReply !== undefined,
  });
  const sent =
    attempt.way === 'eager'
      ? eagerDispatch(ctx, options, input, queue)
      : attempt.way === 'shared'
        ? sharedDispatch(ctx, options, input, tool)
        : { options, input };
  state.askingAttempts.set(request.id, { scope: CancellationScope.current(), queue, tool: tool.name });
  try {
    return { answered: await proxyActivities<Activities>(sent.options).callTool(sent.input) };
  } catch (err) {
    // Sent for eager dispatch, it reached a worker without the servers, which ran nothing: the
    // holder's own queue takes it, and the turn stops trying until its next reconcile.
    if (attempt.way === 'eager' && isFailureType(err, FailureType.FastPathMiss)) {
      state.fastPathMissedOn = state.lastReconcile;
      return { handedOver: { ranTool: false, ownerLost: false } };
    }
    // A shared call that a worker could not take (it ran nothing): the same, for shared calls.
    if (attempt.way === 'shared' && isFailureType(err, FailureType.SharedMiss)) {
      state.sharedMissedOn = state.lastReconcile;
      return { handedOver: { ranTool: false, ownerLost: false } };
    }
    throw err;
  } finally {
    state.askingAttempts.delete(request.id);
  }
}

/**
 * The regular activity sent to the turn's own (shared) queue for eager dispatch, naming the holder:
 * a worker that is not the holder refuses it unrun.
 */
export function eagerDispatch(
  ctx: Pick<TurnContext, 'sharedQueue'>,
  options: ActivityOptions,
  input: CallToolInput,
  holderQueue: string,
): { options: ActivityOptions; input: CallToolInput } {
  return { options: eagerCallOptions(options, ctx.sharedQueue), input: { ...input, workerQueue: holderQueue } };
}

/** The regular activity sent to the turn's own (shared) queue for any worker, with the server's grant. */
function sharedDispatch(
  ctx: TurnContext,
  options: ActivityOptions,
  input: CallToolInput,
  tool: Pick<ToolInfo, 'server'>,
): { options: ActivityOptions; input: CallToolInput } {
  const grant = sharedGrant(ctx, tool);
  if (grant === undefined) return { options, input };
  return {
    options: sharedCallOptions(options, ctx.sharedQueue),
    input: {
      ...input,
      shared: { ...grant, refs: ctx.input.refs, ...(ctx.input.offerWorkspaceRoot === true ? { offerRoot: true } : {}) },
    },
  };
}

/** The fast path's local activity for `input`, scheduled in the current cancellation scope. */
export function localCall(
  ctx: TurnContext,
  options: LocalActivityOptions,
  input: CallToolInput,
): Promise<LocalCallOutcome> {
  return proxyLocalActivities<Activities>(options).callToolLocal({ ...input, workerQueue: ctx.state.workerQueue });
}

/**
 * How a fast-path attempt on `queue` that failed with `err` ends. A miss (this worker does not hold
 * the servers) stops the turn trying until its next reconcile, and when the holder is presumed lost
 * (see `ownerPresumedLost`) the turn moves before the call runs. A bad request fails the same way on
 * any path, so it settles the call (`taskOnly`: one the regular path would not fix either, but a
 * task may); any other failure, a timeout included, hands the call over to the regular activity,
 * which may run it again: it is safe to. A cancellation is thrown, as from the regular activity.
 */
export function localCallFailed(ctx: TurnContext, queue: string, err: unknown): Sent {
  if (isCancellation(err)) throw err;
  // A local activity's failure may come without the ActivityFailure wrapper a regular one has.
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const type = cause instanceof ApplicationFailure ? cause.type : undefined;
  if (type === FailureType.FastPathMiss) {
    ctx.state.fastPathMissedOn = ctx.state.lastReconcile;
    return { handedOver: { ranTool: false, ownerLost: ownerPresumedLost(ctx.state, queue) } };
  }
  if (type === FailureType.BadRequest)
    return { settled: failureOutcome(cause, true), taskOnly: isTaskOnlyRefusal(cause) };
  // A question sent the call on before it could finish: the regular activity's tries are its own.
  const ranTool = type !== FailureType.ServerUnavailable && type !== FailureType.FastPathAsksPerson;
  return { handedOver: { ranTool, ownerLost: false } };
}

/**
 * Whether a fast call with these local-activity `options` ends before anything else can reach the
 * turn, so that it needs no cancellation scope of its own. While a local activity runs, its workflow
 * task stays open and the server holds back every Update, cancellation and signal; the SDK completes
 * the task early, letting them in, only at 80 % of the task timeout. A call bounded below that is
 * over before a cancel of it could arrive. (A turn with a short heartbeat timeout has a short task
 * timeout, and its fast calls keep their own scope.)
 */
export function endsBeforeTaskRenewal(options: LocalActivityOptions, taskTimeoutMs: number): boolean {
  // A second of margin for the time between the task's start and the call's.
  return Number(options.startToCloseTimeout) + 1000 <= 0.8 * taskTimeoutMs;
}

/** A regular attempt's outcome after a fast-path attempt that reached the tool: that attempt counts too. */
export function withFastAttempt(outcome: CallOutcome, ranTool: boolean): CallOutcome {
  return ranTool && outcome.status === 'ok' ? { ...outcome, attempts: outcome.attempts + 1 } : outcome;
}
