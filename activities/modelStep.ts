/**
 * `modelStep`: one step of a model turn, on any worker. Failures in the three tiers: the
 * operator's configuration or the turn's conversation reference refused (never retried), the
 * model's endpoint refusing the request (never retried: the turn ends saying why), and rate limits,
 * server errors and lost connections (retried, after the provider's `Retry-After` when it gave one).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { FailureType, type ModelStepInput, type ModelStepResult } from '../contract/index.js';
import { ConversationError } from '../models/conversationStore.js';
import { ModelConfigError, ModelRequestError } from '../models/modelErrors.js';
import { stepTextWriter } from '../models/stepText.js';
import { withHeartbeat } from './context.js';
import type { ActivityKit } from './deps.js';

export function modelStepActivity(kit: ActivityKit) {
  return async (input: ModelStepInput): Promise<ModelStepResult> => {
    const { models, scrub, stepText, logger } = kit.deps;
    if (models === undefined) {
      throw ApplicationFailure.create({
        type: FailureType.Config,
        message: 'this worker runs no model turns (it was made without a model service)',
        nonRetryable: true,
      });
    }
    const { workflowExecution, attempt } = Context.current().info;
    const turnId = workflowExecution?.workflowId;
    const text =
      stepText && turnId !== undefined
        ? stepTextWriter(stepText, { turnId, step: input.step, attempt }, logger)
        : undefined;
    try {
      return await withHeartbeat((signal) => models.step(input, signal, (piece) => text?.add(piece)));
    } catch (err) {
      throw modelStepFailure(err, scrub);
    } finally {
      // The text is whole in the log before the step's end reaches history, so a reader that sees the end has it all.
      await text?.close();
    }
  };
}

/** The failure a step's error becomes in history. */
export function modelStepFailure(err: unknown, scrub: (text: string) => string): unknown {
  if (err instanceof ModelConfigError)
    return ApplicationFailure.create({ type: FailureType.Config, message: scrub(err.message), nonRetryable: true });
  if (err instanceof ConversationError)
    return ApplicationFailure.create({ type: FailureType.BadRequest, message: scrub(err.message), nonRetryable: true });
  if (err instanceof ModelRequestError) {
    const { retryable, message, retryAfterMs } = err.failure;
    return ApplicationFailure.create({
      type: retryable ? FailureType.ModelUnavailable : FailureType.ModelRefused,
      message: scrub(message),
      nonRetryable: !retryable,
      ...(retryAfterMs !== undefined ? { nextRetryDelay: retryAfterMs } : {}),
    });
  }
  return err;
}
