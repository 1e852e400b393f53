import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApplicationFailure, Context, CancelledFailure } from '@temporalio/activity';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { scrubDeep, scrubberFor } from '../config/secrets.js';
import { ConfigError, type LoadedConfig } from '../config/types.js';
import type { ConfigRefs } from '../config/types.js';
import { RefusedCallError, ServerUnavailableError } from '../mcp/managedServer.js';
import type { ServerPool } from '../mcp/pool.js';
import { renderServersParagraph } from '../shaping/serversParagraph.js';
import type { Governance, GovernanceService } from '../governance/index.js';
import {
  FailureType, type ActivityName, type CallOutcome, type CallToolInput, type ContentBlock, type ListToolsInput, type PostToolHookInput, type PostToolUseHooksResult,
  type PreToolUseHooksResult, type ReconcileInput, type ReconcileResult, type ToolHookInput, type ToolInfo, MAX_NESTING_DEPTH, nestedDeeperThan, preToolUseProofText,
} from '../contract/index.js';

/**
 * The part of the worker's server pool the activities use: workflow-tier tests pass a fake one
 * instead of starting server processes.
 */
export type SessionServers = Pick<ServerPool, 'reconcile' | 'tools' | 'callTool'>;

/** What the activities need; tests pass real or fake parts explicitly. */
export interface ActivityDeps {
  pool: SessionServers;
  /** This worker's unique task queue. */
  workerQueue: string;
  /**
   * Resolves config references into entries; runs on the worker, which decides what of them it
   * honours. `turn.sessionId` is part of what the references' proof signs.
   */
  loadConfig: (refs: ConfigRefs, turn: { sessionId: string }) => Promise<LoadedConfig>;
  logger: Logger;
  /** Removes secret values from messages that go into history. */
  scrub: (text: string) => string;
  /**
   * The operator's allowed-tools rules and hooks (`createGovernance`). Absent: every tool is
   * listed and no hook runs.
   */
  governance?: GovernanceService;
  /**
   * Seals PreToolUse decisions. The operator's turn key, which every worker of the operator holds,
   * so a call that moves to another worker after its hooks ran still verifies. Absent: a key of
   * this process alone (such a call is then refused on the other worker, and says why).
   */
  turnKey?: Buffer;
}

/** Sessions whose governance is kept between a turn's reconcile and its calls; the oldest go first. */
const GOVERNANCE_SESSIONS_KEPT = 1000;

