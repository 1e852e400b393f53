/**
 * A model turn's steps as its history shows them: each `modelStep` activity, where it goes among
 * the turn's calls, its attempts, and what the model answered. Read by transcript.ts.
 */
import type { ModelStepInput, ModelStepResult, ModelUsage, TurnResult } from '../contract/index.js';

/** One step of a model turn (a `modelStep` activity) as the history shows it. */
export interface TranscriptModelStep {
  /** 1-based step of the turn. */
  step: number;
  /** The model's name in the worker's `models.json`. */
  model: string;
  /** How many of the transcript's `calls` were made before the step was asked: its place among them. */
  callsBefore: number;
  /** The step's attempts (a step retried after a rate limit or a lost worker has more than one). */
  attempts: number;
  /**
   * Failed attempts, in order. History keeps only the last failure of a retried activity: the
   * one before the attempt that answered, or the one that ended the step.
   */
  failures: string[];
  /** What the model said (absent until the step answered, as are the fields below). */
  text?: string;
  /** The calls it asked for: their IDs in the transcript's `calls`, and their tools. */
  toolCalls?: { id: string; name: string }[];
  /** The provider's finish reason (`stop`, `tool-calls`, `length`, ...). */
  finishReason?: string;
  usage?: ModelUsage;
  /** The model ID the provider answered for. */
  modelId?: string;
}

/** What of a transcript being read the model steps use (the transcript's own state). */
export interface ModelStepsState {
  t: { modelSteps?: TranscriptModelStep[]; answer?: string };
  calls: Map<string, { outcome?: unknown }>;
  /** The call IDs the run's model steps gave their calls, made unique as the turn makes them. */
  modelCallIds: Set<string>;
  callFor(id: string, name?: string, args?: Record<string, unknown>): unknown;
}

/** A step asked: it goes after the calls made so far. */
export function modelStepScheduled(state: ModelStepsState, input: ModelStepInput | undefined): TranscriptModelStep {
  const step: TranscriptModelStep = {
    step: input?.step ?? 0,
    model: input?.model ?? '',
    callsBefore: state.calls.size,
    attempts: 1,
    failures: [],
  };
  (state.t.modelSteps ??= []).push(step);
  return step;
}

/** A step's attempt that answered or failed for good: its number, and the failure before it. */
export function modelStepStarted(step: TranscriptModelStep, attempt: number | null | undefined, lastFailure?: string) {
  step.attempts = attempt || 1;
  if (lastFailure !== undefined) step.failures.push(lastFailure);
}

/**
 * A step answered. The calls it asked for are made now, as the turn makes them (a call the turn
 * refuses unrun has no activity to place it by); each keeps the model's ID unless an earlier step's
 * call has it, then `#2`, `#3`, ... as the workflow numbers them (`workflows/modelLoop.ts` callIds).
 */
export function modelStepAnswered(state: ModelStepsState, step: TranscriptModelStep, result?: ModelStepResult): void {
  if (!result) return;
  step.text = result.text;
  step.finishReason = result.finishReason;
  step.usage = result.usage;
  step.modelId = result.modelId;
  step.toolCalls = result.toolCalls.map((c) => {
    let id = c.id;
    for (let n = 2; state.modelCallIds.has(id); n++) id = `${c.id}#${n}`;
    state.modelCallIds.add(id);
    state.callFor(id, c.name, c.arguments);
    return { id, name: c.name };
  });
}

/**
 * A model turn ended: its answer, and its steps' calls as it recorded them. Calls its last step
 * asked for that never ran (the step limit, the deadline or `endTurn` came first) are dropped; no
 * step comes after them, so no step's place moves.
 */
export function modelTurnEnded(state: ModelStepsState, result: TurnResult): void {
  state.t.answer = result.answer;
  const recorded = new Set(result.calls.map((c) => c.id));
  for (const [id, call] of state.calls) {
    if (state.modelCallIds.has(id) && !recorded.has(id) && !call.outcome) state.calls.delete(id);
  }
  for (const record of result.modelSteps ?? []) {
    const step = state.t.modelSteps?.find((s) => s.step === record.step);
    if (step) step.toolCalls = record.toolCalls;
  }
}
