/**
 * What the model reads when a call fails. Pure functions of the error Temporal hands the workflow,
 * so the whole mapping can be tested outside a workflow.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, TimeoutType } from '@temporalio/common';
import {
  FailureType,
  closestName,
  type BadRequestDetails,
  type CallHooks,
  type CallOutcome,
  type RefusalDetail,
  type RefusalType,
} from '../contract/index.js';

export type ErrorKind = NonNullable<CallOutcome['errorKind']>;

/** An error outcome; a call that never reached a tool has no start time, duration or attempts. */
export function errorOutcome(kind: ErrorKind, message: string, durationMs = 0, attempts = 0): CallOutcome {
  return {
    status: 'error',
    content: [],
    isError: true,
    errorKind: kind,
    errorMessage: message,
    startedAt: '',
    durationMs,
    attempts,
  };
}

/** What a workflow refuses: never retried, typed so callers need not read the message. */
export function refusal(type: RefusalType, message: string, detail?: RefusalDetail): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true, ...(detail ? { details: [detail] } : {}) });
}

// --- outcomes of calls that did not reach their tool, or whose turn moved; the texts the model reads ---

/** A call to a tool the turn does not list; names the listed tool it most likely meant. */
export function unknownToolOutcome(name: string, listed: Iterable<string>): CallOutcome {
  const meant = closestName(name, listed);
  return errorOutcome(
    'bad_request',
    `unknown tool "${name}": it is not in this turn's tool list${meant !== undefined ? ` (did you mean "${meant}"?)` : ''}`,
  );
}

export function notAllowedOutcome(name: string, rule: string): CallOutcome {
  return errorOutcome('bad_request', `${name} is not allowed in this turn: ${rule}`);
}

export function hookDeniedOutcome(name: string, reason: string | undefined, hooks: CallHooks): CallOutcome {
  return { ...errorOutcome('bad_request', `a PreToolUse hook denied ${name}: ${reason ?? 'no reason given'}`), hooks };
}

export function alreadyRanOutcome(callId: string): CallOutcome {
  return errorOutcome(
    'bad_request',
    `call ${callId} already ran earlier in this turn; its outcome is in the transcript, not repeated here`,
  );
}

/** Cancelled while its hooks ran: after PreToolUse hooks the call itself never ran. */
export function cancelledInHooksOutcome(event: 'PreToolUse' | 'PostToolUse'): CallOutcome {
  return errorOutcome(
    'cancelled',
    `the call was cancelled while its ${event} hooks ran${event === 'PreToolUse' ? ' (the call did not run)' : ''}`,
  );
}

export function cancelledCallOutcome(): CallOutcome {
  return errorOutcome('cancelled', 'the call was cancelled before it finished; it may have had an effect');
}

/** Whether an activity failed with an `ApplicationFailure` of `type` (a FailureType). */
export function isFailureType(err: unknown, type: string): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === type;
}

/**
 * Whether a call failed because its 2026-07-28 server runs the tool only as an MCP task (a
 * `BadRequest` marked {@link BadRequestDetails.taskOnly}): it did not run. `err` is a regular
 * activity's failure or, from a local activity, the `ApplicationFailure` itself.
 */
export function isTaskOnlyRefusal(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || cause.type !== FailureType.BadRequest) return false;
  const details = cause.details?.[0] as BadRequestDetails | null | undefined;
  return typeof details === 'object' && details !== null && details.taskOnly === true;
}

/** No worker picked the activity up in time: it never started, and its queue may have no worker. */
export function isScheduleToStartTimeout(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

/**
 * The worker running the call stopped heartbeating: it is presumed gone (killed, lost its
 * connection, or stalled), and with it the session's servers. The call may have started.
 */
export function isHeartbeatTimeout(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.HEARTBEAT
  );
}

/** The message of what actually failed, not of Temporal's "activity task failed" wrapper. */
export function messageOf(err: unknown): string {
  const cause = err instanceof ActivityFailure && err.cause ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

/**
 * Turns a failed call into what the model reads. `safeToRetry` says whether running the call again
 * is harmless; when it is not, any failure after the call may have started leaves its effect unknown,
 * and the model is told so instead of being invited to repeat it.
 */
export function failureOutcome(err: unknown, safeToRetry: boolean): CallOutcome {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const message = cause instanceof Error ? cause.message : String(cause);
  if (cause instanceof ApplicationFailure) {
    if (cause.type === FailureType.BadRequest) return errorOutcome('bad_request', message);
    if (cause.type === FailureType.ServerUnavailable)
      return errorOutcome('transport', `${message} (the call did not run)`);
  }
  // No worker picked the call up (again, after the one failover): it never started, so its result is known.
  if (isScheduleToStartTimeout(err))
    return errorOutcome('transport', 'no worker picked the call up in time (the call did not run)');
  // The MCP request timeout (classified by the activity) and Temporal's own activity timeouts.
  const toolTimeout = cause instanceof ApplicationFailure && cause.type === FailureType.ToolTimeout;
  const temporalTimeout = cause instanceof TimeoutFailure;
  if (!safeToRetry) {
    const what = toolTimeout || temporalTimeout ? `the call timed out (${message})` : message;
    return errorOutcome(
      'unknown_result',
      `the result is unknown: ${what}. The call may have had an effect; check before repeating it.`,
    );
  }
  if (temporalTimeout) return errorOutcome('timeout', `the call timed out (${cause.timeoutType})`);
  if (toolTimeout) return errorOutcome('timeout', `the call timed out: ${message}`);
  return errorOutcome('transport', message);
}
