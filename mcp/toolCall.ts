/**
 * One `tools/call` and its rounds of input: rounds this client answers alone (roots, state only)
 * are sent again here; a round that needs a person ends the call, and the turn sends the answers
 * with a new call.
 */
import {
  isInputRequiredResult,
  type CallToolResult,
  type Client,
  type Root,
  type Tool,
} from '@modelcontextprotocol/client';
import { MAX_INPUT_ROUNDS, type InputReply } from '../contract/index.js';
import { UnservedInputRequestError, readInputRequired, type NeedsInput } from './inputRequests.js';
import { CallDeadline, MAX_TIMER_MS, type LegacyInputAsker } from './legacyInputs.js';
import type { DeclinedInput, LegacyInputListener } from './legacyQuestions.js';
import type { PendingRequests } from './liveness.js';
import { RefusedCallError } from './serverErrors.js';

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /** A later attempt of a call whose server asked for input: the answers and the server's state, sent as given. */
  inputReply?: InputReply;
  /**
   * The caller can ask a person (the turn's durable wait): a round of questions ends the call with
   * {@link NeedsInput}. Otherwise such a round fails the call with {@link UnservedInputRequestError}.
   */
  askPerson?: boolean;
  /** Told of each 2025-era `elicitation/create` this worker declined while the call was the only one in flight. */
  onDeclinedInput?: (request: DeclinedInput) => void;
  /**
   * Asks a person a 2025-era `elicitation/create` that arrives while this call is the only one in
   * flight on the server; the server gets the answer. The call's timeout stands still meanwhile.
   * Absent: such a question is declined at once ({@link onDeclinedInput}).
   */
  askLegacyInput?: LegacyInputAsker;
  /**
   * False when {@link askLegacyInput} never waits for a person (it ends the call instead, as a local
   * activity's does): the call keeps the SDK's own timeout, with no pausable deadline of its own.
   */
  legacyInputWaits?: boolean;
}

/** What a call is sent over: the server's client, its requests in flight, and the roots it is offered. */
export interface CallChannel {
  client: Client;
  pending: PendingRequests;
  roots?: () => Root[];
}

/**
 * The definition sent along with a call, so a modern server gets the tool's designated parameter
 * headers; without its output schema, since checking structured content after the tool ran would
 * report a call that already had its effect as a bad request. Recorded as it came.
 */
export function sentDefinition(listed: readonly Tool[], tool: string): Tool {
  const found = listed.find((t) => t.name === tool);
  return found ? { ...found, outputSchema: undefined } : { name: tool, inputSchema: { type: 'object' } };
}

/** The fields a call's first round carries: the answers and state of an earlier attempt, if any. */
function replyFields(reply: InputReply | undefined): Record<string, unknown> {
  if (!reply) return {};
  return {
    inputResponses: { ...reply.ownResponses, ...reply.inputResponses },
    ...(reply.requestState !== undefined ? { requestState: reply.requestState } : {}),
  };
}

/**
 * Sends the call, round after round, until the server answers it or asks a person; at most
 * {@link MAX_INPUT_ROUNDS} rounds. `listener` (a call listening for 2025-era questions) is given
 * each round's deadline, which stands still while a person answers.
 */
export async function callInRounds(
  channel: CallChannel,
  tool: string,
  args: Record<string, unknown>,
  options: CallOptions,
  toolDefinition: Tool,
  listener: LegacyInputListener | undefined,
): Promise<CallToolResult | NeedsInput> {
  let retry = replyFields(options.inputReply);
  for (let round = 1; ; round += 1) {
    const params = { name: tool, arguments: args, ...retry } as { name: string; arguments: Record<string, unknown> };
    // A call that may wait for a person keeps its own timeout, which stands still during the wait;
    // the SDK's cannot.
    const deadline =
      options.askLegacyInput && options.legacyInputWaits !== false ? new CallDeadline(options.timeoutMs) : undefined;
    if (listener) listener.deadline = deadline;
    const onprogress =
      deadline && options.onProgress
        ? (p: Parameters<NonNullable<CallOptions['onProgress']>>[0]) => {
            deadline.reset();
            options.onProgress?.(p);
          }
        : deadline
          ? () => deadline.reset()
          : options.onProgress;
    const result = await channel.pending
      .run(
        (signal) =>
          channel.client.callTool(params, {
            signal: deadline ? AbortSignal.any([signal, deadline.signal]) : signal,
            timeout: deadline ? MAX_TIMER_MS : options.timeoutMs,
            resetTimeoutOnProgress: true,
            onprogress,
            toolDefinition,
            allowInputRequired: true,
          }),
        options.signal,
      )
      .finally(() => deadline?.stop());
    if (!isInputRequiredResult(result)) return result;
    const needs = readInputRequired(result, channel.roots);
    if (needs.requests.length > 0) {
      if (options.askPerson === true) return needs;
      throw new UnservedInputRequestError(`${tool} asks a person for input, and this caller cannot ask one`);
    }
    if (round >= MAX_INPUT_ROUNDS)
      throw new RefusedCallError(`the server asked for input ${round} times without finishing the call`);
    retry = {
      ...(Object.keys(needs.ownResponses).length > 0 ? { inputResponses: needs.ownResponses } : {}),
      ...(needs.requestState !== undefined ? { requestState: needs.requestState } : {}),
    };
  }
}
