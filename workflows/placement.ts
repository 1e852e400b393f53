/**
 * Where a turn's work runs and what a lost holder means: one rule for everything a turn sends to
 * the worker holding its session's servers (the tool listing, calls, hooks, task requests and the
 * questions of tasks). Each caller decides only how many moves its work may make.
 */
import { isCancellation, proxyLocalActivities } from '@temporalio/workflow';
import { FailureType } from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { workerInfoOptions } from './activityOptions.js';
import { isFailureType, isHeartbeatTimeout, isScheduleToStartTimeout, messageOf } from './failures.js';
import { reconcile } from './servers.js';
import type { TurnContext, TurnState } from './turnState.js';

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

/**
 * Places a new turn's servers: on the session's previous worker when it still answers, else, for a
 * new session, on the worker running this workflow task, which keeps the turn's later tasks (sticky
 * execution), so its retry-safe calls can take the fast path. When they land there, that worker is
 * recorded as running the turn too (see {@link ownerPresumedLost}).
 */
export async function placeTurn(ctx: TurnContext): Promise<void> {
  const { input, state } = ctx;
  const own = input.preferredWorkerQueue === undefined ? await ownWorkerQueue() : undefined;
  state.workerQueue = await reconcile(ctx, input.preferredWorkerQueue ?? own);
  if (own !== undefined && state.workerQueue === own) state.turnPlacedOn = own;
}

/**
 * The queue of the worker running this workflow task. Undefined (the shared queue, as before) when
 * that worker has the fast path off or cannot say.
 */
async function ownWorkerQueue(): Promise<string | undefined> {
  try {
    const info = await proxyLocalActivities<Activities>(workerInfoOptions()).workerInfo();
    return info.fastPath ? info.workerQueue : undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    return undefined;
  }
}

/**
 * Whether a fast-path miss presumes the worker holding the servers on `queue` lost, so that the turn
 * moves before the call runs rather than sending it to a dead worker's queue and waiting out a
 * schedule-to-start timeout there. The turn's own state tells: its servers were placed on the worker
 * that ran its workflow tasks, which still holds them, and yet another worker ran the task that
 * missed. Sticky execution keeps a turn's workflow tasks on one live worker; they leave it when it
 * dies (a fast call runs inside its workflow task, so that is how its death is noticed), and also
 * when it is too busy to take one within DMCP_STICKY_WAIT or drops the turn from its cache: then the
 * move is one a live holder did not need, and its retry-safe call runs where the servers went. A
 * turn placed any other way (the session's previous worker) falls back to the holder's queue.
 */
export function ownerPresumedLost(state: Pick<TurnState, 'turnPlacedOn'>, queue: string): boolean {
  return state.turnPlacedOn !== undefined && state.turnPlacedOn === queue;
}
