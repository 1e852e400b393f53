import { CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import { FailureType, type CallOutcome, type CallRequest, type CallToolInput } from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { callOptions, isSafeToRetry, requestTimeoutMs } from './activityOptions.js';
import { errorOutcome, failureOutcome, isFailureType, isScheduleToStartTimeout, messageOf } from './failures.js';
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
  for (let failover = 0; ; failover += 1) {
    const scope = new CancellationScope();
    state.running.set(request.id, scope);
    try {
      return await scope.run(() => proxyActivities<Activities>(callOptions(state.workerQueue, tool, limits)).callTool(callInput));
    } catch (err) {
      // The whole turn was cancelled: let the cancellation end the workflow.
      if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
      if (isCancellation(err)) return errorOutcome('cancelled', 'the call was cancelled before it finished; it may have had an effect');
      // The call never started, so it is always safe to try once more: either the
      // pinned worker is gone (schedule-to-start), or its servers are (stopped idle, crashed).
      const neverStarted = isScheduleToStartTimeout(err) || isFailureType(err, FailureType.ServerUnavailable);
      if (neverStarted && failover === 0) {
        try {
          // A gone worker: the shared queue. Gone servers: the same worker, if it still answers.
          state.workerQueue = await reconcile(ctx, isScheduleToStartTimeout(err) ? undefined : state.workerQueue);
        } catch (reconcileErr) {
          return errorOutcome('transport', `the servers could not be reconciled again: ${messageOf(reconcileErr)} (the call did not run)`);
        }
        continue;
      }
      return failureOutcome(err, safeToRetry);
    } finally {
      state.running.delete(request.id);
    }
  }
}
