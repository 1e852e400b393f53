/**
 * A call whose server asks a person (2026-07-28 `input_required`): its questions become recorded
 * input requests of the turn, the turn waits for their answers with nothing running (a timer, no
 * activity, no held connection), and the call runs again with the answers and the server's state.
 */
import type { CancellationScope } from '@temporalio/workflow';
import {
  MAX_INPUT_ROUNDS,
  RefusalType,
  editedArguments,
  inputAnswerProblem,
  inputRequestId,
  type CallOutcome,
  type CallRequest,
  type InputAnswer,
  type InputAnswerReceipt,
  type InputReply,
  type InputRequest,
  type InputRequiredOutcome,
} from '../contract/index.js';
import { errorOutcome, refusal } from './failures.js';
import { awaitAnswers, recordQuestions } from './questions.js';
import type { TurnContext, TurnState } from './turnState.js';

/** Where a call is in its rounds of questions. */
export interface InputRounds {
  round: number;
  /** A round went unanswered: the server was told it was cancelled and is not waited for again. */
  timedOut: boolean;
}

/**
 * Records the questions of `asked`, waits for every answer (or the turn's input timeout, after which
 * the unanswered ones count as cancelled, as a person who never answered), and returns what the
 * next attempt sends, or the outcome the call ends with instead.
 */
export async function waitForAnswers(
  ctx: TurnContext,
  request: CallRequest,
  asked: InputRequiredOutcome,
  rounds: InputRounds,
  scope: CancellationScope,
): Promise<InputReply | CallOutcome> {
  const { state, limits } = ctx;
  rounds.round += 1;
  if (rounds.timedOut)
    return errorOutcome(
      'timeout',
      `${request.name} asked again after its earlier questions went unanswered for ${limits.inputTimeoutMs / 1000} s; the call did not finish`,
    );
  if (rounds.round > MAX_INPUT_ROUNDS)
    return errorOutcome(
      'bad_request',
      `${request.name} asked for input ${MAX_INPUT_ROUNDS} times without finishing; the call was given up`,
    );
  const askedAt = new Date().toISOString();
  const open: InputRequest[] = asked.requests.map((spec) => ({
    ...spec,
    requestId: inputRequestId(request.id, rounds.round, spec.key),
    callId: request.id,
    tool: request.name,
    round: rounds.round,
    askedAt,
  }));
  recordQuestions(state, open);
  const answers = (await awaitAnswers(state, open, limits.inputTimeoutMs, { scope }))!;
  if (!answers.inTime) rounds.timedOut = true;
  const inputResponses: Record<string, InputAnswer> = {};
  for (const r of open) inputResponses[r.key] = answers.byRequest.get(r.requestId)!;
  return {
    inputResponses,
    ...(asked.requestState !== undefined ? { requestState: asked.requestState } : {}),
    ...(asked.ownResponses ? { ownResponses: asked.ownResponses } : {}),
  };
}

/** The `answerInput` validator: the request is open and the answer fits its schema; else refused, naming the field. */
export function checkAnswer(state: TurnState, requestId: unknown, answer: unknown): void {
  const open = typeof requestId === 'string' ? state.pendingInputs.get(requestId) : undefined;
  if (!open) {
    throw refusal(
      RefusalType.inputAnswer,
      `no open input request ${JSON.stringify(requestId)} in this turn: it was answered, timed out, or never asked`,
      { field: 'requestId' },
    );
  }
  const problem = inputAnswerProblem(open, answer);
  if (problem)
    throw refusal(RefusalType.inputAnswer, `answer to ${open.requestId} refused: ${problem.message}`, {
      field: problem.field,
    });
  const edit = open.approval?.edits === undefined ? {} : editedArguments((answer as InputAnswer).content);
  if (edit.problem)
    throw refusal(RefusalType.inputAnswer, `answer to ${open.requestId} refused: ${edit.problem}`, {
      field: 'content.arguments',
    });
}

/** The `answerInput` handler: keeps only the fields the schema names, never more. */
export function takeAnswer(state: TurnState, requestId: string, answer: InputAnswer): InputAnswerReceipt {
  state.answers.set(
    requestId,
    answer.action === 'accept' && answer.content !== undefined
      ? { action: 'accept', content: answer.content }
      : { action: answer.action },
  );
  return { requestId, action: answer.action };
}
