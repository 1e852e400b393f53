/**
 * 2025-era questions asked mid-call (`elicitation/create`): the server waits on the open
 * `tools/call` while a person answers, so the answer must reach the very process that holds that
 * call. These are the in-process parts of that wait: the pending answers of this worker, and the
 * tool's own timeout, which stands still while a person decides.
 */
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import type { InputAnswer, InputRequestSpec } from '../contract/index.js';

/**
 * A call's way to ask a person for a 2025-era question: resolves with the answer the server gets
 * (`cancel` when nobody answered in time). `signal` aborts when the server withdraws the question.
 */
export type LegacyInputAsker = (request: InputRequestSpec, signal: AbortSignal) => Promise<InputAnswer>;

/** Why an answer was not handed over. */
export type DeliveryResult = 'delivered' | 'not_waiting';

interface Waiting {
  turnId: string;
  settle: (answer: InputAnswer) => void;
}

/**
 * The 2025-era questions that calls of this worker hold open, by turn and request ID. An answer
 * reaches a wait only when delivered for the same turn: a request ID alone (`<callId>:<n>:...`) is
 * not secret, and two turns may use the same call IDs.
 */
export class LegacyInputWaits {
  private readonly waits = new Map<string, Waiting>();

  get size(): number {
    return this.waits.size;
  }

  /**
   * Waits for the answer to `requestId` of `turnId`. Ends with `cancel` after `backstopMs` (the
   * turn should have delivered one before) or when `signal` aborts (the call is cancelled, the
   * server withdrew the question).
   */
  wait(turnId: string, requestId: string, backstopMs: number, signal: AbortSignal): Promise<InputAnswer> {
    const key = waitKey(turnId, requestId);
    return new Promise<InputAnswer>((resolve) => {
      const settle = (answer: InputAnswer) => {
        if (this.waits.get(key)?.settle !== settle) return;
        this.waits.delete(key);
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(answer);
      };
      const onAbort = () => settle({ action: 'cancel' });
      this.waits.set(key, { turnId, settle });
      const timer = setTimeout(onAbort, backstopMs);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Hands `answer` to the wait of `requestId`, only if that wait belongs to `turnId`. */
  deliver(turnId: string, requestId: string, answer: InputAnswer): DeliveryResult {
    const waiting = this.waits.get(waitKey(turnId, requestId));
    if (!waiting || waiting.turnId !== turnId) return 'not_waiting';
    waiting.settle(answer);
    return 'delivered';
  }
}

function waitKey(turnId: string, requestId: string): string {
  return `${turnId}\u0000${requestId}`;
}

/** The longest timer Node keeps (about 24.8 days); longer ones fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * A call's request timeout that can stand still: while a person answers a 2025-era question the
 * server is waiting on us, not slow. Expiry aborts {@link signal} with the SDK's own timeout
 * error, so the call fails exactly as if the SDK had timed it out. Progress restarts it (the SDK's
 * `resetTimeoutOnProgress`).
 */
export class CallDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private pauses = 0;
  private leftMs: number;
  private armedAt = 0;

  constructor(private readonly timeoutMs: number) {
    this.leftMs = timeoutMs;
    this.arm();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** A sign of life (progress): the full timeout again. */
  reset(): void {
    this.leftMs = this.timeoutMs;
    if (this.pauses === 0) this.arm();
  }

  /** The time until {@link resume} does not count. */
  pause(): void {
    if (this.pauses++ > 0) return;
    clearTimeout(this.timer);
    this.leftMs = Math.max(0, this.leftMs - (Date.now() - this.armedAt));
  }

  resume(): void {
    if (--this.pauses > 0) return;
    this.arm();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.armedAt = Date.now();
    this.timer = setTimeout(
      () =>
        this.controller.abort(
          new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out', { timeout: this.timeoutMs }),
        ),
      this.leftMs,
    );
  }
}

/** What a 2025-era server gets back for a person's answer: URL mode never carries content. */
export function elicitResult(
  request: Pick<InputRequestSpec, 'kind'>,
  answer: InputAnswer,
): { action: InputAnswer['action']; content?: InputAnswer['content'] } {
  if (answer.action === 'accept' && request.kind === 'form') return { action: 'accept', content: answer.content ?? {} };
  return { action: answer.action };
}
