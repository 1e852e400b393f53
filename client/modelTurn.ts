/**
 * A model turn as its caller sees it: the turn's steps as they finish (read from the turn's
 * status, so a caller that reconnects sees every step again), and its result with the answer.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { statusQuery } from '../contract/definitions.js';
import type { AgentTurnWorkflow } from '../contract/definitions.js';
import type { ModelStepRecord, ModelTurnInput, TurnResult } from '../contract/index.js';
import type { CallInputOptions } from './inputs.js';
import type { StartTurnOptions } from './options.js';
import { TurnFailedError } from './turnStart.js';

/** Options of `TurnClient.startModelTurn`. */
export interface ModelTurnOptions extends StartTurnOptions, Pick<CallInputOptions, 'onInput' | 'inputPollMs'> {
  /**
   * The model and the prompt. Without `conversation`, the turn continues the conversation of the
   * session's latest model turn; `newConversation` starts a new one instead.
   */
  model: ModelTurnInput & { newConversation?: boolean };
  /** How often {@link ModelTurnRun.steps} asks the turn for new steps (default 250 ms). */
  stepPollMs?: number;
}

const DEFAULT_STEP_POLL_MS = 250;

/** One running model turn. */
export class ModelTurnRun {
  private readonly finished: Promise<TurnResult>;

  constructor(
    readonly handle: WorkflowHandle<AgentTurnWorkflow>,
    finished: Promise<TurnResult>,
    private readonly pollMs: number = DEFAULT_STEP_POLL_MS,
  ) {
    // A failed turn says why (the model refused, a model the operator did not name) without unwrapping.
    this.finished = finished.catch((err: unknown) => {
      throw err instanceof WorkflowFailedError ? new TurnFailedError(handle.workflowId, err) : err;
    });
    // The caller may only iterate the steps: a failed turn must not also be an unhandled rejection.
    this.finished.catch(() => undefined);
  }

  get turnId(): string {
    return this.handle.workflowId;
  }

  /** The turn's result: `answer`, `modelSteps`, the calls, and the `conversation` to continue. */
  result(): Promise<TurnResult> {
    return this.finished;
  }

  /** Each model step once, in order, as it finishes; ends when the turn ends (throws as {@link result} does). */
  async *steps(): AsyncGenerator<ModelStepRecord> {
    let seen = 0;
    let done = false;
    void this.finished.then(
      () => (done = true),
      () => (done = true),
    );
    while (!done) {
      const progress = await this.handle.query(statusQuery).catch(() => undefined);
      for (const step of (progress?.modelSteps ?? []).slice(seen)) {
        seen += 1;
        yield step;
      }
      if (!done) await Promise.race([sleep(this.pollMs), this.finished.catch(() => undefined)]);
    }
    const result = await this.finished;
    yield* (result.modelSteps ?? []).slice(seen);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
