import { setCurrentDetails } from '@temporalio/workflow';
import type { CallOutcome, TurnInput, TurnResult, TurnStatus } from '../contract/index.js';
import { turnSummary } from '../contract/turnMetadata.js';
import {
  DETAILS_CALLS_SHOWN,
  finishedCall,
  renderTurnDetails,
  type DetailsCall,
  type InputWait,
  type TaskWait,
  type TurnDetailsView,
} from './details.js';

/**
 * Keeps a turn's current details (Temporal user metadata) up to date: each change of what the UI
 * shows renders them again. Setting them records nothing in history, so no patch guards a change
 * here and replay is unaffected. The text is bounded: open calls and the newest finished ones.
 */
export class DetailsBoard {
  private readonly view: TurnDetailsView = {
    phase: 'starting',
    open: [],
    finished: [],
    callsDone: 0,
    counts: { ok: 0, error: 0, cancelled: 0 },
  };
  private readonly open = new Map<string, DetailsCall>();

  /** @param show where the text goes: the workflow's current details (a test captures it instead). */
  constructor(private readonly show: (markdown: string) => void = setCurrentDetails) {}

  /** The servers as a reconcile left them. */
  servers(status: TurnStatus): void {
    this.view.mcpOff = status.mcp === 'off';
    this.view.servers = status.servers.map((s) => ({ name: s.name, state: s.state, ...(s.era ? { era: s.era } : {}) }));
    this.publish();
  }

  /**
   * The tool list is frozen: calls can run. A run that continues a turn has no static summary
   * (continue-as-new carries no user metadata in this SDK), so its details carry the summary line.
   */
  ready(input: TurnInput): void {
    this.view.phase = 'ready';
    if (input.continued) {
      this.view.callsBefore = input.continued.callsBefore;
      this.view.continuedSummary = turnSummary(input.sessionId, input.refs);
    }
    this.publish();
  }

  ended(endedBy: TurnResult['endedBy']): void {
    this.view.phase = 'ended';
    this.view.endedBy = endedBy;
    this.publish();
  }

  /** A model step finished (its text is in history, not in the details). */
  modelStep(name: string, step: number, _text: string, calls: number): void {
    this.view.model = { name, steps: step, lastCalls: calls };
    this.publish();
  }

  callStarted(id: string, name: string): void {
    this.open.set(id, { id, name, status: 'running', attempt: 0 });
    this.publish();
  }

  /** The call's activity is scheduled (again, after a failover). */
  callAttempt(id: string): void {
    const call = this.open.get(id);
    if (!call) return;
    call.attempt += 1;
    // A first attempt changes nothing shown: only later ones are.
    if (call.attempt > 1) this.publish();
  }

  /** The call waits for a person's answer; `undefined` once it is answered and runs again. */
  callWaitsForInput(id: string, input: InputWait | undefined): void {
    this.setWait(id, input === undefined ? {} : { input });
  }

  /** The call waits on a long-running task; `undefined` once the task is done. */
  callWaitsOnTask(id: string, task: TaskWait | undefined): void {
    this.setWait(id, task === undefined ? {} : { task });
  }

  callEnded(id: string, name: string, outcome: CallOutcome | undefined): void {
    this.open.delete(id);
    const row = outcome ? finishedCall(id, name, outcome) : { id, name, status: 'cancelled' as const, attempt: 0 };
    this.view.callsDone += 1;
    this.view.counts[row.status === 'ok' ? 'ok' : row.status === 'cancelled' ? 'cancelled' : 'error'] += 1;
    this.view.finished.push(row);
    if (this.view.finished.length > DETAILS_CALLS_SHOWN) this.view.finished.shift();
    this.publish();
  }

  private setWait(id: string, wait: Pick<DetailsCall, 'input' | 'task'>): void {
    const call = this.open.get(id);
    if (!call) return;
    delete call.input;
    delete call.task;
    Object.assign(call, wait);
    call.status = wait.input || wait.task ? 'waiting' : 'running';
    this.publish();
  }

  private publish(): void {
    this.view.open = [...this.open.values()];
    try {
      this.show(renderTurnDetails(this.view));
    } catch {
      // What the UI shows must never fail the turn's workflow task: the old text stays.
    }
  }
}
