/** One running interactive turn: its calls (bounded in flight), their inputs and cancellation, and its end. */
import type { WorkflowHandle } from '@temporalio/client';
import {
  END_TURN_DETACH_UPDATE_ID,
  END_TURN_UPDATE_ID,
  type CallOutcome,
  type CallRequest,
  type EndTurnOptions,
  type InputAnswer,
  type InputAnswerReceipt,
  type InputRequest,
  type ToolInfo,
  type TurnResult,
  type TurnStart,
  type TurnStatus,
} from '../contract/index.js';
import {
  callToolUpdate as callToolDef,
  cancelCallUpdate as cancelCallDef,
  endTurnUpdate as endTurnDef,
  endTurnWithOptionsUpdate as endTurnWithOptionsDef,
  type AgentTurnWorkflow,
} from '../contract/definitions.js';
// Not the shaping index: its token counter loads a tokenizer that most commands never use.
import { DEFAULT_SHAPE_LIMITS, type ShapeLimits } from '../shaping/limits.js';
import type { ModelView } from '../shaping/index.js';
import { answerWhileRunning, pendingInputsOf, sendAnswer, type CallInputOptions } from './inputs.js';
import { answersWithoutSecrets, refuseAnswerSecrets, refuseCallSecrets } from './secrets.js';

/**
 * A call cancelled while it waited in the client for a slot: it was never sent, so the turn has no
 * record of it and the tool did not run.
 */
function cancelledBeforeSentOutcome(now: string): CallOutcome {
  return {
    status: 'error',
    content: [],
    isError: false,
    errorKind: 'cancelled',
    errorMessage:
      'the call was cancelled before it was sent to the turn (it waited for a free slot): the tool did not run',
    startedAt: now,
    durationMs: 0,
    attempts: 0,
  };
}

/** The server's default `history.maxInFlightUpdates`. */
const DEFAULT_MAX_CALLS_IN_FLIGHT = 10;

/** A call waiting for a slot: `resolve(true)` sends it, `resolve(false)` drops it unsent (cancelled). */
interface WaitingCall {
  id: string;
  resolve: (send: boolean) => void;
}

/** How a {@link Turn} bounds its calls in flight; see {@link TurnClientOptions.maxCallsInFlight}. */
export interface CallQueueOptions {
  /** Calls sent to the server at once (default 10); the rest wait in order. */
  maxCallsInFlight?: number;
  /** Called with the number of calls in flight each time it changes. */
  onCallsInFlight?: (inFlight: number) => void;
}

/** One running interactive turn. */
export class Turn implements TurnStart {
  /** The turn's workflow ID, `<sessionId>/turn-<n>`. */
  readonly turnId: string;
  /** The task queue of the worker that holds the session's servers (its calls run there). */
  readonly workerQueue: string;
  /** Each server's state, tools and warnings, as reconciled when the turn started. */
  readonly status: TurnStatus;
  /** The turn's tool list, frozen for the turn (public names `mcp__<server>__<tool>`). */
  readonly tools: ToolInfo[];
  /** What the model should know about its servers this turn (put it in the system prompt). */
  readonly serversParagraph: string;
  private readonly maxCallsInFlight: number;
  private readonly onCallsInFlight?: (inFlight: number) => void;
  private callsInFlight = 0;
  private readonly waitingCalls: WaitingCall[] = [];
  /** IDs of the calls sent and not yet answered, with how many of each (a retried ID counts twice). */
  private readonly sentCalls = new Map<string, number>();

  constructor(
    readonly handle: WorkflowHandle<AgentTurnWorkflow>,
    start: TurnStart,
    private readonly shapeLimits: ShapeLimits = DEFAULT_SHAPE_LIMITS,
    /** Secret values (by variable name) that call arguments must not hold; see {@link TurnClientOptions.secrets}. */
    private readonly secrets?: Record<string, string>,
    callQueue: CallQueueOptions = {},
  ) {
    this.maxCallsInFlight = callQueue.maxCallsInFlight ?? DEFAULT_MAX_CALLS_IN_FLIGHT;
    if (!(this.maxCallsInFlight >= 1))
      throw new Error(`maxCallsInFlight must be at least 1 (got ${this.maxCallsInFlight})`);
    this.onCallsInFlight = callQueue.onCallsInFlight;
    this.turnId = start.turnId;
    this.workerQueue = start.workerQueue;
    this.status = start.status;
    this.tools = start.tools;
    this.serversParagraph = start.serversParagraph;
  }

