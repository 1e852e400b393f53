/** The activity that ends a session on one worker: its servers stop now instead of at the idle stop. */
import { ApplicationFailure } from '@temporalio/activity';
import { FailureType, type EndSessionInput, type EndSessionResult } from '../contract/index.js';
import { currentTurnId } from './context.js';
import type { ActivityKit } from './deps.js';

/**
 * `endSession`: stops the session's servers on this worker. Only the session the asking workflow
 * belongs to (a turn `<sessionId>/turn-<n>`, `<sessionId>/end`, or a user's workflow whose ID is
 * the session's): a workflow of one session cannot end another, and the session's own history
 * shows who ended it.
 */
export function endSessionActivity({ deps }: ActivityKit): (input: EndSessionInput) => Promise<EndSessionResult> {
  return async function endSession(input) {
    const workflowId = currentTurnId();
    if (workflowId !== input.sessionId && !workflowId.startsWith(`${input.sessionId}/`)) {
      throw ApplicationFailure.create({
        type: FailureType.BadRequest,
        message: `workflow ${JSON.stringify(workflowId)} may end only its own session, not ${JSON.stringify(input.sessionId)}`,
        nonRetryable: true,
      });
    }
    return { servers: await deps.pool.endSession(input.sessionId) };
  };
}
