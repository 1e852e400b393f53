import { ApplicationFailure, Context, CancelledFailure } from '@temporalio/activity';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { scrubDeep, scrubberFor } from '../config/secrets.js';
import { ConfigError, type LoadedConfig } from '../config/types.js';
import type { ConfigRefs } from '../config/types.js';
import { ServerUnavailableError } from '../mcp/managedServer.js';
import type { ServerPool } from '../mcp/pool.js';
import { renderServersParagraph } from '../shaping/serversParagraph.js';
import { FailureType, type ActivityName, type CallOutcome, type CallToolInput, type ContentBlock, type ListToolsInput, type ReconcileInput, type ReconcileResult, type ToolInfo, MAX_NESTING_DEPTH, nestedDeeperThan } from '../contract/index.js';

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
  /** How often a pending call heartbeats. */
  heartbeatIntervalMs?: number;
}

export function createActivities(deps: ActivityDeps) {
  const { pool, logger, scrub } = deps;

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
    // An open interactive turn may still call: its servers are held for its idle limit.
    const status = await pool.reconcile(input.sessionId, config, { holdMs: input.turnIdleMs, workspace: input.refs.workspace });
    logger.info({ sessionId: input.sessionId, servers: status.servers.map((s) => `${s.name}:${s.state}`) }, 'servers reconciled');
    // The status is recorded in history: a secret value that reached it (an error that quotes a
    // spec, a server's stderr) must not.
    const clean = scrubResult(status, scrub);
    return { workerQueue: deps.workerQueue, status: clean, serversParagraph: renderServersParagraph(clean) };
  }

  async function listTools(input: ListToolsInput): Promise<ToolInfo[]> {
    return pool.tools(input.sessionId);
  }

  async function callTool(input: CallToolInput): Promise<CallOutcome> {
    const ctx = Context.current();
    const startedAt = new Date();
    const beat = setInterval(() => ctx.heartbeat({ pending: true }), deps.heartbeatIntervalMs ?? 2000);
    // A remote server's header values and URL secrets are not in the worker's environment, so the
    // environment scrubber alone would let a server that echoes them put them into history.
    let scrubAll = scrub;
    try {
      const result = await pool.callTool(input.sessionId, input.server, input.tool, input.arguments, {
        signal: ctx.cancellationSignal,
        timeoutMs: input.requestTimeoutMs,
        onServerSecrets: (values) => {
          const own = scrubberFor(values);
          scrubAll = (text) => own(scrub(text));
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
      throw toFailure(err, input, scrubAll);
    } finally {
      clearInterval(beat);
    }
  }

  // The keys are the activity type names recorded in history: the contract's, checked here.
  return { reconcileServers, listTools, callTool } satisfies Record<ActivityName, (input: never) => Promise<unknown>>;
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

export type Activities = ReturnType<typeof createActivities>;
