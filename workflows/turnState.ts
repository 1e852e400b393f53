import type { CancellationScope } from '@temporalio/workflow';
import type { CallRecord, ReconcileResult, ToolInfo, TurnInput, TurnProgress, TurnResult, TurnStart } from '../contract/index.js';
import type { Limits } from './activityOptions.js';

/**
 * The mutable state of one run of a turn. The Update handlers, the calls and the idle loop run
 * interleaved on one workflow thread and all read and change it, so it lives in one place.
 */
export class TurnState {
  /** The calls finished in this run, in the order they finished. */
  readonly calls: CallRecord[] = [];
  inFlight = 0;
  /** Bumped when a call starts or ends: the idle loop wakes on a change. */
  lastActivity = 0;
  /** Workflow time of the last call start or end; the idle limit counts from here. */
  lastActivityAt = Date.now();
  ended: TurnResult['endedBy'] | undefined;
  /** What callers get from turnStarted; set once the tool list is frozen. */
  start: TurnStart | undefined;
  /** The worker that holds the session's servers; a failover moves the turn to another one. */
  workerQueue = '';
  tools = new Map<string, ToolInfo>();
  lastReconcile: ReconcileResult | undefined;
  /** The scope of each running call by its ID, so cancelCall and a cancelled turn can stop it. */
  readonly running = new Map<string, CancellationScope>();

  /** Notes that a call started or ended, for the idle loop. */
  touch(): void {
    this.lastActivity += 1;
    this.lastActivityAt = Date.now();
  }

  progress(): TurnProgress {
    return {
      phase: this.ended ? 'ended' : this.start ? 'ready' : 'starting',
      workerQueue: this.start?.workerQueue,
      status: this.start?.status,
      callsDone: this.calls.length,
      callsInFlight: this.inFlight,
    };
  }
}

/** What the parts of a turn share: its input, its limits, the shared task queue and its state. */
export interface TurnContext {
  readonly input: TurnInput;
  readonly limits: Limits;
  /** The task queue every worker polls; the turn's workflow tasks run there. */
  readonly sharedQueue: string;
  readonly state: TurnState;
}
