/**
 * `durable-mcp/workflow`: MCP tools from a user's own workflow code, on the call path an agent turn
 * uses (the same reconcile, placement, fast path, tasks, questions and failover), not a copy.
 *
 *   const mcp = await openMcpSession();
 *   const outcome = await mcp.callTool('mcp__everything__echo', { message: 'hi' });
 *   await mcp.close();
 */
import { condition, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  RefusalType,
  SESSION_ID_PATTERN,
  type CallOutcome,
  type InputRequest,
  type LegacyInputReport,
  type ToolInfo,
  type TurnLimits,
  type TurnStatus,
} from '../contract/index.js';
import { answerInputUpdate, legacyInputAskedUpdate } from '../contract/definitions.js';
import { resolveLimits } from './activityOptions.js';
import { callRequestProblem } from './bounds.js';
import { runCall } from './calls.js';
import { refusal } from './failures.js';
import { checkAnswer, takeAnswer } from './inputs.js';
import { checkLegacyReport, legacyInputAsked } from './legacyInputs.js';
import { openServers } from './openServers.js';
import { endTurnSession } from './session.js';
import { TurnState, type TurnContext } from './turnState.js';

export { answerInputUpdate } from '../contract/definitions.js';
export type { CallOutcome, InputAnswer, InputRequest, ToolInfo, TurnLimits, TurnStatus } from '../contract/index.js';

/** Options of {@link openMcpSession}. */
export interface McpSessionOptions {
  /**
   * The session whose servers the calls use. Default: this workflow's ID (which must then be a
   * valid session ID: letters, digits and `._:-`, at most 128 characters). A worker keeps a
   * session's servers between opens until its idle stop, so the next run of this workflow (after
   * continue-as-new) or another workflow naming the same session reuses them.
   */
  sessionId?: string;
  /** The worker that held the session's servers last ({@link McpSession.workerQueue}), tried first. */
  preferredWorkerQueue?: string;
  /** Allowed-tools matchers (`mcp__github__*`); they only narrow what the worker's operator allows. */
  allowedTools?: string[];
  /** Tools refused on top of the operator's rules; a deny always wins. */
  disallowedTools?: string[];
  /** Timeouts and limits of the calls (the turn's defaults otherwise; see docs/plugin.md). */
  limits?: TurnLimits;
  /**
   * Show the session's calls as this workflow's current details in the Temporal UI. Default false:
   * the workflow's details stay its own.
   */
  showDetails?: boolean;
}

/** Options of one {@link McpSession.callTool}. */
export interface McpCallOptions {
  /**
   * The call's ID, which makes it exactly-once: the same ID again in this session returns the
   * same outcome without calling the tool again (a model's tool-call ID is the natural one).
   * Default: `call-<n>`, counted per session in the order the workflow makes its calls.
   */
  id?: string;
}

/** The sessions this workflow opened, on the workflow's own globals (kept apart per workflow by the SDK). */
interface Registry {
  sessions: McpSession[];
}
const REGISTRY = '__durableMcpSessions';

/**
 * Reconciles the session's servers on a worker with the durable-mcp plugin and freezes their tool
 * list. The servers are those the worker's operator configured (its config dir, the plugin's
 * options); workflow code never names a command, a file or a URL. Throws an `ApplicationFailure`
 * naming the field when the options are invalid.
 */
export async function openMcpSession(options: McpSessionOptions = {}): Promise<McpSession> {
  const info = workflowInfo();
  const sessionId = options.sessionId ?? info.workflowId;
  if (!SESSION_ID_PATTERN.test(sessionId)) {
    throw refusal(
      RefusalType.turnInput,
      `${options.sessionId === undefined ? "this workflow's ID" : 'sessionId'} ${JSON.stringify(sessionId.slice(0, 140))} is not a valid session ID (letters, digits and . _ : -, at most 128 characters); pass sessionId`,
      { field: 'sessionId' },
    );
  }
  const session = new McpSession(
    {
      input: {
        sessionId,
        // No references: only the operator's trusted layers (config dir, plugin options) apply.
        refs: { workspace: '', mcpConfigFiles: [], inlineSpecs: [] },
        ...(options.preferredWorkerQueue !== undefined ? { preferredWorkerQueue: options.preferredWorkerQueue } : {}),
        ...(options.allowedTools !== undefined ? { allowedTools: options.allowedTools } : {}),
        ...(options.disallowedTools !== undefined ? { disallowedTools: options.disallowedTools } : {}),
        ...(options.limits !== undefined ? { limits: options.limits } : {}),
      },
      limits: resolveLimits(options.limits),
      sharedQueue: info.taskQueue,
      firstRunId: info.firstExecutionRunId,
      state: new TurnState(options.showDetails === true ? undefined : () => undefined),
    },
    sessionId,
  );
  registry().sessions.push(session);
  await openServers(session.ctx, sessionId);
  session.ctx.state.details.ready(session.ctx.input);
  return session;
}

