/**
 * The activity options a turn schedules with, one builder per kind of activity, as pure functions
 * of its limits and the tool, so the retry and timeout policy can be read and tested in one place.
 */
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/common';
import {
  DEFAULT_HEARTBEAT_TIMEOUT_MS,
  FailureType,
  LEGACY_INPUT_GRACE_MS,
  RefusalType,
  type ToolInfo,
  type TurnLimits,
} from '../contract/index.js';
import { limitsRefusal } from './bounds.js';
import { refusal } from './failures.js';

export type Limits = Required<TurnLimits>;

export const DEFAULT_LIMITS: Limits = {
  continueAsNewAfterCalls: 500,
  toolTimeoutMs: 60_000,
  heartbeatTimeoutMs: DEFAULT_HEARTBEAT_TIMEOUT_MS,
  scheduleToStartMs: 10_000,
  idleMs: 30 * 60_000,
  inputTimeoutMs: 24 * 60 * 60_000,
  legacyInputTimeoutMs: 10 * 60_000,
};

/**
 * The turn's limits with every default filled in. A limit out of range is refused, as a failure
 * that is never retried (`TURN_INPUT_FAILURE_TYPE`), naming the field: it would fail the same way
 * every time.
 */
export function resolveLimits(limits: TurnLimits | undefined): Limits {
  const problem = limitsRefusal(limits);
  if (problem !== undefined) {
    throw refusal(RefusalType.turnInput, `limits refused: ${problem.message}`, { field: problem.field });
  }
  return { ...DEFAULT_LIMITS, ...limits };
}

/**
 * How long a reconcile waits for the session's previous worker before trying the shared queue:
 * short, because a worker that is gone would otherwise delay the start of every turn.
 */
export const PREFERRED_QUEUE_WAIT = '5s';

/**
 * Whether a failed call may run again without asking the model. A server config's `retry` wins
 * over the tool's own hints, because servers often annotate wrongly or not at all.
 */
export function isSafeToRetry(tool: Pick<ToolInfo, 'annotations' | 'retry'>): boolean {
  if (tool.retry === 'never') return false;
  if (tool.retry === 'safe') return true;
  return tool.annotations?.readOnlyHint === true || tool.annotations?.idempotentHint === true;
}

/**
 * Starting servers can take most of the 2 minute start-to-close; the activity heartbeats while it
 * waits, so a reconcile whose worker died is retried elsewhere within seconds, not minutes.
 */
export const RECONCILE_HEARTBEAT_TIMEOUT = '10s';

/**
 * reconcileServers on `queue`. It only starts or reuses servers, so it is retried; a refused
 * config is not, because it fails the same way every time. `scheduleToStartTimeout` is set when
 * the queue may have no worker any more.
 */
export function reconcileOptions(
  queue: string,
  scheduleToStartTimeout?: ActivityOptions['scheduleToStartTimeout'],
): ActivityOptions {
  return {
    taskQueue: queue,
    startToCloseTimeout: '2m',
    heartbeatTimeout: RECONCILE_HEARTBEAT_TIMEOUT,
    retry: { maximumAttempts: 3, initialInterval: '1s', nonRetryableErrorTypes: [FailureType.Config] },
    ...(scheduleToStartTimeout !== undefined ? { scheduleToStartTimeout } : {}),
  };
}

/**
 * Activities that must run on the worker holding the session's servers (listTools): like
 * reconcile, but a worker that does not pick the task up in time is taken for gone.
 */
export function pinnedOptions(queue: string, limits: Pick<Limits, 'scheduleToStartMs'>): ActivityOptions {
  return reconcileOptions(queue, limits.scheduleToStartMs);
}

/** The start-to-close of a call: the server's `toolTimeout`, else the turn's. */
export function callTimeoutMs(tool: Pick<ToolInfo, 'timeoutMs'>, limits: Pick<Limits, 'toolTimeoutMs'>): number {
  return tool.timeoutMs ?? limits.toolTimeoutMs;
}

