/**
 * Every error the API answers with, and the one place other errors are mapped to them. The body is
 * always `{ error: { code, message, field?, requestId } }`; `code` is stable, the message is for people.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import {
  CancelledFailure,
  TerminatedFailure,
  TimeoutFailure,
  WorkflowNotFoundError,
  type ApplicationFailure,
} from '@temporalio/common';
import { RefusalType, type RefusalDetail } from '../contract/index.js';
import { GrpcStatus, applicationFailureOf, findCause, grpcStatusOf } from '../client/failures.js';
import { SecretInInputError } from '../client/turnClient.js';

/** The stable error codes, with their HTTP status. */
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  call_id_conflict: 409,
  turn_ended: 409,
  turn_exists: 409,
  turn_failed: 409,
  shelf_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  call_refused: 422,
  answer_refused: 422,
  entry_refused: 422,
  secret_in_input: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  turn_not_answering: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** The request field that was wrong (`body.arguments.text`, `path.sessionId`, `query.wait`). */
    readonly field?: string,
    /** Seconds, for `Retry-After`. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  get status(): (typeof ERROR_STATUS)[ErrorCode] {
    return ERROR_STATUS[this.code];
  }
}

/** Why a run has closed, as `result()` reports it: the turn ended without a result of its own. */
const isClosedRun = (e: Error) =>
  e instanceof TerminatedFailure || e instanceof CancelledFailure || e instanceof TimeoutFailure;

/** The request field a refusal names (`RefusalDetail`), under `body.`; `fallback` when it names none. */
function refusedField(failure: ApplicationFailure, fallback: string): string {
  const detail = failure.details?.[0] as Partial<RefusalDetail> | undefined;
  return typeof detail?.field === 'string' && detail.field !== '' ? `body.${detail.field}` : fallback;
}

/** What the turn refused, by its type: the refusals its Update validators and its input checks throw. */
function refusalError(failure: ApplicationFailure): ApiError | undefined {
  switch (failure.type) {
    case RefusalType.turnEnded:
      return new ApiError('turn_ended', 'the turn has ended; start a new turn');
    case RefusalType.callRequest:
      return new ApiError('call_refused', `the turn refused the call: ${failure.message}`);
    case RefusalType.inputAnswer:
      return failure.details?.[0] && (failure.details[0] as Partial<RefusalDetail>).field === 'requestId'
        ? new ApiError('not_found', failure.message, 'path.requestId')
        : new ApiError('answer_refused', failure.message, refusedField(failure, 'body'));
    case RefusalType.turnInput:
      return new ApiError(
        'call_refused',
        `the turn refused its input: ${failure.message}`,
        refusedField(failure, 'body.calls'),
      );
    default:
      return undefined;
  }
}

/**
 * Maps what a handler threw to an API error, by the error's class and, for what a workflow threw,
 * by its failure type (never by a message's text). Only known kinds carry their message; anything
 * else is `internal` with a generic message (the log has the details, under the request ID).
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof SecretInInputError) return new ApiError('secret_in_input', err.message);
  const failure = applicationFailureOf(err);
  const refused =
    failure && (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowFailedError)
      ? refusalError(failure)
      : undefined;
  if (refused) return refused;
  if (err instanceof WorkflowUpdateFailedError)
    return new ApiError('call_refused', `the turn refused the call: ${err.cause?.message ?? err.message}`);
  if (err instanceof WorkflowFailedError && findCause(err.cause, isClosedRun))
    return new ApiError('turn_ended', 'the turn has ended; start a new turn');
  if (err instanceof WorkflowExecutionAlreadyStartedError)
    return new ApiError(
      'turn_exists',
      'a turn with this number exists already; leave out "turn" to start the next one',
      'body.turn',
    );
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)
    return new ApiError(
      'turn_not_answering',
      'the turn did not answer in time; sending the same request again is safe',
      undefined,
      1,
    );
  if (err instanceof WorkflowNotFoundError) return new ApiError('not_found', 'no such turn');
  const code = grpcStatusOf(err);
  if (code === GrpcStatus.NOT_FOUND) return new ApiError('not_found', 'no such turn');
  if (code === GrpcStatus.RESOURCE_EXHAUSTED)
    return new ApiError('rate_limited', 'Temporal is rate-limiting requests; try again shortly', undefined, 1);
  if (code === GrpcStatus.UNAVAILABLE || code === GrpcStatus.DEADLINE_EXCEEDED)
    return new ApiError('unavailable', 'Temporal is not reachable; try again shortly', undefined, 2);
  return new ApiError('internal', 'internal error');
}

/** The JSON body of an error answer. */
export function errorBody(
  err: ApiError,
  requestId: string,
): { error: { code: ErrorCode; message: string; field?: string; requestId: string } } {
  return { error: { code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}), requestId } };
}
