/**
 * Every error the API answers with, and the one place other errors are mapped to them. The body is
 * always `{ error: { code, message, field?, requestId } }`; `code` is stable, the message is for people.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, isGrpcServiceError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { TURN_INPUT_FAILURE_TYPE } from '../contract/index.js';
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
  shelf_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  call_refused: 422,
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

/** gRPC status codes the API tells apart. */
const GRPC = { NOT_FOUND: 5, ALREADY_EXISTS: 6, RESOURCE_EXHAUSTED: 8, FAILED_PRECONDITION: 9, UNAVAILABLE: 14, DEADLINE_EXCEEDED: 4 } as const;

function grpcCode(err: unknown): number | undefined {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 8; e = e.cause as { cause?: unknown } | undefined, depth += 1) {
    if (isGrpcServiceError(e)) return e.code;
  }
  return undefined;
}

function messages(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 8; e = e.cause as typeof e, depth += 1) {
    if (typeof e.message === 'string' && e.message && !parts.includes(e.message)) parts.push(e.message);
  }
  return parts.join(': ');
}

/**
 * Maps what a handler threw to an API error. Only known kinds carry their message; anything else is
 * `internal` with a generic message (the log has the details, under the request ID).
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof SecretInInputError) return new ApiError('secret_in_input', err.message);
  const text = messages(err);
  if (err instanceof WorkflowUpdateFailedError) {
    // The turn's Update validator refused the call (its bounds, a reserved ID, an ended turn).
    if (/turn has ended/.test(text)) return new ApiError('turn_ended', 'the turn has ended; start a new turn');
    return new ApiError('call_refused', `the turn refused the call: ${(err.cause as Error | undefined)?.message ?? text}`);
  }
  if (/already completed|workflow execution.*(completed|terminated|timed out|canceled)/i.test(text)) {
    return new ApiError('turn_ended', 'the turn has ended; start a new turn');
  }
  if (err instanceof WorkflowExecutionAlreadyStartedError) return new ApiError('turn_exists', 'a turn with this number exists already; leave out "turn" to start the next one', 'body.turn');
  if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure && err.cause.type === TURN_INPUT_FAILURE_TYPE) {
    return new ApiError('call_refused', `the turn refused its input: ${err.cause.message}`, 'body.calls');
  }
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return new ApiError('turn_not_answering', 'the turn did not answer in time; sending the same request again is safe', undefined, 1);
  if (err instanceof WorkflowNotFoundError) return new ApiError('not_found', 'no such turn');
  const code = grpcCode(err);
  if (code === GRPC.NOT_FOUND) return new ApiError('not_found', 'no such turn');
  if (code === GRPC.RESOURCE_EXHAUSTED) return new ApiError('rate_limited', 'Temporal is rate-limiting requests; try again shortly', undefined, 1);
  if (code === GRPC.UNAVAILABLE || code === GRPC.DEADLINE_EXCEEDED) return new ApiError('unavailable', 'Temporal is not reachable; try again shortly', undefined, 2);
  return new ApiError('internal', 'internal error');
}

/** The JSON body of an error answer. */
export function errorBody(err: ApiError, requestId: string): { error: { code: ErrorCode; message: string; field?: string; requestId: string } } {
  return { error: { code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}), requestId } };
}