  /**
   * Runs one tool call. The update ID is the call's `id` (the model's tool-call ID), so sending
   * the same call again returns the recorded outcome instead of running the tool twice.
   */
  callTool(request: CallRequest, options: CallInputOptions = {}): Promise<CallOutcome> {
    try {
      refuseCallSecrets(this.secrets, request);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return this.withCallSlot(request.id, () => {
      const running = this.handle.executeUpdate(callToolDef, { args: [request], updateId: request.id });
      const { onInput } = options;
      if (!onInput) return running;
      const answering = answerWhileRunning(this.handle, request.id, running, {
        ...options,
        onInput: answersWithoutSecrets(this.secrets, onInput),
      });
      // A failing handler fails the call here (the turn keeps its question open for another answer).
      return Promise.race([running, answering.then(() => running)]);
    });
  }

  /** The input requests of this turn's running calls that wait for an answer. */
  pendingInputs(): Promise<InputRequest[]> {
    return pendingInputsOf(this.handle);
  }

  /** See {@link TurnClient.answerInput}. */
  answerInput(requestId: string, answer: InputAnswer): Promise<InputAnswerReceipt> {
    try {
      refuseAnswerSecrets(this.secrets, requestId, answer);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return sendAnswer(this.handle, requestId, answer);
  }

  /**
   * Runs `send` once fewer than `maxCallsInFlight` calls are in flight; later calls wait in order. A
   * finishing call hands its slot straight to the next waiting one, so the count never exceeds the
   * bound and a waiting call is never overtaken by a new one. A waiting call that is cancelled
   * leaves the queue without sending anything.
   */
  private async withCallSlot(id: string, send: () => Promise<CallOutcome>): Promise<CallOutcome> {
    if (this.callsInFlight < this.maxCallsInFlight) {
      this.callsInFlight += 1;
      this.onCallsInFlight?.(this.callsInFlight);
    } else if (!(await new Promise<boolean>((resolve) => this.waitingCalls.push({ id, resolve })))) {
      return cancelledBeforeSentOutcome(new Date().toISOString());
    }
    this.sentCalls.set(id, (this.sentCalls.get(id) ?? 0) + 1);
    try {
      return await send();
    } finally {
      const left = this.sentCalls.get(id)! - 1;
      if (left > 0) this.sentCalls.set(id, left);
      else this.sentCalls.delete(id);
      const next = this.waitingCalls.shift();
      if (next) {
        next.resolve(true);
      } else {
        this.callsInFlight -= 1;
        this.onCallsInFlight?.(this.callsInFlight);
      }
    }
  }

  /**
   * Runs a call and also renders its outcome for the model: text in `<toolOutput>`
   * under the token cap, images that fit, and a note for everything not shown. The full outcome
   * stays in history.
   */
  async callToolForModel(
    request: CallRequest,
    limits: ShapeLimits = this.shapeLimits,
    inputs: CallInputOptions = {},
  ): Promise<{ outcome: CallOutcome; model: ModelView }> {
    const outcome = await this.callTool(request, inputs);
    const { shapeForModel } = await import('../shaping/shapeResult.js');
    return { outcome, model: await shapeForModel(outcome, limits) };
  }

  /**
   * Cancels a call. One that is running: its activity is cancelled and the MCP request aborted, which
   * sends `notifications/cancelled` to the server. One still waiting here for a slot (beyond
   * `maxCallsInFlight`): it is never sent, and its `callTool` resolves with an error outcome of kind
   * `cancelled` saying the tool did not run (the turn's history has no record of it). Returns false
   * if no such call is waiting or running.
   */
  async cancelCall(id: string): Promise<boolean> {
    let dropped = 0;
    for (let i = this.waitingCalls.length - 1; i >= 0; i -= 1) {
      const waiting = this.waitingCalls[i]!;
      if (waiting.id !== id) continue;
      this.waitingCalls.splice(i, 1);
      waiting.resolve(false);
      dropped += 1;
    }
    if (dropped > 0 && !this.sentCalls.has(id)) return true;
    const running = await this.handle.executeUpdate(cancelCallDef, { args: [id] });
    return running || dropped > 0;
  }

  /**
   * Ends the turn and returns its result. With `{ endSession: true }` the session ends too: once
   * the turn's calls are done its worker stops the session's servers (see {@link TurnClient.endSession}).
   * With `{ detach: true }` calls that run as MCP tasks are not waited for: each is answered as
   * `detached` (its task goes on; a later turn takes it up with a call naming its `taskId`).
   */
  async end(options?: EndTurnOptions): Promise<TurnResult> {
    await sendEndTurn(this.handle, options);
    return this.handle.result();
  }
}

/**
 * The `endTurn` Update; without options exactly as before they existed. A detaching end has an
 * Update ID of its own: sent while a plain end waits for a task, it must not be taken for a retry.
 */
export async function sendEndTurn(
  handle: WorkflowHandle<AgentTurnWorkflow>,
  options: EndTurnOptions | undefined,
): Promise<void> {
  const endSession = options?.endSession === true ? { endSession: true } : {};
  if (options?.detach === true)
    await handle.executeUpdate(endTurnWithOptionsDef, {
      updateId: END_TURN_DETACH_UPDATE_ID,
      args: [{ ...endSession, detach: true }],
    });
  else if (options?.endSession === true)
    await handle.executeUpdate(endTurnWithOptionsDef, { updateId: END_TURN_UPDATE_ID, args: [endSession] });
  else await handle.executeUpdate(endTurnDef, { updateId: END_TURN_UPDATE_ID });
}
