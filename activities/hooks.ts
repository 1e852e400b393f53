/** The activities that run the operator's hooks before and after a call. */
import {
  preToolUseProofText,
  type PostToolHookInput,
  type PostToolUseHooksResult,
  type PreToolUseHooksResult,
  type ToolHookInput,
} from '../contract/index.js';
import { currentTurnId, withHeartbeat } from './context.js';
import type { ActivityKit } from './deps.js';
import { scrubResult } from './history.js';

/** `preToolUseHooks`: their decision, sealed for exactly this turn, call and arguments unless it denies. */
export function preToolUseHooksActivity({
  deps,
  governanceFor,
  seal,
}: ActivityKit): (input: ToolHookInput) => Promise<PreToolUseHooksResult> {
  const { logger, scrub } = deps;
  return async function preToolUseHooks(input) {
    const turnId = currentTurnId();
    const g = await governanceFor(turnId);
    if (!g || !deps.governance) return { decision: 'none', runs: [] };
    const service = deps.governance;
    const result = await withHeartbeat((signal) => service.preToolUse(g, input, signal));
    logger.info(
      {
        sessionId: input.sessionId,
        callId: input.callId,
        tool: input.name,
        decision: result.decision,
        hooks: result.runs.length,
      },
      'PreToolUse hooks ran',
    );
    // Recorded in history: a hook that echoes a secret, or writes one into the arguments, must not put it there.
    const clean = scrubResult(result, scrub);
    if (clean.decision === 'deny') return clean;
    // Sealed after scrubbing: the workflow calls with exactly the arguments recorded here.
    return {
      ...clean,
      proof: seal(preToolUseProofText(turnId, input.callId, input.name, clean.updatedInput ?? input.arguments)),
    };
  };
}

/** `postToolUseHooks`: what they made of the call's result. */
export function postToolUseHooksActivity({
  deps,
  governanceFor,
}: ActivityKit): (input: PostToolHookInput) => Promise<PostToolUseHooksResult> {
  const { logger, scrub } = deps;
  return async function postToolUseHooks(input) {
    const g = await governanceFor(currentTurnId());
    if (!g || !deps.governance) return { runs: [] };
    const service = deps.governance;
    const result = await withHeartbeat((signal) => service.postToolUse(g, input, signal));
    logger.info(
      { sessionId: input.sessionId, callId: input.callId, tool: input.name, hooks: result.runs.length },
      'PostToolUse hooks ran',
    );
    return scrubResult(result, scrub);
  };
}
