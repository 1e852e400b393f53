/**
 * What a refusal or failure from Temporal was, by its type: the one place the API, the CLI and the
 * client look into an error's causes, so none of them reads a message's text to decide.
 */
import { isGrpcServiceError } from '@temporalio/client';
import { findCause } from '../contract/failureCauses.js';
export { applicationFailureOf, failureTypeOf, findCause } from '../contract/failureCauses.js';

/** gRPC status codes callers of Temporal decide on. */
export const GrpcStatus = {
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  UNAVAILABLE: 14,
} as const;

/** The gRPC status code of the first gRPC error in `err`'s cause chain, or undefined. */
export function grpcStatusOf(err: unknown): number | undefined {
  return findCause(err, (e): e is Error & { code: number } => isGrpcServiceError(e))?.code;
}