/**
 * The MCP request timeout of a call: just under the activity's start-to-close, so the MCP timeout
 * fires first and the activity can classify it (an activity timeout says nothing about the tool).
 */
export function requestTimeoutMs(tool: Pick<ToolInfo, 'timeoutMs'>, limits: Pick<Limits, 'toolTimeoutMs'>): number {
  return Math.max(1000, callTimeoutMs(tool, limits) - 1000);
}

/**
 * The retry policy's name for a heartbeat timeout (Temporal's `TemporalTimeout:` prefix and the
 * timeout type): listed as non-retryable, a lost heartbeat comes back to the workflow at once.
 */
export const HEARTBEAT_TIMEOUT_TYPE = 'TemporalTimeout:Heartbeat';

/**
 * callTool of `tool` on `queue`, the worker that holds the session's servers. A heartbeat timeout
 * is not retried by Temporal: the retry would be
 * scheduled on the same pinned queue, whose worker is presumed gone, and wait out a
 * schedule-to-start timeout there. The workflow moves the call to another worker instead.
 * `mayAskMidCall`: the server may speak the 2025 protocol (its era is legacy or not known), whose
 * questions hold the call while a person answers.
 */
export function callOptions(
  queue: string,
  tool: Pick<ToolInfo, 'name' | 'timeoutMs' | 'annotations' | 'retry'>,
  limits: Limits,
  mayAskMidCall = true,
): ActivityOptions {
  const nonRetryableErrorTypes: string[] = [
    FailureType.BadRequest,
    FailureType.ServerUnavailable,
    HEARTBEAT_TIMEOUT_TYPE,
  ];
  return {
    taskQueue: queue,
    // The Temporal UI shows the summary in the event list: the tool's public name.
    summary: tool.name,
    // A 2025-era server may ask a person mid-call; the wait stops the tool's own timeout, so the
    // attempt may last that much longer. A 2026-era server asks between attempts instead.
    startToCloseTimeout:
      callTimeoutMs(tool, limits) + (mayAskMidCall ? limits.legacyInputTimeoutMs + LEGACY_INPUT_GRACE_MS : 0),
    // A lost worker is noticed by its missing heartbeat long before the tool timeout.
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    // A pinned worker that does not pick the call up is taken for gone: the turn fails over.
    scheduleToStartTimeout: limits.scheduleToStartMs,
    retry: {
      // Never run a side-effecting call twice behind the model's back.
      maximumAttempts: isSafeToRetry(tool) ? 3 : 1,
      initialInterval: '1s',
      backoffCoefficient: 2,
      // The same arguments fail the same way; a server that is not running, or a worker that is
      // gone, is the turn's to fix.
      nonRetryableErrorTypes,
    },
  };
}

/**
 * The regular `callTool` options after a fast-path attempt that reached the tool: that attempt was
 * the call's first, so the call still gets no more attempts in all than its retry policy allows.
 */
export function afterFastAttempt(options: ActivityOptions, ranTool: boolean): ActivityOptions {
  const attempts = options.retry?.maximumAttempts;
  if (!ranTool || attempts === undefined || attempts <= 1) return options;
  return { ...options, retry: { ...options.retry, maximumAttempts: attempts - 1 } };
}

/**
 * One regular `callTool` attempt of a call: {@link callOptions}, less the attempt an earlier
 * fast-path attempt that reached the tool took ({@link afterFastAttempt}), and labelled in the UI
 * when it carries a person's answers.
 */
export function callAttemptOptions(
  queue: string,
  tool: Pick<ToolInfo, 'name' | 'timeoutMs' | 'annotations' | 'retry'>,
  limits: Limits,
  attempt: { mayAskMidCall: boolean; fastAttemptRanTool: boolean; carriesAnswers: boolean },
): ActivityOptions {
  const options = afterFastAttempt(callOptions(queue, tool, limits, attempt.mayAskMidCall), attempt.fastAttemptRanTool);
  return attempt.carriesAnswers ? { ...options, summary: `${tool.name} (with answers)` } : options;
}

