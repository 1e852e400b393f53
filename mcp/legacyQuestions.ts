/**
 * Where a 2025-era `elicitation/create` of one server goes. The request names no call: it is a
 * call's only when one call is in flight on the server, and that call asks a person through its
 * turn while it holds the connection; otherwise it is declined at once, and the server says what
 * that means in its result. A question of a task names the task instead, and goes to whoever holds
 * that task's `tasks/result`. Never logged: the answer.
 */
import type { Logger } from 'pino';
import { LEGACY_INPUT_KEY, type InputAnswer, type InputRequestSpec } from '../contract/index.js';
import { elicitationSpec } from './inputRequests.js';
import { elicitResult, type CallDeadline, type LegacyInputAsker } from './legacyInputs.js';

/** The task a server request belongs to (`_meta["io.modelcontextprotocol/related-task"].taskId`), if it names one. */
export function relatedTaskId(params: unknown): string | undefined {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const related = meta?.['io.modelcontextprotocol/related-task'] as { taskId?: unknown } | undefined;
  return typeof related?.taskId === 'string' ? related.taskId : undefined;
}

/** A 2025-era input request the worker declined. */
export interface DeclinedInput {
  mode: 'form' | 'url';
  message: string;
  /** Why no person was asked, for the model. */
  reason: string;
}

/** What one call in flight listens for: a 2025-era question, asked or declined. */
export interface LegacyInputListener {
  /** Asks a person; absent: the question is declined at once. */
  ask?: LegacyInputAsker;
  onDeclined?: (request: DeclinedInput) => void;
  /** The call's own timeout, which stands still while a person decides. */
  deadline?: CallDeadline;
}

/** The 2025-era questions of one server, routed to the call or task holder they belong to. */
export class LegacyQuestionRouter {
  /** `elicitation/create` requests the server sent. */
  received = 0;
  /** The calls in flight that listen for 2025-era questions. */
  private readonly listeners = new Set<LegacyInputListener>();
  /** Who asks a person the questions a 2025-era task sends over `tasks/result`, by task ID. */
  private readonly taskAskers = new Map<string, LegacyInputAsker>();

  constructor(
    private readonly log: Logger,
    private readonly scrub: (text: string) => string,
  ) {}

  /** Routes questions to `listener` while it is the only call in flight; returns its removal. */
  listen(listener: LegacyInputListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Routes the questions of `taskId` to `ask`; returns its removal (a later holder's stays). */
  holdTask(taskId: string, ask: LegacyInputAsker): () => void {
    this.taskAskers.set(taskId, ask);
    return () => {
      if (this.taskAskers.get(taskId) === ask) this.taskAskers.delete(taskId);
    };
  }

  /** Answers one `elicitation/create`: a person's answer, or `decline`/`cancel` with the reason told to the call. */
  async answer(
    request: { params?: unknown },
    signal: AbortSignal,
  ): Promise<{ action: InputAnswer['action']; content?: InputAnswer['content'] }> {
    this.received += 1;
    const params = request.params as { mode?: string; message?: unknown };
    const mode = params.mode === 'url' ? 'url' : 'form';
    // A question of a task names it: it belongs to whoever holds that task's `tasks/result`, never
    // to a call that happens to be in flight.
    const taskId = relatedTaskId(request.params);
    const only = taskId === undefined && this.listeners.size === 1 ? [...this.listeners][0] : undefined;
    const ask = taskId !== undefined ? this.taskAskers.get(taskId) : only?.ask;
    let reason =
      taskId !== undefined
        ? `nobody waits for the questions of task ${taskId}`
        : only
          ? 'this caller cannot ask a person'
          : 'several calls were in flight on this server, and a 2025-era request does not say which of them asks';
    if (ask) {
      let spec: InputRequestSpec | undefined;
      try {
        spec = elicitationSpec(LEGACY_INPUT_KEY, params);
      } catch (err) {
        reason = `the question cannot be asked: ${(err as Error).message}`;
        this.log.info({ mode, err: (err as Error).message }, 'declined a 2025-era elicitation request it cannot ask');
      }
      if (spec) {
        this.log.info({ mode }, 'a 2025-era elicitation request waits for a person');
        only?.deadline?.pause();
        try {
          return elicitResult(spec, await ask(spec, signal));
        } catch (err) {
          // The turn did not take the question (it refused it, or could not be reached).
          const why = this.scrub(String((err as Error)?.message ?? err));
          reason = `the turn did not take the question: ${why}`;
          this.log.warn({ mode, err: why }, 'declined a 2025-era elicitation request the turn did not take');
        } finally {
          only?.deadline?.resume();
        }
      }
    } else {
      this.log.info({ mode }, 'declined a 2025-era elicitation request');
    }
    only?.onDeclined?.({ mode, message: typeof params.message === 'string' ? params.message : '', reason });
    // Nobody refused a task's question that reached no person (it came as its holder let go):
    // `cancel` says so, where `decline` would read as a person's refusal.
    return { action: taskId !== undefined ? 'cancel' : 'decline' };
  }
}
