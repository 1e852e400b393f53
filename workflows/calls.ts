import { CancellationScope, isCancellation, patched, proxyActivities } from '@temporalio/workflow';
import { FailureType, type CallOutcome, type CallRequest, type CallToolInput } from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { MAX_LOST_WORKER_MOVES, callOptions, isSafeToRetry, requestTimeoutMs } from './activityOptions.js';
import { errorOutcome, failureOutcome, isFailureType, isHeartbeatTimeout, isScheduleToStartTimeout, messageOf } from './failures.js';
import { reconcile } from './servers.js';
import type { TurnContext } from './turnState.js';

/** Runs one call and records its outcome; every call of the turn, batch or interactive, goes here. */
export async function runCall(ctx: TurnContext, request: CallRequest): Promise<CallOutcome> {
  const { state } = ctx;
  state.inFlight += 1;
  const args = request.arguments ?? {};
  try {
    const outcome = await executeCall(ctx, request, args);
    state.record({ id: request.id, name: request.name, arguments: args, outcome }, ctx.input.batch !== undefined);
    return outcome;
  } finally {
    state.inFlight -= 1;
    state.touch();
  }
}

async function executeCall(ctx: TurnContext, request: CallRequest, args: Record<string, unknown>): Promise<CallOutcome> {
  const { state, limits } = ctx;
  const tool = state.tools.get(request.name);
  if (!tool) {
    return errorOutcome('bad_request', `unknown tool "${request.name}": it is not in this turn's tool list`);
  }
  const safeToRetry = isSafeToRetry(tool);
  const callInput: CallToolInput = {
    sessionId: ctx.input.sessionId,
    callId: request.id,
    name: tool.name,
    server: tool.server,
    tool: tool.tool,
    arguments: args,
    annotations: tool.annotations,
    requestTimeoutMs: requestTimeoutMs(tool, limits),
  };
  // Behind a patch: turns recorded before it let Temporal retry a lost heartbeat on the same
  // pinned queue, and must replay that way.
  const failoverOnLostWorker = patched('lost-worker-failover');
  let failedOverUnstarted = false;
  let lostWorkerMoves = 0;
  for (;;) {
    const queue = state.workerQueue;
    const scope = new CancellationScope();
    state.running.set(request.id, scope);
    try {
      return await scope.run(() => proxyActivities<Activities>(callOptions(queue, tool, limits, failoverOnLostWorker)).callTool(callInput));
    } catch (err) {
      // The whole turn was cancelled: let the cancellation end the workflow.
      if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
      if (isCancellation(err)) return errorOutcome('cancelled', 'the call was cancelled before it finished; it may have had an effect');
      // The call never started, so it is always safe to try once more: either the
      // pinned worker is gone (schedule-to-start), or its servers are (stopped idle, crashed).
      const neverStarted = isScheduleToStartTimeout(err) || isFailureType(err, FailureType.ServerUnavailable);
      if (neverStarted && !failedOverUnstarted) {
        failedOverUnstarted = true;
        try {
          // A gone worker: the shared queue. Gone servers: the same worker, if it still answers.
          state.workerQueue = await reconcile(ctx, isScheduleToStartTimeout(err) ? undefined : state.workerQueue);
        } catch (reconcileErr) {
          return errorOutcome('transport', `the servers could not be reconciled again: ${messageOf(reconcileErr)} (the call did not run)`);
        }
        continue;
      }
      // The worker running the call is presumed gone. A call that is safe to run again follows the
      // servers to another worker; one that may have had an effect ends as unknown_result at once,
      // without waiting for a reconcile that may find no worker for a while.
      if (failoverOnLostWorker && safeToRetry && isHeartbeatTimeout(err) && lostWorkerMoves < MAX_LOST_WORKER_MOVES) {
        lostWorkerMoves += 1;
        const problem = await leaveLostWorker(ctx, queue);
        if (problem) return errorOutcome('transport', `the worker running the call was lost, and the servers could not be reconciled on another: ${problem}`);
        continue;
      }
      return failureOutcome(err, safeToRetry);
    } finally {
      state.running.delete(request.id);
    }
  }
}

/**
 * After the worker on `lostQueue` stopped heartbeating: reconciles the session's servers on the
 * shared queue, never on the lost worker's own queue, where a gone worker is only noticed after a
 * schedule-to-start timeout. Another call that lost the same worker may have moved the turn
 * already. Returns what went wrong, or undefined once the turn is on a worker that answered.
 */
async function leaveLostWorker(ctx: TurnContext, lostQueue: string): Promise<string | undefined> {
  const { state } = ctx;
  if (state.workerQueue !== lostQueue) return undefined;
  try {
    state.workerQueue = await reconcile(ctx);
    return undefined;
  } catch (err) {
    // The whole turn was cancelled while it moved: let the cancellation end the workflow.
    if (isCancellation(err)) throw err;
    return messageOf(err);
  }
}
