/**
 * Where a turn's work runs and what a lost holder means: one rule for everything a turn sends to
 * the worker holding its session's servers (the tool listing, calls, hooks, task requests and the
 * questions of tasks). Each caller decides only how many moves its work may make.
 */
import { isCancellation } from '@temporalio/workflow';
import { FailureType } from '../contract/index.js';
import { isFailureType, isHeartbeatTimeout, isScheduleToStartTimeout, messageOf } from './failures.js';
import { reconcile } from './servers.js';
import type { TurnContext } from './turnState.js';

/**
 * How many times one retry-safe call follows the session's servers to another worker after the
 * worker running it stopped heartbeating: as many as the retries a safe call had when the activity
 * retried itself. Work that never ran moves once; hooks once.
 */
export const MAX_LOST_WORKER_MOVES = 2;

/**
 * Why work failed where it was sent, when the reason is its holder: `not-taken`, no worker took it
 * from the holder's queue in time (schedule-to-start timeout: the worker is gone, nothing ran);
 * `servers-gone`, the holder answered that the session's servers are not running there (stopped
 * idle, crashed; nothing ran); `lost`, the holder stopped heartbeating while the work ran (it may
 * have had its effect).
 */
export type Move = 'not-taken' | 'servers-gone' | 'lost';

/** The move a failure calls for, or undefined when it says nothing about the holder. */
export function moveOf(err: unknown): Move | undefined {
  if (isScheduleToStartTimeout(err)) return 'not-taken';
  if (isFailureType(err, FailureType.ServerUnavailable)) return 'servers-gone';
  if (isHeartbeatTimeout(err)) return 'lost';
  return undefined;
}

/** Whether work that failed with `move` never ran, so sending it again is always safe. */
export function neverRan(move: Move | undefined): move is 'not-taken' | 'servers-gone' {
  return move === 'not-taken' || move === 'servers-gone';
}

/**
 * Moves the turn off `from`, the queue its work was sent to: when other work of the turn already
 * moved it, the turn follows without reconciling again (which could move the servers once more,
 * mid-call); otherwise the session's servers are reconciled on the shared queue (a gone worker,
 * noticed there at once rather than after another schedule-to-start timeout) or on the same worker
 * (gone servers: the worker still answers). A cancellation of the turn is always re-thrown. Returns
 * why the servers could not be reconciled, or undefined once the turn is on a worker that answered.
 */
export async function moveTurn(ctx: TurnContext, from: string, move: Move): Promise<string | undefined> {
  const { state } = ctx;
  if (state.workerQueue !== from) return undefined;
  try {
    state.workerQueue = await reconcile(ctx, move === 'servers-gone' ? from : undefined);
    return undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    return messageOf(err);
  }
}