export function createActivities(deps: ActivityDeps) {
  const { pool, logger, scrub } = deps;
  const sealKey = deps.turnKey ?? randomBytes(32);
  // What the operator's files said when the turn reconciled: its tools were frozen, and its calls'
  // hooks run and are checked, under the same rules. Keyed by the turn as Temporal names it to the
  // activity, never by anything in the workflow's input.
  const governed = new Map<string, Governance>();

  function configFailure(err: unknown): unknown {
    if (err instanceof ConfigError) return ApplicationFailure.create({ type: FailureType.Config, message: scrub(err.message), nonRetryable: true });
    return err;
  }

  async function governanceFor(turnId: string, fresh = false): Promise<Governance | undefined> {
    if (!deps.governance) return undefined;
    const kept = governed.get(turnId);
    if (kept && !fresh) return kept;
    let g: Governance;
    try {
      g = await deps.governance.load();
    } catch (err) {
      throw configFailure(err);
    }
    governed.delete(turnId);
    governed.set(turnId, g);
    if (governed.size > GOVERNANCE_SESSIONS_KEPT) governed.delete(governed.keys().next().value!);
    return g;
  }

  async function reconcileServers(input: ReconcileInput): Promise<ReconcileResult> {
    let config: LoadedConfig;
    try {
      config = await deps.loadConfig(input.refs, { sessionId: input.sessionId });
    } catch (err) {
      if (err instanceof ConfigError) {
        throw ApplicationFailure.create({ type: FailureType.Config, message: scrub(err.message), nonRetryable: true });
      }
      throw err;
    }
    // Read before any server starts: a broken governance file stops the turn, naming the file and line.
    const turnId = currentTurnId();
    const g = await governanceFor(turnId, true);
    // An open interactive turn may still call: its servers are held for its idle limit.
    const status = await withHeartbeat(() => pool.reconcile(input.sessionId, config, { holdMs: input.turnIdleMs, workspace: input.refs.workspace, turnId }));
    logger.info({ sessionId: input.sessionId, servers: status.servers.map((s) => `${s.name}:${s.state}`) }, 'servers reconciled');
    // The status is recorded in history: a secret value that reached it (an error that quotes a
    // spec, a server's stderr) must not.
    const withWarnings = g && g.warnings.length > 0 ? { ...status, warnings: [...status.warnings, ...g.warnings] } : status;
    const clean = scrubResult(withWarnings, scrub);
    // The status keeps every tool (the operator reads it); the model's paragraph names only those it may call.
    let shown: ((name: string) => boolean) | undefined;
    try {
      shown = g && deps.governance?.visible(g, input);
    } catch (err) {
      throw configFailure(err);
    }
    const forModel = shown ? { ...clean, servers: clean.servers.map((s) => ({ ...s, tools: s.tools.filter(shown) })) } : clean;
    return { workerQueue: deps.workerQueue, status: clean, serversParagraph: renderServersParagraph(forModel) };
  }

  async function listTools(input: ListToolsInput): Promise<ToolInfo[]> {
    const tools = pool.tools(input.sessionId);
    const g = await governanceFor(currentTurnId());
    if (!g || !deps.governance) return tools;
    try {
      return deps.governance.govern(tools, g, input);
    } catch (err) {
      throw configFailure(err);
    }
  }

  /** Runs `run` heartbeating (reconcile, hooks): a lost worker is noticed like during a call. */
  async function withHeartbeat<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = Context.current();
    const stop = startHeartbeat(ctx);
    try {
      return await run(ctx.cancellationSignal);
    } finally {
      stop();
    }
  }

  async function preToolUseHooks(input: ToolHookInput): Promise<PreToolUseHooksResult> {
    const turnId = currentTurnId();
    const g = await governanceFor(turnId);
    if (!g || !deps.governance) return { decision: 'none', runs: [] };
    const service = deps.governance;
    const result = await withHeartbeat((signal) => service.preToolUse(g, input, signal));
    logger.info({ sessionId: input.sessionId, callId: input.callId, tool: input.name, decision: result.decision, hooks: result.runs.length }, 'PreToolUse hooks ran');
    // Recorded in history: a hook that echoes a secret, or writes one into the arguments, must not put it there.
    const clean = scrubResult(result, scrub);
    if (clean.decision === 'deny') return clean;
    // Sealed after scrubbing: the workflow calls with exactly the arguments recorded here.
    return { ...clean, proof: seal(preToolUseProofText(turnId, input.callId, input.name, clean.updatedInput ?? input.arguments)) };
  }

  function seal(text: string): string {
    return createHmac('sha256', sealKey).update(text, 'utf8').digest('hex');
  }

  /**
   * The operator's rules for this call, checked again where it runs: the workflow's tool list is
   * not taken on trust. A tool the rules refuse, or one with PreToolUse hooks but no sealed decision
   * for exactly this turn, call and arguments, is not sent.
   */
  async function checkCall(input: CallToolInput, turnId: string): Promise<void> {
    const g = await governanceFor(turnId);
    if (!g || !deps.governance) return;
    let governed: ToolInfo | undefined;
    try {
      [governed] = deps.governance.govern([{ name: input.name, server: input.server, tool: input.tool, description: '', inputSchema: {} }], g);
    } catch (err) {
      throw configFailure(err);
    }
    if (governed?.refusedBy !== undefined) throw new RefusedCallError(`${input.name} is not allowed: ${governed.refusedBy}`);
    if (governed?.hooks?.PreToolUse === undefined) return;
    const expected = Buffer.from(seal(preToolUseProofText(turnId, input.callId, input.name, input.arguments)), 'hex');
    const given = Buffer.from(input.hookProof ?? '', 'hex');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new RefusedCallError(`${input.name} has PreToolUse hooks, and this call carries no decision of theirs sealed by this operator's workers for this turn, call and arguments`);
    }
  }

  async function postToolUseHooks(input: PostToolHookInput): Promise<PostToolUseHooksResult> {
    const g = await governanceFor(currentTurnId());
    if (!g || !deps.governance) return { runs: [] };
    const service = deps.governance;
    const result = await withHeartbeat((signal) => service.postToolUse(g, input, signal));
    logger.info({ sessionId: input.sessionId, callId: input.callId, tool: input.name, hooks: result.runs.length }, 'PostToolUse hooks ran');
    return scrubResult(result, scrub);
  }

  async function callTool(input: CallToolInput): Promise<CallOutcome> {
    const ctx = Context.current();
    const startedAt = new Date();
    const stop = startHeartbeat(ctx, { pending: true });
    // A remote server's header values and URL secrets are not in the worker's environment, so the
    // environment scrubber alone would let a server that echoes them put them into history.
    let scrubAll = scrub;
    try {
      const turnId = currentTurnId();
      await checkCall(input, turnId);
      const result = await pool.callTool(input.sessionId, input.server, input.tool, input.arguments, {
        turnId,
        publicName: input.name,
        signal: ctx.cancellationSignal,
        timeoutMs: input.requestTimeoutMs,
        onServerSecrets: (values) => {
          // Rebuilt only when the list changes (a login refreshed during the call adds a token).
          let built: { key: string; own: (text: string) => string } | undefined;
          scrubAll = (text) => {
            const now = values();
            const key = now.join('\0');
            if (built?.key !== key) built = { key, own: scrubberFor(now) };
            return built.own(scrub(text));
          };
        },
        // Heartbeat details end up in history (the last ones with a timeout): scrub them like results.
        onProgress: (progress) => ctx.heartbeat({ progress: scrubResult(progress, scrubAll) }),
      });
      // A result this deep cannot be scrubbed, recorded or serialized; the tool did run, so say so
      // as the tool's own error rather than as a lost call.
      if (nestedDeeperThan(result, MAX_NESTING_DEPTH)) {
        return {
          status: 'ok',
          content: [{ type: 'text', text: `${input.name} ran, but its result is nested deeper than ${MAX_NESTING_DEPTH} levels and was not kept` }],
          isError: true,
          startedAt: startedAt.toISOString(),
          durationMs: Date.now() - startedAt.getTime(),
          attempts: ctx.info.attempt,
        };
      }
      const clean = scrubResult(result, scrubAll);
      return {
        status: 'ok',
        content: (clean.content ?? []) as ContentBlock[],
        isError: result.isError === true,
        ...(clean.structuredContent ? { structuredContent: clean.structuredContent } : {}),
        startedAt: startedAt.toISOString(),
        durationMs: Date.now() - startedAt.getTime(),
        attempts: ctx.info.attempt,
      };
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('tool call cancelled');
      if (err instanceof ApplicationFailure) throw err;
      throw toFailure(err, input, scrubAll);
    } finally {
      stop();
    }
  }

  // The keys are the activity type names recorded in history: the contract's, checked here.
  return { reconcileServers, listTools, callTool, preToolUseHooks, postToolUseHooks } satisfies Record<ActivityName, (input: never) => Promise<unknown>>;
}

