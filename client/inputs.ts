/** The caller's side of input requests: reading the open ones and answering them, by hand or by a callback. */
import type { WorkflowHandle } from '@temporalio/client';
import {
  INPUT_REQUEST_ID_PATTERN,
  type InputAnswer,
  type InputAnswerReceipt,
  type InputRequest,
} from '../contract/index.js';
import { answerInputUpdate as answerInputDef, statusQuery, type AgentTurnWorkflow } from '../contract/definitions.js';
import { applicationFailureOf } from './failures.js';

/**
 * Answers an input request for a call (see {@link CallInputOptions.onInput}). Return the answer, or
 * undefined to leave the question open for someone else (`durable-mcp answer`, the API). Called
 * again with `refused` (the turn's reason, naming the field) when the turn refused its last answer.
 */
export type InputHandler = (
  request: InputRequest,
  context: InputContext,
) => InputAnswer | undefined | Promise<InputAnswer | undefined>;

/** What an {@link InputHandler} is told besides the request. */
export interface InputContext {
  /** The turn that asks. */
  turnId: string;
  /** Why the turn refused the last answer to this request (it names the field). */
  refused?: string;
}

/** Options of a call that may ask a person. */
export interface CallInputOptions {
  /** Answers the call's input requests as they are asked; without it they wait for an answer sent by other means. */
  onInput?: InputHandler;
  /** How often the turn is asked for new input requests while the call runs (default 1000 ms). */
  inputPollMs?: number;
}

/** The open input requests of a turn (all calls, or the one of `callId`). */
export async function pendingInputsOf(
  handle: WorkflowHandle<AgentTurnWorkflow>,
  callId?: string,
): Promise<InputRequest[]> {
  const progress = await handle.query(statusQuery);
  return (progress.pendingInputs ?? []).filter((r) => callId === undefined || r.callId === callId);
}

/** Sends one answer; its Update ID is the request ID, so a second answer to the same request returns the first's receipt. */
export function sendAnswer(
  handle: WorkflowHandle<AgentTurnWorkflow>,
  requestId: string,
  answer: InputAnswer,
): Promise<InputAnswerReceipt> {
  if (!INPUT_REQUEST_ID_PATTERN.test(requestId))
    return Promise.reject(
      new Error(`${JSON.stringify(requestId.slice(0, 200))} is not an input request ID (<callId>:<round>:<key>)`),
    );
  return handle.executeUpdate(answerInputDef, { args: [requestId, answer], updateId: requestId });
}

/**
 * Asks `onInput` about each input request of call `callId` (every call: undefined) while `running`
 * is unsettled, and sends its answers. A refused answer leaves the question open: `onInput` is
 * asked again with the reason.
 */
export async function answerWhileRunning(
  handle: WorkflowHandle<AgentTurnWorkflow>,
  callId: string | undefined,
  running: Promise<unknown>,
  options: CallInputOptions & { onInput: InputHandler },
): Promise<void> {
  let done = false;
  void running.then(
    () => (done = true),
    () => (done = true),
  );
  const handled = new Set<string>();
  const refusals = new Map<string, string>();
  const pollMs = options.inputPollMs ?? 1000;
  while (!done) {
    let open: InputRequest[] = [];
    try {
      open = await pendingInputsOf(handle, callId);
    } catch {
      // The turn closed or the query failed once: the call's own promise says which.
    }
    for (const request of open) {
      if (done || handled.has(request.requestId)) continue;
      handled.add(request.requestId);
      const refused = refusals.get(request.requestId);
      const answer = await options.onInput(request, {
        turnId: handle.workflowId,
        ...(refused !== undefined ? { refused } : {}),
      });
      if (answer === undefined) continue;
      try {
        await sendAnswer(handle, request.requestId, answer);
      } catch (err) {
        const refusal = applicationFailureOf(err);
        if (!refusal) throw err;
        refusals.set(request.requestId, refusal.message);
        handled.delete(request.requestId);
      }
    }
    if (!done) await Promise.race([new Promise((wake) => setTimeout(wake, pollMs)), running.catch(() => undefined)]);
  }
}
