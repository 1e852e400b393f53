import { proxyActivities } from '@temporalio/workflow';
import type { ReconcileInput, ToolInfo } from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { PREFERRED_QUEUE_WAIT, pinnedOptions, reconcileOptions } from './activityOptions.js';
import { isScheduleToStartTimeout } from './failures.js';
import type { TurnContext } from './turnState.js';

/** What reconcileServers gets for this turn. */
export function reconcileInput(ctx: Pick<TurnContext, 'input' | 'limits' | 'firstRunId'>): ReconcileInput {
  const { input, limits } = ctx;
  return {
    sessionId: input.sessionId,
    firstRunId: ctx.firstRunId,
    refs: input.refs,
    // An open interactive turn may call again at any time until its idle limit: the worker keeps the
    // session's servers that long. A batch turn is done when its calls are, so it asks for nothing.
    ...(input.batch ? {} : { turnIdleMs: limits.idleMs }),
    ...(input.allowedTools !== undefined ? { allowedTools: input.allowedTools } : {}),
    ...(input.disallowedTools !== undefined ? { disallowedTools: input.disallowedTools } : {}),
    ...(input.offerWorkspaceRoot === true ? { offerWorkspaceRoot: true } : {}),
  };
}

/**
 * Starts or reuses the session's servers, on `preferred` (the worker that held them last) when it
 * still answers, else on whichever worker takes the task from the shared queue. Returns the queue
 * of the worker that now holds them; the result is kept in `state.lastReconcile`.
 */
export async function reconcile(ctx: TurnContext, preferred?: string): Promise<string> {
  const request = reconcileInput(ctx);
  if (preferred) {
    try {
      ctx.state.lastReconcile = await proxyActivities<Activities>(
        reconcileOptions(preferred, PREFERRED_QUEUE_WAIT),
      ).reconcileServers(request);
      ctx.state.details.servers(ctx.state.lastReconcile.status);
      return ctx.state.lastReconcile.workerQueue;
    } catch (err) {
      if (!isScheduleToStartTimeout(err)) throw err;
    }
  }
  ctx.state.lastReconcile = await proxyActivities<Activities>(reconcileOptions(ctx.sharedQueue)).reconcileServers(
    request,
  );
  ctx.state.details.servers(ctx.state.lastReconcile.status);
  return ctx.state.lastReconcile.workerQueue;
}

/** The session's tools as the worker holding its servers sees them: the turn's frozen tool list. */
export function listTools(ctx: TurnContext, queue: string): Promise<ToolInfo[]> {
  const { sessionId, allowedTools, disallowedTools } = ctx.input;
  // The turn's own rules travel only when it has some, so turns without them schedule what they always did.
  return proxyActivities<Activities>(pinnedOptions(queue, ctx.limits)).listTools({
    sessionId,
    ...(allowedTools !== undefined ? { allowedTools } : {}),
    ...(disallowedTools !== undefined ? { disallowedTools } : {}),
  });
}
