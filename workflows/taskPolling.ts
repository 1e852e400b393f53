/**
 * How a turn follows an MCP task it does not hold: the short requests about the task (poll, result,
 * cancel, answers) sent to the worker holding the session's servers, when they are made, and what
 * the model reads when the turn loses track of the task.
 */
import { CancellationScope, isCancellation, proxyActivities, sleep } from '@temporalio/workflow';
import { FailureType, type CallOutcome, type TaskRef, type TaskStarted, type ToolInfo } from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { taskRequestOptions } from './activityOptions.js';
import { errorOutcome, isFailureType, messageOf } from './failures.js';
import { moveOf, moveTurn, neverRan } from './placement.js';
import type { TurnContext } from './turnState.js';

/** The shortest wait between polls, whatever the server suggests. */
export const MIN_POLL_MS = 1000;
/** The longest wait between polls: a task that ends is noticed within this. */
export const MAX_POLL_MS = 5 * 60_000;
/** Polls at the server's interval before the waits grow. */
export const STEADY_POLLS = 10;
/** How much each later wait grows, so a task of hours costs tens of polls, not thousands. */
export const POLL_BACKOFF = 1.5;
/** How long past its TTL a task is still polled before it is taken for expired (clocks differ). */
export const TTL_GRACE_MS = 60_000;
/** The durable wait after a poll, result or cancel request failed in place; doubled each time. */
export const TASK_RETRY_BASE_MS = 5000;
/** Poll, result or cancel requests that failed in a row before the turn gives up on the task. */
export const MAX_TASK_REQUEST_FAILURES = 5;

/** A task older than this is polled less often: see {@link pollDelayMs}. */
export const LONG_TASK_AFTER_MS = 24 * 60 * 60_000;
/** The share of a long task's age each wait lasts at least, so its polls grow with the log of its age. */
export const LONG_TASK_WAIT_SHARE = 0.01;
/** The longest wait between polls of a long task. */
export const MAX_LONG_TASK_WAIT_MS = 12 * 60 * 60_000;

/**
 * The wait before poll number `polls + 1` (`polls` done so far): the server's suggested interval
 * (1 s if it gave none) kept between {@link MIN_POLL_MS} and {@link MAX_POLL_MS}, growing by
 * {@link POLL_BACKOFF} per poll after {@link STEADY_POLLS}. A task older than
 * {@link LONG_TASK_AFTER_MS} (`ageMs`) waits at least {@link LONG_TASK_WAIT_SHARE} of its age (at
 * most {@link MAX_LONG_TASK_WAIT_MS}, and at most half the TTL it has left), so the turn's history
 * grows with the log of the task's age instead of with its age.
 */
export function pollDelayMs(suggestedMs: number | undefined, polls: number, ageMs = 0, ttlMs?: number | null): number {
  const base = Math.min(Math.max(suggestedMs ?? MIN_POLL_MS, MIN_POLL_MS), MAX_POLL_MS);
  const grown = polls < STEADY_POLLS ? base : base * POLL_BACKOFF ** (polls - STEADY_POLLS + 1);
  const wait = Math.min(grown, MAX_POLL_MS);
  if (ageMs < LONG_TASK_AFTER_MS) return Math.round(wait);
  const ttlLeft = typeof ttlMs === 'number' ? Math.max(ttlMs - ageMs, 0) / 2 : Infinity;
  return Math.round(Math.max(wait, Math.min(ageMs * LONG_TASK_WAIT_SHARE, MAX_LONG_TASK_WAIT_MS, ttlLeft)));
}

/**
 * The turn could not follow its task any more (polls or the result kept failing): the task may
 * still run, or have had its effect. It is cancelled if the server still knows it, and the model
 * reads that the result is unknown, naming the task, rather than a transport error it might take
 * as "nothing happened" and call again.
 */
export async function lostTrack(
  ctx: TurnContext,
  tool: ToolInfo,
  task: TaskStarted,
  ref: TaskRef,
  failed: CallOutcome,
): Promise<CallOutcome> {
  if (failed.errorKind === 'bad_request') return failed;
  await CancellationScope.nonCancellable(() =>
    taskRequest(ctx, tool, `cancel task of ${tool.name}`, (a) => a.cancelTask(ref)),
  ).catch(() => undefined);
  return lostTrackOutcome(tool.name, task, failed.errorMessage ?? 'it failed');
}

/** What the model reads when the turn lost track of its task (see {@link lostTrack}). */
export function lostTrackOutcome(name: string, task: Pick<TaskStarted, 'taskId'>, why: string): CallOutcome {
  return errorOutcome(
    'unknown_result',
    `${name}: task ${task.taskId} could not be followed (${why}); it was cancelled if the server still knew it, and it may have had an effect: check before calling again`,
  );
}

/**
 * One short task activity on the worker holding the session's servers. A worker that is gone
 * (never took it) or servers that are gone move the turn: the servers are reconciled again, on the
 * shared queue or the same worker, and the request is sent from there; a remote server's task is
 * still there. Another failure is waited out on a durable timer and the request sent again.
 * Requests that keep failing end the call with what went wrong.
 */
export async function taskRequest<T>(
  ctx: TurnContext,
  tool: ToolInfo,
  summary: string,
  run: (a: Activities) => Promise<T>,
): Promise<T | CallOutcome> {
  const { state, limits } = ctx;
  for (let failures = 1; ; failures += 1) {
    const queue = state.workerQueue;
    try {
      return await run(proxyActivities<Activities>(taskRequestOptions(queue, tool, limits, summary)));
    } catch (err) {
      if (isCancellation(err)) throw err;
      const move = moveOf(err);
      if (isFailureType(err, FailureType.BadRequest)) return errorOutcome('bad_request', messageOf(err));
      if (failures >= MAX_TASK_REQUEST_FAILURES)
        return errorOutcome('transport', `${summary} failed ${failures} times: ${messageOf(err)}`);
      if (!neverRan(move)) {
        // A passing failure (the server's network, a restart): the task is still there, so the
        // turn asks again after a durable wait instead of giving up on a task of hours.
        await sleep(Math.min(TASK_RETRY_BASE_MS * 2 ** (failures - 1), MAX_POLL_MS));
        continue;
      }
      await moveTurn(ctx, queue, move);
    }
  }
}
