/**
 * Reading a failure's type wherever Temporal wrapped it: the clients, the API, the CLI and the
 * shelf's client decide on a `RefusalType` or `FailureType` from this contract, never on a message.
 * Not in the contract's index: only processes that talk to Temporal load Temporal's failure classes.
 */
import { ApplicationFailure } from '@temporalio/common';

/**
 * The first `ApplicationFailure` in `err`'s cause chain (an Update a validator refused, a failed
 * workflow, a failed activity), or undefined. Temporal wraps what a workflow threw in one or more
 * errors of its own (`WorkflowUpdateFailedError`, `WorkflowFailedError`, `ActivityFailure`).
 */
export function applicationFailureOf(err: unknown): ApplicationFailure | undefined {
  return findCause(err, (e): e is ApplicationFailure => e instanceof ApplicationFailure);
}

/** The first error in `err`'s cause chain (`err` included) that `is` accepts. A cycle ends the walk. */
export function findCause<T extends Error>(err: unknown, is: (e: Error) => e is T): T | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (is(e)) return e;
  }
  return undefined;
}

/** The `type` of {@link applicationFailureOf}: a `RefusalType` or `FailureType` from the contract, or another. */
export function failureTypeOf(err: unknown): string | undefined {
  return applicationFailureOf(err)?.type ?? undefined;
}
