import type { CancellationScope } from '@temporalio/workflow';
import type {
  CallRecord,
  InputAnswer,
  InputRequest,
  ModelStepRecord,
  ReconcileResult,
  ToolInfo,
  TurnInput,
  TurnProgress,
  TurnResult,
  TurnStart,
} from '../contract/index.js';
import type { Limits } from './activityOptions.js';
import { DetailsBoard } from './detailsBoard.js';

/**
 * Calls whose whole record an interactive run keeps: what continue-as-new carries so a retried
 * call is answered from its record. Older outcomes were already returned by their Updates, which
 * history keeps; holding them (images included) until the run ends only costs workflow memory
 * and repeats them in the result.
 */
export const RECENT_CALLS_KEPT = 100;

/**
 * The mutable state of one run of a turn. The Update handlers, the calls and the idle loop run
 * interleaved on one workflow thread and all read and change it, so it lives in one place.
 */
export class TurnState {
  /**
   * The calls finished in this run, in the order they finished: all of them in a batch turn (its
   * result is where their outcomes are read), the newest {@link RECENT_CALLS_KEPT} in an
   * interactive one.
   */
  readonly calls: CallRecord[] = [];
  /** Calls finished in this run, including those no longer in {@link calls}. */
  callsDone = 0;
  /** IDs of the calls dropped from {@link calls}: continue-as-new refuses a retry of one. */
  readonly droppedIds: string[] = [];
  inFlight = 0;
  /** Bumped when a call starts or ends: the idle loop wakes on a change. */
  lastActivity = 0;
  /** Workflow time of the last call start or end; the idle limit counts from here. */
  lastActivityAt = Date.now();
  ended: TurnResult['endedBy'] | undefined;
  /** An `endTurn` Update asked to end the session as well. */
  endSession = false;
  /** What callers get from turnStarted; set once the tool list is frozen. */
  start: TurnStart | undefined;
  /** The worker that holds the session's servers; a failover moves the turn to another one. */
  workerQueue = '';
  /**
   * The worker that ran this turn's workflow tasks when its servers were placed there (a new
   * session's first reconcile); undefined when they were placed elsewhere, and in a run after
   * continue-as-new.
   */
  turnPlacedOn: string | undefined;
  tools = new Map<string, ToolInfo>();
  lastReconcile: ReconcileResult | undefined;
  /** The reconcile after which a fast-path call found its worker without the servers: no more tries until the next one. */
  fastPathMissedOn: ReconcileResult | undefined;
  /** The reconcile after which a shared call found a worker that could not take it: the holder takes them until the next one. */
  sharedMissedOn: ReconcileResult | undefined;
  /** Input requests of running calls that wait for an answer, by request ID, in the order asked. */
  readonly pendingInputs = new Map<string, InputRequest>();
  /** Answers that arrived for {@link pendingInputs}, until the call's next attempt takes them. */
  readonly answers = new Map<string, InputAnswer>();
  /**
   * The regular `callTool` attempts running now, by call ID: only such an attempt may report a
   * 2025-era question, and its answer goes to the queue it was scheduled on.
   */
  readonly askingAttempts = new Map<string, { scope: CancellationScope; queue: string; tool: string }>();
  /** The 2025-era questions each call asked so far, by call ID: the next one's round. */
  readonly legacyRounds = new Map<string, number>();
  /** The scope of each running call by its ID, so cancelCall and a cancelled turn can stop it. */
  readonly running = new Map<string, CancellationScope>();
  /**
   * Calls following an MCP task now (created or taken up, not yet ended), by call ID, with when the
   * task was created (workflow time, or the server's own for a task taken up).
   */
  readonly followedTasks = new Map<string, { createdAtMs: number }>();
  /**
   * Tools (public names) whose 2026-07-28 server refused an ordinary call because it runs them only
   * as tasks: the turn's later calls of them go straight to a task. Kept for this run of the turn
   * only: after a continue-as-new the first call is refused once more (nothing runs) and switches again.
   */
  readonly taskOnlyTools = new Set<string>();
  /** `endTurn` asked to detach the turn's tasks: each call following one is answered as detached. */
  detachTasks = false;
  /** Calls whose scope was cancelled to detach them, not to cancel their task. */
  readonly detached = new Set<string>();
  /** A model turn's steps so far. */
  readonly modelSteps: ModelStepRecord[] = [];
  /** The call IDs a model turn's steps gave their calls, so none is used twice. */
  readonly modelCallIds = new Set<string>();
  /** A model turn's latest text: its answer once the loop ends. */
  answer: string | undefined;
  /** The head of a model turn's conversation. */
  conversation: string | undefined;
  /** What the Temporal UI shows as the turn's current details. */
  readonly details: DetailsBoard;

  /** @param showDetails where the details go; default: the workflow's current details. */
  constructor(showDetails?: (markdown: string) => void) {
    this.details = new DetailsBoard(showDetails);
  }

  /** Records a finished call; `keepAll` for a batch turn, whose result must hold every outcome. */
  record(call: CallRecord, keepAll: boolean): void {
    this.calls.push(call);
    this.callsDone += 1;
    if (keepAll || this.calls.length <= RECENT_CALLS_KEPT) return;
    this.droppedIds.push(this.calls.shift()!.id);
  }

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
      callsDone: this.callsDone,
      callsInFlight: this.inFlight,
      ...(this.modelSteps.length > 0 ? { modelSteps: this.modelSteps } : {}),
      // Only the questions still open; answers never leave the workflow through the status.
      ...(this.pendingInputs.size > 0
        ? { pendingInputs: [...this.pendingInputs.values()].filter((r) => !this.answers.has(r.requestId)) }
        : {}),
    };
  }
}

/** What the parts of a turn share: its input, its limits, the shared task queue and its state. */
export interface TurnContext {
  readonly input: TurnInput;
  readonly limits: Limits;
  /** The task queue every worker polls; the turn's workflow tasks run there. */
  readonly sharedQueue: string;
  /** The first run of this run's chain, as Temporal reports it (see `ReconcileInput.firstRunId`). */
  readonly firstRunId: string;
  readonly state: TurnState;
}
