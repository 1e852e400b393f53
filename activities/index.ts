/**
 * The activities of a worker: each in its own file (servers, hooks, the call), built here from the
 * same deps and the parts they share.
 */
import { randomBytes } from 'node:crypto';
import type { ActivityName } from '../contract/index.js';
import { callToolActivity, callToolLocalActivity } from './callTool.js';
import { endSessionActivity } from './endSession.js';
import { sealerFor } from './callChecks.js';
import type { ActivityDeps, ActivityKit } from './deps.js';
import { createGovernanceCache } from './governanceCache.js';
import { postToolUseHooksActivity, preToolUseHooksActivity } from './hooks.js';
import { listToolsActivity, reconcileServersActivity, workerInfoActivity } from './servers.js';
import { deliverInputAnswerActivity } from './legacyInput.js';
import { LegacyInputWaits } from '../mcp/legacyInputs.js';
import {
  cancelTaskActivity,
  createTaskActivity,
  pollTaskActivity,
  takeTaskActivity,
  taskResultActivity,
  updateTaskActivity,
} from './tasks.js';
import { taskInputActivity } from './taskInput.js';
import { modelStepActivity } from './modelStep.js';

export type { ActivityDeps, SessionServers } from './deps.js';
export { scrubResult, toFailure } from './history.js';

/** The activities, keyed by their type names (recorded in history, so never renamed). */
export function createActivities(deps: ActivityDeps) {
  const kit: ActivityKit = {
    deps,
    governanceFor: createGovernanceCache(deps),
    seal: sealerFor(deps.turnKey ?? randomBytes(32)),
    legacyWaits: new LegacyInputWaits(),
  };
  return {
    reconcileServers: reconcileServersActivity(kit),
    listTools: listToolsActivity(kit),
    callTool: callToolActivity(kit),
    callToolLocal: callToolLocalActivity(kit),
    workerInfo: workerInfoActivity(kit),
    preToolUseHooks: preToolUseHooksActivity(kit),
    postToolUseHooks: postToolUseHooksActivity(kit),
    endSession: endSessionActivity(kit),
    deliverInputAnswer: deliverInputAnswerActivity(kit),
    createTask: createTaskActivity(kit),
    pollTask: pollTaskActivity(kit),
    taskResult: taskResultActivity(kit),
    cancelTask: cancelTaskActivity(kit),
    taskInput: taskInputActivity(kit),
    updateTask: updateTaskActivity(kit),
    takeTask: takeTaskActivity(kit),
    modelStep: modelStepActivity(kit),
  } satisfies Record<ActivityName, (input: never) => Promise<unknown>>;
}

export type Activities = ReturnType<typeof createActivities>;