/**
 * A server that was given a secret may echo it back; history must never hold it. Each string of the
 * result (object keys included) is scrubbed where it sits: scrubbing the JSON text instead would
 * miss a secret holding `"` or `\` (escaped there) and fail to parse again when a secret looks like
 * JSON syntax. An unchanged result is returned as it is.
 */
export function scrubResult<T>(result: T, scrub: (t: string) => string): T {
  return scrubDeep(result, scrub);
}

/**
 * Maps an error of a call to the failure type the workflow reads. The type decides whether Temporal
 * retries (a bad request or a server that is not running never is) and what the model is told: a
 * call that never started, one whose request timed out, or one whose connection was lost mid-call.
 */
export function toFailure(err: unknown, input: Pick<CallToolInput, 'name' | 'server'>, scrub: (t: string) => string): ApplicationFailure {
  const message = scrub(err instanceof Error ? err.message : String(err));
  if (err instanceof RefusedCallError) {
    return ApplicationFailure.create({ type: FailureType.BadRequest, message, nonRetryable: true });
  }
  if (err instanceof ServerUnavailableError) {
    return ApplicationFailure.create({ type: FailureType.ServerUnavailable, message, nonRetryable: true });
  }
  if (err instanceof McpError) {
    if (err.code === ErrorCode.InvalidParams || err.code === ErrorCode.MethodNotFound || err.code === ErrorCode.InvalidRequest) {
      return ApplicationFailure.create({ type: FailureType.BadRequest, message: `${input.name}: ${message}`, nonRetryable: true });
    }
    if (err.code === ErrorCode.RequestTimeout) {
      return ApplicationFailure.create({ type: FailureType.ToolTimeout, message: `${input.name}: ${message}` });
    }
  }
  return ApplicationFailure.create({ type: FailureType.Transport, message: `${input.name} (server "${input.server}"): ${message}` });
}

/**
 * How often an activity heartbeats when Temporal gives it no heartbeat timeout: nothing then times
 * out, but a cancellation reaches an activity only in the answer to a heartbeat.
 */
const UNTIMED_HEARTBEAT_INTERVAL_MS = 2000;

/**
 * Heartbeats the activity of `ctx` until the returned function is called: at once, so a slow start
 * cannot miss the first beat, then every half of the activity's own heartbeat timeout. A fixed
 * interval would outlast a short timeout the turn asked for, and a call still running would be
 * taken for one whose worker was lost. The SDK sends beats to the server at most every 80 % of the
 * timeout, so half of it keeps one in every window.
 */
function startHeartbeat(ctx: Context, details?: unknown): () => void {
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  const intervalMs = timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs / 2 : UNTIMED_HEARTBEAT_INTERVAL_MS;
  const beat = () => ctx.heartbeat(details);
  beat();
  const timer = setInterval(beat, intervalMs);
  return () => clearInterval(timer);
}

/** The turn an activity works for, as Temporal reports it: the workflow ID, which every run of a turn keeps. */
function currentTurnId(): string {
  const turnId = Context.current().info.workflowExecution?.workflowId;
  // A standalone activity (started by a client, outside any workflow) belongs to no turn.
  if (turnId === undefined) throw ApplicationFailure.create({ type: FailureType.BadRequest, message: 'this activity runs only inside a turn workflow', nonRetryable: true });
  return turnId;
}

export type Activities = ReturnType<typeof createActivities>;