/**
 * A side-effecting `callTool` sent to the turn's own (shared) queue, the one task queue whose
 * activities the SDK lets the server dispatch eagerly; the rest of its options are unchanged.
 */
export function eagerCallOptions(options: ActivityOptions, sharedQueue: string): ActivityOptions {
  return { ...options, taskQueue: sharedQueue, allowEagerDispatch: true };
}

/**
 * A shared `callTool` (any worker may run it, see `sendCall`) on the turn's own queue. A lost
 * worker's attempt is retried there by Temporal as the tool's retry rule allows, since any other
 * worker can take the retry; the rest of its options are unchanged.
 */
export function sharedCallOptions(options: ActivityOptions, sharedQueue: string): ActivityOptions {
  const retry = options.retry && {
    ...options.retry,
    nonRetryableErrorTypes: options.retry.nonRetryableErrorTypes?.filter((t) => t !== HEARTBEAT_TIMEOUT_TYPE),
  };
  // Not eagerly dispatched: that would hand every call back to the worker running the turn,
  // which is usually the holder, and the calls would not spread over the workers.
  return { ...options, taskQueue: sharedQueue, allowEagerDispatch: false, ...(retry ? { retry } : {}) };
}

/**
 * The longest a fast-path call may run before the regular path takes it over. A local activity
 * holds its workflow task open and sends no heartbeat: a lost worker is noticed only by the workflow
 * task timeout, and every other command of the turn (other calls' activities, Update answers) waits
 * until the local activity ends. Most read-only calls answer in milliseconds. Under 5 s: the SDK's
 * core warns of every workflow task that lasts longer than that (TEMPORAL_WORKFLOW_TASK_DURATION_WARN_SECONDS),
 * and with the default 10 s workflow task timeout a call that reaches the bound holds its task that
 * long, so a 5 s bound made each such call a warning.
 */
export const FAST_PATH_BOUND_MS = 4500;

/** `callToolLocal`: the tool's public name as the UI label, one attempt, at most {@link FAST_PATH_BOUND_MS}. */
export function localCallOptions(
  tool: Pick<ToolInfo, 'name' | 'timeoutMs'>,
  limits: Pick<Limits, 'toolTimeoutMs'>,
): LocalActivityOptions {
  return {
    summary: tool.name,
    startToCloseTimeout: Math.min(FAST_PATH_BOUND_MS, callTimeoutMs(tool, limits)),
    // The regular activity is the retry: it runs where the servers are, with heartbeats and backoff.
    retry: { maximumAttempts: 1 },
  };
}

/** `workerInfo`, asked once when a new session is placed: a local read of the worker's own settings. */
export function workerInfoOptions(): LocalActivityOptions {
  return { startToCloseTimeout: '5s', retry: { maximumAttempts: 1 } };
}

/**
 * `createTask`: once, never retried (a second task could run the tool twice); a pinned worker that
 * never took it is the turn's to replace.
 */
export function createTaskOptions(queue: string, tool: ToolInfo, limits: Limits): ActivityOptions {
  return {
    ...callOptions(queue, tool, limits, false),
    summary: `${tool.name} (create task)`,
    retry: { maximumAttempts: 1 },
  };
}

/**
 * The start-to-close of a task poll, result or cancel: short, so a worker that dies during one is
 * noticed soon (these activities do not heartbeat).
 */
export const TASK_REQUEST_TIMEOUT_MS = 30_000;

/** The short task activities (poll, result, cancel, take up, answers): read-only, so retried. */
export function taskRequestOptions(queue: string, tool: ToolInfo, limits: Limits, summary: string): ActivityOptions {
  return {
    taskQueue: queue,
    summary,
    startToCloseTimeout: Math.min(callTimeoutMs(tool, limits), TASK_REQUEST_TIMEOUT_MS),
    scheduleToStartTimeout: limits.scheduleToStartMs,
    retry: {
      maximumAttempts: 3,
      initialInterval: '1s',
      backoffCoefficient: 2,
      nonRetryableErrorTypes: [FailureType.BadRequest, FailureType.ServerUnavailable],
    },
  };
}

