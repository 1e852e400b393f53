/**
 * A call the operator's rules hold for a person (`permissions.ask`, or a PreToolUse hook that asks):
 * one question of the turn, like any other, answered by the `answerInput` Update and waited for on
 * a durable timer with nothing running. Its request ID names the call and the hash of the tool and
 * arguments it would run with, so an answer approves exactly that. Only `approve` lets the call run:
 * a denial, a cancel or no answer within the input timeout is a denial the model reads.
 */
import { CancellationScope, isCancellation, upsertMemo } from '@temporalio/workflow';
import {
  APPROVAL_MEMO_PREFIX,
  APPROVAL_SCHEMA,
  APPROVAL_WITH_EDITS_SCHEMA,
  argumentsHash,
  editedArguments,
  type CallRequest,
  type InputRequest,
  type ToolInfo,
} from '../contract/index.js';
import { awaitAnswers, recordQuestions } from './questions.js';
import type { TurnContext } from './turnState.js';

/** The key of an approval in its request ID (`<callId>:0:approval-<hash>`). */
const APPROVAL_KEY = 'approval';
/** How much of the arguments the question shows; the whole call is in history. */
const SHOWN_ARGUMENT_CHARS = 500;

/**
 * How an approval ended: approved (with the arguments a person gave instead, when the rule let
 * them), denied (with what the model reads), or the call was cancelled meanwhile.
 */
export type Approval =
  | { approved: true; arguments?: Record<string, unknown> }
  | { approved: false; reason: string }
  | { cancelled: true };

/** Asks a person whether `request` may run `tool` with `args`; `why` names the rule or hook that asks. */
export async function askApproval(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  args: Record<string, unknown>,
  why: string,
): Promise<Approval> {
  const { state, limits } = ctx;
  const hash = argumentsHash(tool.name, args);
  const shown = JSON.stringify(args);
  const question: InputRequest = {
    requestId: `${request.id}:0:${APPROVAL_KEY}-${hash}`,
    callId: request.id,
    tool: tool.name,
    key: `${APPROVAL_KEY}-${hash}`,
    round: 0,
    kind: 'form',
    message: `May ${tool.name} run with ${shown.length > SHOWN_ARGUMENT_CHARS ? `${shown.slice(0, SHOWN_ARGUMENT_CHARS)}…` : shown}? Asked by ${why}.${tool.approvalEdits ? ' It may be approved with other arguments.' : ''}`,
    requestedSchema: tool.approvalEdits ? APPROVAL_WITH_EDITS_SCHEMA : APPROVAL_SCHEMA,
    askedAt: new Date().toISOString(),
    approval: { argumentsHash: hash, why, ...(tool.approvalEdits ? { edits: tool.approvalEdits } : {}) },
  };
  recordQuestions(state, [question]);
  // The question in history too (the memo, while it waits): the turn's stream shows it where it was asked.
  const memoKey = `${APPROVAL_MEMO_PREFIX}${question.requestId}`;
  upsertMemo({ [memoKey]: question });
  // A cancelCall of the call, or a cancelled turn, ends the wait: the call never ran.
  const scope = new CancellationScope();
  state.running.set(request.id, scope);
  try {
    const answers = await awaitAnswers(state, [question], limits.inputTimeoutMs, { scope });
    const answer = answers?.byRequest.get(question.requestId);
    if (answer?.action === 'accept' && answer.content?.decision === 'approve') {
      // The answer was checked when it came (checkAnswer): edits only where the rule allows them.
      const edited = tool.approvalEdits ? editedArguments(answer.content).arguments : undefined;
      return edited ? { approved: true, arguments: edited } : { approved: true };
    }
    const reason =
      typeof answer?.content?.reason === 'string' && answer.content.reason.trim() !== ''
        ? `: ${answer.content.reason}`
        : '';
    if (answer?.action === 'accept' || answer?.action === 'decline')
      return { approved: false, reason: `a person denied ${tool.name}${reason}` };
    if (answers?.inTime === false)
      return {
        approved: false,
        reason: `${tool.name} was not approved within the turn's input timeout (${Math.round(limits.inputTimeoutMs / 1000)} s), so it did not run`,
      };
    return { approved: false, reason: `the approval of ${tool.name} was cancelled, so it did not run` };
  } catch (err) {
    if (isCancellation(err) && !CancellationScope.current().consideredCancelled) return { cancelled: true };
    throw err;
  } finally {
    state.running.delete(request.id);
    upsertMemo({ [memoKey]: null });
  }
}