/** The MCP servers of one session, opened from workflow code. */
export class McpSession {
  private readonly calls = new Map<string, Promise<CallOutcome>>();
  private counter = 0;

  /** @internal Use {@link openMcpSession}. */
  constructor(
    /** @internal */ readonly ctx: TurnContext,
    /** The session's ID. */ readonly sessionId: string,
  ) {}

  /** The tools the session's servers offer and its rules allow, by public name (`mcp__<server>__<tool>`). */
  get tools(): ToolInfo[] {
    return this.ctx.state.start?.tools ?? [];
  }

  /** Each server's state when the session opened (a failed one names its cause). */
  get status(): TurnStatus | undefined {
    return this.ctx.state.start?.status;
  }

  /** What the model should be told about the servers (ready, failed, refused), for a system prompt. */
  get serversParagraph(): string {
    return this.ctx.state.start?.serversParagraph ?? '';
  }

  /** The worker holding the session's servers now: pass it as `preferredWorkerQueue` to the next open. */
  get workerQueue(): string {
    return this.ctx.state.workerQueue;
  }

  /** The questions the session's running calls wait on; answer them with the `answerInput` Update. */
  pendingInputs(): InputRequest[] {
    return this.ctx.state.progress().pendingInputs ?? [];
  }

  /**
   * Calls a tool with every guarantee of a turn's call; resolves with the recorded outcome. A tool's
   * own error, an unknown tool or a refused one is an outcome (`isError`, `status: 'error'`), not a
   * throw; a malformed request throws a non-retryable `ApplicationFailure`.
   */
  callTool(name: string, args: Record<string, unknown> = {}, options: McpCallOptions = {}): Promise<CallOutcome> {
    const id = options.id ?? `call-${++this.counter}`;
    const earlier = this.calls.get(id);
    if (earlier) return earlier;
    const request = { id, name, arguments: args };
    const problem = this.ctx.state.ended ? 'the session was closed' : callRequestProblem(request);
    if (problem) throw refusal(RefusalType.callRequest, problem);
    this.ctx.state.touch();
    const call = runCall(this.ctx, request);
    this.calls.set(id, call);
    return call;
  }

  /**
   * Waits for the running calls, then closes the session for this workflow. With `endSession` the
   * worker stops the session's servers now (allowed only when the session is this workflow's
   * own, its ID the workflow's); otherwise they stay for a later open until the worker's idle stop.
   */
  async close(options: { endSession?: boolean } = {}): Promise<void> {
    const { state } = this.ctx;
    state.ended ??= 'endTurn';
    await condition(() => state.inFlight === 0);
    const reg = registry();
    reg.sessions = reg.sessions.filter((s) => s !== this);
    if (options.endSession === true) await endTurnSession(state.workerQueue, this.sessionId);
  }
}

/**
 * This workflow's open sessions. The first open installs the two Updates a call's questions arrive
 * by (a person's answer, and a 2025-era server's question reported by the call's activity); each
 * finds the session whose call it concerns.
 */
function registry(): Registry {
  const g = globalThis as unknown as Record<string, Registry | undefined>;
  const existing = g[REGISTRY];
  if (existing) return existing;
  const created: Registry = { sessions: [] };
  g[REGISTRY] = created;
  const byRequest = (requestId: unknown) =>
    created.sessions.find((s) => typeof requestId === 'string' && s.ctx.state.pendingInputs.has(requestId));
  const byCall = (report: unknown) =>
    created.sessions.find((s) => s.ctx.state.askingAttempts.has((report as Partial<LegacyInputReport>)?.callId ?? ''));
  // A request or call no session knows is checked against an empty state, which refuses it in the validators' own words.
  const none = () => new TurnState(() => undefined);
  setHandler(answerInputUpdate, (requestId, answer) => takeAnswer(byRequest(requestId)!.ctx.state, requestId, answer), {
    validator: (requestId, answer) => checkAnswer(byRequest(requestId)?.ctx.state ?? none(), requestId, answer),
  });
  setHandler(legacyInputAskedUpdate, (report) => legacyInputAsked(byCall(report)!.ctx, report), {
    validator: (report) => checkLegacyReport(byCall(report)?.ctx.state ?? none(), report),
  });
  return created;
}