/**
 * `taskInput`: it holds `tasks/result` while a person answers, at most the turn's legacy limit,
 * heartbeating so a lost worker is noticed. Run once: the turn decides what a failure means (the
 * task lives on the server, which asks again).
 */
export function taskInputOptions(
  queue: string,
  tool: Pick<ToolInfo, 'name'>,
  limits: Pick<Limits, 'legacyInputTimeoutMs' | 'heartbeatTimeoutMs' | 'scheduleToStartMs'>,
): ActivityOptions {
  return {
    taskQueue: queue,
    summary: `questions of the task of ${tool.name}`,
    startToCloseTimeout: limits.legacyInputTimeoutMs + LEGACY_INPUT_GRACE_MS + TASK_REQUEST_TIMEOUT_MS,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    scheduleToStartTimeout: limits.scheduleToStartMs,
    retry: { maximumAttempts: 1 },
  };
}

/**
 * endSession on `queue`. A worker that does not take it within seconds is gone, and its servers
 * with it: nothing is left to end there. Stopping is idempotent, so it is retried.
 */
export function endSessionOptions(queue: string): ActivityOptions {
  return {
    taskQueue: queue,
    startToCloseTimeout: '1m',
    scheduleToStartTimeout: PREFERRED_QUEUE_WAIT,
    retry: { maximumAttempts: 3, initialInterval: '1s', nonRetryableErrorTypes: [FailureType.BadRequest] },
  };
}

/**
 * `deliverInputAnswer` on `queue`, the worker holding the call that waits: it only hands an answer
 * over in memory, so seconds suffice; a worker that does not take it is gone, with the call.
 */
export function deliverOptions(
  queue: string,
  tool: string,
  limits: Pick<Limits, 'scheduleToStartMs'>,
): ActivityOptions {
  return {
    taskQueue: queue,
    summary: `answer for ${tool}`,
    startToCloseTimeout: '10s',
    scheduleToStartTimeout: limits.scheduleToStartMs,
    retry: { maximumAttempts: 3, initialInterval: '1s', nonRetryableErrorTypes: [FailureType.BadRequest] },
  };
}

/** Time a hook activity gets beyond its longest hook's timeout: starting the shells, reading the file. */
export const HOOK_ACTIVITY_MARGIN_MS = 10_000;

/**
 * A hook activity (`preToolUseHooks` / `postToolUseHooks`) of `tool` on `queue`, the worker that
 * froze the tool list under its operator's hooks. It runs once: the hooks time themselves out, and a
 * lost worker (heartbeat or schedule-to-start) is the workflow's to handle, which moves the turn and
 * runs them again only while no decision is recorded.
 */
export function hookOptions(
  queue: string,
  event: string,
  tool: Pick<ToolInfo, 'name'>,
  budgetMs: number,
  limits: Limits,
): ActivityOptions {
  return {
    taskQueue: queue,
    summary: `${event} ${tool.name}`,
    startToCloseTimeout: budgetMs + HOOK_ACTIVITY_MARGIN_MS,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    scheduleToStartTimeout: limits.scheduleToStartMs,
    retry: { maximumAttempts: 1 },
  };
}

/** Longest one model step may take: a long answer from a slow local model takes minutes. */
export const MODEL_STEP_TIMEOUT_MS = 10 * 60_000;

/**
 * A model step runs on any worker (it needs no server of the session) and heartbeats while it
 * waits for the model, so a lost worker is noticed within the turn's heartbeat timeout and the step
 * runs again elsewhere. A rate limit's `Retry-After` sets the next attempt's delay; a request the
 * model refuses (4xx) fails at once. The summary names the model in the Temporal UI's event list.
 */
export function modelStepOptions(sharedQueue: string, model: string, step: number, limits: Limits): ActivityOptions {
  return {
    taskQueue: sharedQueue,
    startToCloseTimeout: MODEL_STEP_TIMEOUT_MS,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 8 },
    summary: `model ${model} · step ${step}`,
  };
}
