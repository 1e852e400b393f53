/**
 * A 2025-era server's question asked mid-call: the call's activity holds the connection and
 * reports the question with the `legacyInputAsked` Update; the turn records it like any input
 * request, waits for the answer (at most the turn's legacy limit), and hands it to the waiting
 * activity with a short `deliverInputAnswer` on the worker holding the session's servers.
 */
import { isCancellation, proxyActivities, type CancellationScope } from '@temporalio/workflow';
import {
  InputKind,
  LEGACY_INPUT_KEY,
  MAX_INPUT_ROUNDS,
  MAX_INPUT_TEXT_CHARS,
  RefusalType,
  inputRequestId,
  type InputAnswer,
  type InputRequest,
  type LegacyInputReport,
  type LegacyInputTicket,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { deliverOptions } from './activityOptions.js';
import { refusal } from './failures.js';
import { awaitAnswers, recordQuestions } from './questions.js';
import type { TurnContext, TurnState } from './turnState.js';

/** The `legacyInputAsked` validator: a running call of this turn asks a readable question. */
export function checkLegacyReport(state: TurnState, report: unknown): void {
  const problem = legacyReportProblem(state, report);
  if (problem) throw refusal(RefusalType.inputReport, `input request refused: ${problem}`, { field: 'report' });
}

function legacyReportProblem(state: TurnState, report: unknown): string | undefined {
  if (typeof report !== 'object' || report === null) return 'not an object';
  const { callId, tool, request, waitedMs } = report as Partial<LegacyInputReport>;
  if (typeof callId !== 'string') return '"callId" must be a string';
  const attempt = state.askingAttempts.get(callId);
  if (!attempt) return `no call ${JSON.stringify(callId)} of this turn is running a callTool activity`;
  if (typeof tool !== 'string' || tool !== attempt.tool)
    return `call ${JSON.stringify(callId)} runs ${attempt.tool}, not ${JSON.stringify(tool)}`;
  if (typeof waitedMs !== 'number' || !Number.isFinite(waitedMs)) return '"waitedMs" must be a number';
  if ((state.legacyRounds.get(callId) ?? 0) >= MAX_INPUT_ROUNDS)
    return `the call asked ${MAX_INPUT_ROUNDS} times already`;
  if (typeof request !== 'object' || request === null) return '"request" must be an object';
  if (!(InputKind as readonly unknown[]).includes(request.kind))
    return `"request.kind" must be one of ${InputKind.join(', ')}`;
  if (typeof request.message !== 'string' || request.message.length > MAX_INPUT_TEXT_CHARS)
    return `"request.message" must be a string of at most ${MAX_INPUT_TEXT_CHARS} characters`;
  if (
    request.kind === 'form' &&
    (typeof request.requestedSchema !== 'object' ||
      request.requestedSchema === null ||
      Array.isArray(request.requestedSchema))
  )
    return 'a form request needs "requestedSchema"';
  if (request.kind === 'url' && (typeof request.url !== 'string' || request.url.length > MAX_INPUT_TEXT_CHARS))
    return 'a URL request needs "url"';
  return undefined;
}

/**
 * The `legacyInputAsked` handler: records the question as an open input request of the call and
 * starts waiting for its answer; returns the request ID and how long the turn waits.
 */
export function legacyInputAsked(ctx: TurnContext, report: LegacyInputReport): LegacyInputTicket {
  const { state, limits } = ctx;
  const attempt = state.askingAttempts.get(report.callId)!;
  // A question still open from an earlier try of the same activity (its worker was lost, Temporal
  // retried it) has nobody waiting for it any more: this one replaces it.
  for (const stale of [...state.pendingInputs.values()].filter(
    (r) => r.callId === report.callId && r.key === LEGACY_INPUT_KEY,
  )) {
    state.pendingInputs.delete(stale.requestId);
    state.answers.delete(stale.requestId);
  }
  const round = (state.legacyRounds.get(report.callId) ?? 0) + 1;
  state.legacyRounds.set(report.callId, round);
  const { kind, message, requestedSchema, url, elicitationId } = report.request;
  const open: InputRequest = {
    requestId: inputRequestId(report.callId, round, LEGACY_INPUT_KEY),
    callId: report.callId,
    tool: report.tool,
    key: LEGACY_INPUT_KEY,
    round,
    kind,
    message,
    ...(kind === 'form'
      ? { requestedSchema }
      : { url, ...(typeof elicitationId === 'string' ? { elicitationId } : {}) }),
    askedAt: new Date().toISOString(),
  };
  recordQuestions(state, [open]);
  const timeoutMs = Math.max(0, limits.legacyInputTimeoutMs - Math.max(0, report.waitedMs));
  void answerLegacyInput(ctx, open, attempt.scope, timeoutMs, attempt.queue);
  return { requestId: open.requestId, timeoutMs };
}

/**
 * Waits for the answer (or the limit, after which the server is told `cancel`, as for a person who
 * never answered) and delivers it to the activity, unless the call's attempt that asked has ended
 * meanwhile (finished, cancelled, its worker lost): then nobody waits for it any more.
 */
async function answerLegacyInput(
  ctx: TurnContext,
  open: InputRequest,
  scope: CancellationScope,
  timeoutMs: number,
  queue: string,
): Promise<void> {
  const { state, limits } = ctx;
  // Still waited for: the attempt that asked runs, and no later question of it replaced this one.
  const stillAsked = () =>
    state.askingAttempts.get(open.callId)?.scope === scope && state.pendingInputs.has(open.requestId);
  let answer: InputAnswer;
  try {
    const answers = await awaitAnswers(state, [open], timeoutMs, { stillAsked });
    if (!answers) return;
    answer = answers.byRequest.get(open.requestId)!;
  } catch (err) {
    // The turn was cancelled: its calls are, too.
    if (isCancellation(err)) return;
    throw err;
  }
  try {
    await proxyActivities<Activities>(deliverOptions(queue, open.tool, limits)).deliverInputAnswer({
      requestId: open.requestId,
      answer,
    });
  } catch {
    // Undelivered: the call's own wait ends with `cancel` shortly after the limit, or its worker is
    // gone and the call follows the retry rules.
  }
}
