/**
 * A 2025-era server's question asked mid-call: the call's activity holds the connection and
 * reports the question with the `legacyInputAsked` Update; the turn records it like any input
 * request, waits for the answer (at most the turn's legacy limit), and hands it to the waiting
 * activity with a short `deliverInputAnswer` on the worker holding the session's servers.
 */
import { condition, isCancellation, proxyActivities, type CancellationScope } from '@temporalio/workflow';
import {
  InputKind, LEGACY_INPUT_KEY, MAX_TASK_QUEUE_CHARS, MAX_INPUT_ROUNDS, MAX_INPUT_TEXT_CHARS, RefusalType, inputRequestId, type InputAnswer, type InputRequest, type LegacyInputReport, type LegacyInputTicket,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { deliverOptions } from './activityOptions.js';
import { refusal } from './failures.js';
import type { TurnContext, TurnState } from './turnState.js';

/** The `legacyInputAsked` validator: a running call of this turn asks a readable question. */
export function checkLegacyReport(state: TurnState, report: unknown): void {
  const problem = legacyReportProblem(state, report);
  if (problem) throw refusal(RefusalType.inputReport, `input request refused: ${problem}`, { field: 'report' });
}

function legacyReportProblem(state: TurnState, report: unknown): string | undefined {
  if (typeof report !== 'object' || report === null) return 'not an object';
  const { callId, tool, request, waitedMs, taskQueue } = report as Partial<LegacyInputReport>;
  if (typeof callId !== 'string' || !state.running.has(callId)) return `no call ${JSON.stringify(callId)} is running in this turn`;
  if (typeof tool !== 'string' || !state.tools.has(tool)) return `no tool ${JSON.stringify(tool)} in this turn`;
  if (typeof waitedMs !== 'number' || !Number.isFinite(waitedMs)) return '"waitedMs" must be a number';
  if (taskQueue !== undefined && (typeof taskQueue !== 'string' || taskQueue.length === 0 || taskQueue.length > MAX_TASK_QUEUE_CHARS)) return `"taskQueue" must be a task queue name of at most ${MAX_TASK_QUEUE_CHARS} characters`;
  if ((state.legacyRounds.get(callId) ?? 0) >= MAX_INPUT_ROUNDS) return `the call asked ${MAX_INPUT_ROUNDS} times already`;
  if (typeof request !== 'object' || request === null) return '"request" must be an object';
  if (!(InputKind as readonly unknown[]).includes(request.kind)) return `"request.kind" must be one of ${InputKind.join(', ')}`;
  if (typeof request.message !== 'string' || request.message.length > MAX_INPUT_TEXT_CHARS) return `"request.message" must be a string of at most ${MAX_INPUT_TEXT_CHARS} characters`;
  if (request.kind === 'form' && (typeof request.requestedSchema !== 'object' || request.requestedSchema === null || Array.isArray(request.requestedSchema))) return 'a form request needs "requestedSchema"';
  if (request.kind === 'url' && (typeof request.url !== 'string' || request.url.length > MAX_INPUT_TEXT_CHARS)) return 'a URL request needs "url"';
  return undefined;
}

/**
 * The `legacyInputAsked` handler: records the question as an open input request of the call and
 * starts waiting for its answer; returns the request ID and how long the turn waits.
 */
export function legacyInputAsked(ctx: TurnContext, report: LegacyInputReport): LegacyInputTicket {
  const { state, limits } = ctx;
  const scope = state.running.get(report.callId)!;
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
    ...(kind === 'form' ? { requestedSchema } : { url, ...(typeof elicitationId === 'string' ? { elicitationId } : {}) }),
    askedAt: new Date().toISOString(),
  };
  state.pendingInputs.set(open.requestId, open);
  state.touch();
  const fields = kind === 'form' && requestedSchema && typeof requestedSchema.properties === 'object' ? Object.keys(requestedSchema.properties ?? {}) : undefined;
  state.details.callWaitsForInput(open.callId, { requestId: open.requestId, mode: kind, ...(fields ? { fields } : {}) });
  const timeoutMs = Math.max(0, limits.legacyInputTimeoutMs - Math.max(0, report.waitedMs));
  void answerLegacyInput(ctx, open, scope, timeoutMs, report.taskQueue);
  return { requestId: open.requestId, timeoutMs };
}

/**
 * Waits for the answer (or the limit, after which the server is told `cancel`, as for a person who
 * never answered) and delivers it to the activity, unless the call's attempt that asked has ended
 * meanwhile (finished, cancelled, its worker lost): then nobody waits for it any more.
 */
async function answerLegacyInput(ctx: TurnContext, open: InputRequest, scope: CancellationScope, timeoutMs: number, queue: string | undefined): Promise<void> {
  const { state, limits } = ctx;
  const id = open.requestId;
  const asked = () => state.running.get(open.callId) === scope;
  let answer: InputAnswer;
  try {
    if (timeoutMs > 0) await condition(() => state.answers.has(id) || !asked(), timeoutMs, { summary: `waiting for an answer to ${open.tool}` });
    if (!asked()) return;
    answer = state.answers.get(id) ?? { action: 'cancel' };
  } catch (err) {
    // The turn was cancelled: its calls are, too.
    if (isCancellation(err)) return;
    throw err;
  } finally {
    state.pendingInputs.delete(id);
    state.answers.delete(id);
    state.details.callWaitsForInput(open.callId, undefined);
  }
  try {
    await proxyActivities<Activities>(deliverOptions(queue ?? state.workerQueue, open.tool, limits)).deliverInputAnswer({ requestId: id, answer });
  } catch {
    // Undelivered: the call's own wait ends with `cancel` shortly after the limit, or its worker is
    // gone and the call follows the retry rules.
  }
}
