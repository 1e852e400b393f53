/**
 * The one way a turn asks a person. Every question, whichever way a server asks it (a 2026-07-28
 * call's or task's `input_required`, a 2025-era server's elicitation mid-call or over a task's
 * `tasks/result`), is recorded as an open input request of the turn (the status Query, the API and
 * the Temporal UI show it), answered by the `answerInput` Update, and waited for on a durable timer
 * with nothing running. A question left unanswered counts as `cancel`, as from a person who never
 * answered. How each era carries the answer back to the server stays with its caller.
 */
import { condition, type CancellationScope } from '@temporalio/workflow';
import type { InputAnswer, InputRequest } from '../contract/index.js';
import type { TurnState } from './turnState.js';

/** Records `open` as the turn's open input requests and shows the first one in the UI's details. */
export function recordQuestions(state: TurnState, open: readonly InputRequest[]): void {
  for (const r of open) state.pendingInputs.set(r.requestId, r);
  state.touch();
  // The UI's current details name the question's fields, never its message or an answer.
  const first = open[0];
  if (!first) return;
  const fields =
    first.kind === 'form' && first.requestedSchema && typeof first.requestedSchema.properties === 'object'
      ? Object.keys(first.requestedSchema.properties ?? {})
      : undefined;
  state.details.callWaitsForInput(first.callId, {
    requestId: first.requestId,
    mode: first.kind,
    ...(fields ? { fields } : {}),
  });
}

/** What a wait for answers ended with. */
export interface Answers {
  /** Each question's answer by its request ID; `cancel` for one not answered. */
  byRequest: Map<string, InputAnswer>;
  /** Every question was answered before the timeout. */
  inTime: boolean;
}

/**
 * Waits until every question of `open` (recorded by {@link recordQuestions}) is answered, or
 * `timeoutMs` passes, or `stillAsked` turns false (nobody waits for the answers any more: then
 * `undefined`). Runs in `scope` (the call's) when given. The questions are closed however it ends.
 */
export async function awaitAnswers(
  state: TurnState,
  open: readonly InputRequest[],
  timeoutMs: number,
  options: { scope?: CancellationScope; stillAsked?: () => boolean } = {},
): Promise<Answers | undefined> {
  const stillAsked = options.stillAsked ?? (() => true);
  const tool = open[0]?.tool ?? 'a tool';
  const summary = `waiting for ${open.length === 1 ? 'an answer' : `${open.length} answers`} to ${tool}`;
  const answered = () => open.every((r) => state.answers.has(r.requestId));
  const wait = () => condition(() => answered() || !stillAsked(), timeoutMs, { summary });
  try {
    const inTime = timeoutMs > 0 ? await (options.scope ? options.scope.run(wait) : wait()) : answered();
    if (!stillAsked()) return undefined;
    const unanswered: InputAnswer = { action: 'cancel' };
    const byRequest = new Map(open.map((r) => [r.requestId, state.answers.get(r.requestId) ?? unanswered]));
    return { byRequest, inTime: inTime && answered() };
  } finally {
    for (const r of open) {
      state.pendingInputs.delete(r.requestId);
      state.answers.delete(r.requestId);
    }
    if (open[0]) state.details.callWaitsForInput(open[0].callId, undefined);
  }
}
