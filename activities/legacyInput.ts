/**
 * A 2025-era server asks a person mid-call (`elicitation/create`): the `callTool` activity holds
 * the call, reports the question to its own turn (a recorded Update, and its heartbeat details),
 * and waits here for the answer, which `deliverInputAnswer` hands over in this process.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import {
  FailureType,
  LEGACY_INPUT_GRACE_MS,
  UpdateName,
  type CallToolInput,
  type DeliverInputAnswerInput,
  type InputRequestSpec,
  type LegacyInputReport,
  type LegacyInputTicket,
} from '../contract/index.js';
import type { LegacyInputAsker } from '../mcp/legacyInputs.js';
import { currentTurnId } from './context.js';
import type { ActivityKit } from './deps.js';
import { scrubResult } from './history.js';

/** What a waiting call shows in its heartbeat details: the question, never an answer. */
export interface WaitingForInputDetails {
  waitingForInput: { requestId?: string; kind: InputRequestSpec['kind'] };
}

/**
 * The asker of one `callTool` attempt. `show` sets its heartbeat details (undefined: back to what
 * they were). The waits of one attempt share the turn's limit, which the turn counts down from
 * `waitedMs`. Throws when the turn does not take the question (it then is declined).
 */
export function legacyInputAsker(
  kit: ActivityKit,
  ctx: Context,
  input: Pick<CallToolInput, 'callId' | 'name'>,
  turnId: string,
  scrub: (text: string) => string,
  show: (details: WaitingForInputDetails | undefined) => void,
): LegacyInputAsker {
  let waitedMs = 0;
  let asked = 0;
  return async (request, signal) => {
    asked += 1;
    const began = Date.now();
    show({ waitingForInput: { kind: request.kind } });
    try {
      const report: LegacyInputReport = {
        callId: input.callId,
        tool: input.name,
        request: scrubResult(request, scrub),
        waitedMs,
      };
      // This run of the turn: a turn continues as new only once no call is in flight.
      const handle = ctx.client.workflow.getHandle(turnId, ctx.info.workflowExecution?.runId);
      // The Update ID makes a retried send of the same question one question.
      const ticket = await handle.executeUpdate<LegacyInputTicket, [LegacyInputReport]>(UpdateName.legacyInputAsked, {
        args: [report],
        updateId: `${ctx.info.activityId}:${ctx.info.attempt}:legacy:${asked}`,
      });
      show({ waitingForInput: { requestId: ticket.requestId, kind: request.kind } });
      return await kit.legacyWaits.wait(
        turnId,
        ticket.requestId,
        ticket.timeoutMs + LEGACY_INPUT_GRACE_MS,
        AbortSignal.any([signal, ctx.cancellationSignal]),
      );
    } finally {
      waitedMs += Date.now() - began;
      show(undefined);
    }
  };
}

/**
 * `deliverInputAnswer`: hands an answer to the call of this turn that waits for it in this worker.
 * The turn is the one Temporal names (never one the input names), so no turn can answer another's
 * question. Returns whether a call was still waiting.
 */
export function deliverInputAnswerActivity(
  kit: ActivityKit,
): (input: DeliverInputAnswerInput) => Promise<{ delivered: boolean }> {
  return async function deliverInputAnswer(input) {
    const turnId = currentTurnId();
    if (typeof input?.requestId !== 'string' || typeof input.answer?.action !== 'string') {
      throw ApplicationFailure.create({
        type: FailureType.BadRequest,
        message: 'deliverInputAnswer needs a requestId and an answer',
        nonRetryable: true,
      });
    }
    return { delivered: kit.legacyWaits.deliver(turnId, input.requestId, input.answer) === 'delivered' };
  };
}
