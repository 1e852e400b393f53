import { ApplicationFailure } from '@temporalio/workflow';
import type { ToolInfo } from '../contract/index.js';
import { moveOf, moveTurn, placeTurn } from './placement.js';
import { listTools } from './servers.js';
import type { TurnContext } from './turnState.js';

/**
 * Reconciles the session's servers and freezes their tool list: what a turn's `turnStarted` answers,
 * and what a session opened from a user's own workflow code starts from.
 */
export async function openServers(ctx: TurnContext, turnId: string): Promise<void> {
  const { state } = ctx;
  await placeTurn(ctx);
  let frozen: ToolInfo[];
  const queue = state.workerQueue;
  try {
    frozen = await listTools(ctx, queue);
  } catch (err) {
    // The worker that reconciled was lost before it listed the tools (nobody took the task from its
    // queue): the session's servers go to whichever worker takes a reconcile from the shared queue.
    if (moveOf(err) !== 'not-taken') throw err;
    const problem = await moveTurn(ctx, queue, 'not-taken');
    if (problem)
      throw ApplicationFailure.nonRetryable(
        `the worker that reconciled the servers was lost before it listed their tools, and they could not be reconciled on another: ${problem}`,
      );
    frozen = await listTools(ctx, state.workerQueue);
  }
  state.tools = new Map(frozen.map((t) => [t.name, t]));
  // Tools the allowed-tools rules refuse are never listed to the model.
  const listed = frozen.filter((t) => t.refusedBy === undefined);
  const refusedTools = frozen.flatMap((t) =>
    t.refusedBy === undefined ? [] : [{ name: t.name, reason: t.refusedBy }],
  );
  state.start = {
    turnId,
    workerQueue: state.workerQueue,
    status: state.lastReconcile!.status,
    tools: listed,
    serversParagraph: state.lastReconcile!.serversParagraph,
    ...(refusedTools.length > 0 ? { refusedTools } : {}),
  };
}
