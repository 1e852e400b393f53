import {
  Client,
  InsufficientScopeError,
  SdkError,
  SdkErrorCode,
  isInputRequiredResult,
  type CallToolResult,
  type Root,
  type Tool,
  type Transport,
  type VersionNegotiationOptions,
} from '@modelcontextprotocol/client';
import { randomUUID } from 'node:crypto';
import {
  createTaskSessionFromClient,
  type DispatchOptions,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';
import type { JsonValue } from '@modelcontextprotocol/ext-tasks/core';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  LEGACY_INPUT_KEY,
  MAX_INPUT_ROUNDS,
  MAX_NESTING_DEPTH,
  nestedDeeperThan,
  type InputReply,
  type InputRequestSpec,
  type ProtocolEra,
} from '../contract/index.js';
import type { ServerEntry } from '../config/types.js';
import { TailBuffer } from '../text/tailBuffer.js';
import { describeExit, describeStartFailure, lostText, startTimeoutText } from './failureText.js';
import { loginFetch, type LoginCredentials, type LoginFetchEvents, type LoginProblem } from './login.js';
import {
  WireTracker,
  classifyPingFailure,
  createRemoteTransport,
  redact,
  remoteSecrets,
  terminateRemoteSession,
} from './httpTransport.js';
import { connectWithEra, refuseServerRequest, type EraVerdicts } from './era.js';
import { PendingRequests, RemoteWatchdog, livenessRequest } from './liveness.js';
import { headerDeclarationProblem, invalidToolReason, toolListingPage, type ToolListingPage } from './toolListing.js';
import { rootsKey } from './roots.js';
import { UnservedInputRequestError, elicitationSpec, readInputRequired, type NeedsInput } from './inputRequests.js';
import { CallDeadline, MAX_TIMER_MS, elicitResult, type LegacyInputAsker } from './legacyInputs.js';
import type { StdioCommand } from './sandbox.js';
import { ProcessGroupStdioTransport } from './stdioTransport.js';
import { TaskRequestClient, offersModernTasks } from './taskRequests.js';

/** A result taken as the server sent it (a task's result is the tool's, read by the caller). */
const ANY_RESULT = z.record(z.string(), z.unknown());

/** The task a server request belongs to (`_meta["io.modelcontextprotocol/related-task"].taskId`), if it names one. */
export function relatedTaskId(params: unknown): string | undefined {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const related = meta?.['io.modelcontextprotocol/related-task'] as { taskId?: unknown } | undefined;
  return typeof related?.taskId === 'string' ? related.taskId : undefined;
}

/** Lifecycle of one server inside a session. */
export type ManagedState = 'idle' | 'starting' | 'ready' | 'failed' | 'stopped';

export interface ManagedServerDeps {
  logger: Logger;
  /** The server's whole environment, already stripped of secrets; throws when a variable is missing. */
  environment: () => Record<string, string>;
  /** Removes secret values from text that leaves the worker (errors, logs, status). */
  scrub: (text: string) => string;
  startTimeoutMs: number;
  clientVersion: string;
  /**
   * Headers for an `http`/`sse` server: its `headers` plus `Authorization: Bearer <token>` from
   * `bearerTokenEnv`, resolved on the worker at connect time; throws when the token variable is
   * missing. Default: the entry's `headers` only.
   */
  requestHeaders?: () => Record<string, string>;
  /**
   * What to spawn for a stdio server given its unsandboxed environment (the pool wraps servers of
   * untrusted layers in a sandbox here); throws when the server may not run. Default: the entry's
   * command, args and cwd with that environment.
   */
  stdioCommand?: (entry: ServerEntry, environment: () => Record<string, string>) => Promise<StdioCommand>;
  /** While calls to an `http`/`sse` server are in flight, ping it this often (default 1000 ms). */
  livenessIntervalMs?: number;
  /** A ping unanswered for this long counts as a strike; three in a row mean lost (default 2500 ms). */
  livenessTimeoutMs?: number;
  /**
   * The roots this server is offered now. Given: the client declares the `roots` capability and
   * answers `roots/list` with them; {@link ManagedServer.syncRoots} announces a change. Absent: no
   * roots capability.
   */
  roots?: () => Root[];
  /** Told when a start ends (warm spares included): how it ended and how long it took. */
  onStart?: (result: 'ready' | 'failed', durationMs: number) => void;
  /**
   * A shelf server's login (entries with `login`): its token is added to every request and
   * refreshed once after a 401. Absent: such a server is called without a token.
   */
  credentials?: LoginCredentials;
  /**
   * Tests only: the transport to use instead of the entry's own (e.g. one end of the MCP SDK's
   * `InMemoryTransport.createLinkedPair()`, with a server in the same process). Absent, as in
   * production: a process group for stdio, Streamable HTTP/SSE for a remote entry.
   */
  connect?: (entry: ServerEntry) => Transport | Promise<Transport>;
  /**
   * Era verdicts of stdio servers remembered within this worker, keyed by their config, so a
   * restart skips the probe. Absent: every start of an `auto` server probes.
   */
  eraVerdicts?: EraVerdicts;
}

/** A tool of a listing that was left out, and why. */
export interface RefusedTool {
  /** The tool's name as the server gave it (cut to 100 characters). */
  name: string;
  reason: string;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /** A later attempt of a call whose server asked for input: the answers and the server's state, sent as given. */
  inputReply?: InputReply;
  /**
   * The caller can ask a person (the turn's durable wait): a round of questions ends the call with
   * {@link NeedsInput}. Otherwise such a round fails the call with {@link UnservedInputRequestError}.
   */
  askPerson?: boolean;
  /** Told of each 2025-era `elicitation/create` this worker declined while the call was the only one in flight. */
  onDeclinedInput?: (request: DeclinedInput) => void;
  /**
   * Asks a person a 2025-era `elicitation/create` that arrives while this call is the only one in
   * flight on the server; the server gets the answer. The call's timeout stands still meanwhile.
   * Absent: such a question is declined at once ({@link onDeclinedInput}).
   */
  askLegacyInput?: LegacyInputAsker;
  /**
   * False when {@link askLegacyInput} never waits for a person (it ends the call instead, as a local
   * activity's does): the call keeps the SDK's own timeout, with no pausable deadline of its own.
   */
  legacyInputWaits?: boolean;
}

/** What one call in flight listens for: a 2025-era question, asked or declined. */
interface LegacyInputListener {
  options: CallOptions;
  deadline?: CallDeadline;
}

/** A 2025-era input request the worker declined. */
export interface DeclinedInput {
  mode: 'form' | 'url';
  message: string;
  /** Why no person was asked, for the model. */
  reason: string;
}

/** Pages of one tool listing (see {@link ManagedServer.listTools}). */
export const MAX_LIST_PAGES = 100;
/** Tools of one server; far more than a model can choose from. */
export const MAX_LISTED_TOOLS = 10_000;
/** Nesting depth of a tool's input or output schema (see MAX_NESTING_DEPTH). */
export const MAX_SCHEMA_DEPTH = MAX_NESTING_DEPTH;

/** Longest a modern server's listing is kept without asking again, whatever its `ttlMs` says. */
export const MAX_LISTING_TTL_MS = 24 * 60 * 60 * 1000;

/** Bound on the DELETE that ends a Streamable HTTP session when a server stops. */
const TERMINATE_TIMEOUT_MS = 2000;

/** How long a root change waits for a server that reads roots to ask for the new ones. */
export const ROOTS_SYNC_WAIT_MS = 1000;

/** One MCP server of one session: its process or connection, its client and its tool list. */
export class ManagedServer {
  state: ManagedState = 'idle';
  /** The last listing; kept until the server says its tools changed (or a new process starts). */
  tools: Tool[] = [];
  /** Tools of the last listing left out: invalid, or schemas nesting too deeply to be recorded. */
  refusedTools: RefusedTool[] = [];
  /** 2025-era `elicitation/create` requests this server sent (each declined). */
  legacyElicitations = 0;
  /** The calls in flight that listen for 2025-era questions. */
  private readonly legacyInputListeners = new Set<LegacyInputListener>();
  /** Who asks a person the questions a 2025-era task sends over `tasks/result`, by task ID. */
  private readonly taskInputAskers = new Map<string, LegacyInputAsker>();
  /** The wire era the server landed on, once connected. */
  era?: ProtocolEra;
  /** Set by `notifications/tools/list_changed`; the next {@link refresh} lists again. */
  toolsStale = false;
  /**
   * Modern servers: until when the last listing is fresh, from its `ttlMs` (absent or 0: stale at
   * once). Such a server sends no `list_changed` unless subscribed, so the next {@link refresh}
   * after this time lists again.
   */
  listingFreshUntil?: number;
  /** The server reached `ready` once: if it stops later it crashed, and reconciliation restarts it. */
  wasReady = false;
  error?: string;
  junkLines = 0;
  /** The first non-protocol stdout line (scrubbed, cut), so the status can show what it was. */
  firstJunkLine?: string;
  private client?: TaskRequestClient;
  private transport?: Transport;
  /** This server run's identity: a stdio server's MCP tasks live only as long as its process. */
  readonly instance = randomUUID();
  /** The MCP task session over the current connection, made on first use. */
  private taskSession?: { client: TaskRequestClient; session: TaskEnabledSession };
  private readonly stderrTail = new ScrubbedStderr(
    (text) => this.deps.scrub(text),
    (line) => this.log.info({ stderr: line }, 'server stderr'),
  );
  private readonly log: Logger;
  private readonly wire = new WireTracker((text) => this.scrubText(text));
  private readonly pending: PendingRequests;
  /** Remote servers only: the SDK does not notice a vanished HTTP/SSE server by itself. */
  private readonly watchdog?: RemoteWatchdog;
  /** Header values and URL secrets of a remote server, removed from every text that leaves. */
  private secrets: string[] = [];
  /** Why this shelf server needs a (new) login, as its last refused request said. */
  loginProblem?: LoginProblem;
  /** The roots last announced to this server (at start, or by {@link syncRoots}). */
  private announcedRoots = '';
  /** How often the server asked `roots/list`; those that never ask are not waited for. */
  private rootsAsked = 0;
  private rootsWaiters: (() => void)[] = [];

  constructor(
    readonly entry: ServerEntry,
    private readonly deps: ManagedServerDeps,
  ) {
    this.log = deps.logger.child({ server: entry.name });
    if (this.remote) {
      this.watchdog = new RemoteWatchdog({
        readyClient: () => (this.state === 'ready' ? this.client : undefined),
        wire: this.wire,
        intervalMs: deps.livenessIntervalMs,
        timeoutMs: deps.livenessTimeoutMs,
        onLost: (cause) => this.markLost(cause),
      });
    }
    this.pending = new PendingRequests({
      onRequest: () => this.watchdog?.start(),
      onNone: () => this.watchdog?.stop(),
    });
  }

  /** Streamable HTTP or SSE (no process of ours), as opposed to stdio. */
  get remote(): boolean {
    return this.entry.type === 'http' || this.entry.type === 'sse';
  }

  /**
   * A 2026-07-28 server that offers the tasks extension: it may answer any call that declares the
   * extension with a task (its tools list no task support of their own in that era).
   */
  get offersModernTasks(): boolean {
    return this.era === 'modern' && offersModernTasks(this.client?.getServerCapabilities());
  }

  get pid(): number | undefined {
    return this.transport instanceof ProcessGroupStdioTransport ? this.transport.pid : undefined;
  }

  private get startTimeoutMs(): number {
    return this.entry.startTimeoutMs ?? this.deps.startTimeoutMs;
  }

  /** Starts the server: process/connection, handshake and first tool listing, under one deadline. */
  async start(): Promise<void> {
    this.state = 'starting';
    this.error = undefined;
    const began = Date.now();
    const timeoutMs = this.startTimeoutMs;
    let phase = this.remote ? 'connect' : 'spawn';
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(startTimeoutText(timeoutMs, phase))), timeoutMs);
    });
    try {
      await Promise.race([
        (async () => {
          phase = 'handshake';
          const connected = await connectWithEra({
            entry: this.entry,
            remote: this.remote,
            verdicts: this.deps.eraVerdicts,
            timeoutMs: () => Math.max(1, began + timeoutMs - Date.now()),
            createTransport: async () => {
              this.transport = await this.createTransport();
              return this.transport;
            },
            createClient: (era) => this.createClient(era),
            log: this.log,
          });
          this.client = connected;
          this.era = connected.getProtocolEra();
          connected.setNotificationHandler('notifications/tools/list_changed', () => {
            this.toolsStale = true;
          });
          phase = 'tool listing';
          await this.listTools();
        })(),
        deadline,
      ]);
      if ((this.state as ManagedState) === 'stopped') {
        // stop() ran while we were starting: do not come back to life as an orphan.
        await this.closeQuietly();
        return;
      }
      this.state = 'ready';
      this.wasReady = true;
      this.log.info({ pid: this.pid, tools: this.tools.length }, 'server ready');
      this.deps.onStart?.('ready', Date.now() - began);
    } catch (err) {
      this.error = this.scrubText(
        describeStartFailure(err, {
          remote: this.remote,
          transport: this.transport,
          stderr: this.stderrTail,
          lastWire: this.wire.last,
          junkLines: this.junkLines,
          firstJunkLine: this.firstJunkLine,
          scrub: (text) => this.scrubText(text),
        }),
      );
      // A server that refused us for want of a login says what to do, not "HTTP 401".
      if (this.loginProblem) this.error = this.scrubText(this.loginProblem.message);
      this.state = 'failed';
      this.log.warn({ err: this.error }, 'server failed to start');
      this.deps.onStart?.('failed', Date.now() - began);
      await this.closeQuietly();
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A client for one connection attempt. Sampling is never declared (deprecated in 2026-07-28, and
   * the worker holds no model): a server that asks anyway is refused in words the model can read.
   */
  private createClient(versionNegotiation: VersionNegotiationOptions): TaskRequestClient {
    const roots = this.deps.roots;
    // Elicitation is declared in both modes; a 2026-07-28 `input_required` is never fulfilled in
    // memory (autoFulfill: false): the call returns it, and the turn waits for a person durably.
    // `tasks`: the client knows 2025-11-25 tasks (it sends task-augmented calls); it runs none itself.
    // The 2026-07-28 tasks extension is declared per request, only on the requests of a call that
    // runs as a task (see withTasks): an ordinary call must not be answered with a task.
    const capabilities = {
      elicitation: { form: {}, url: {} },
      tasks: {},
      ...(roots ? { roots: { listChanged: true } } : {}),
    };
    const info = { name: 'durable-mcp', version: this.deps.clientVersion };
    const client = new TaskRequestClient(info, capabilities, {
      capabilities,
      versionNegotiation,
      inputRequired: { autoFulfill: false },
    });
    client.fallbackRequestHandler = (request) => Promise.reject(refuseServerRequest(request.method));
    client.onclose = () => {
      if (client === this.client) this.onClosed();
    };
    client.onerror = (err) => this.onTransportError(err);
    // A 2025-era server asks in the middle of the call, over the connection the call holds. The
    // request names no call: it is the call's only when one call is in flight here. That call asks
    // a person through its turn and holds the connection meanwhile; otherwise it is declined at
    // once, and the server says what that means in its result. Never logged: the answer.
    client.setRequestHandler('elicitation/create', async (request, ctx) => {
      this.legacyElicitations += 1;
      const params = request.params as { mode?: string; message?: unknown };
      const mode = params.mode === 'url' ? 'url' : 'form';
      // A question of a task names it: it belongs to whoever holds that task's `tasks/result`, never
      // to a call that happens to be in flight.
      const taskId = relatedTaskId(request.params);
      const only =
        taskId === undefined && this.legacyInputListeners.size === 1 ? [...this.legacyInputListeners][0] : undefined;
      const ask = taskId !== undefined ? this.taskInputAskers.get(taskId) : only?.options.askLegacyInput;
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
            return elicitResult(spec, await ask(spec, ctx.mcpReq.signal));
          } catch (err) {
            // The turn did not take the question (it refused it, or could not be reached).
            const why = this.scrubText(String((err as Error)?.message ?? err));
            reason = `the turn did not take the question: ${why}`;
            this.log.warn({ mode, err: why }, 'declined a 2025-era elicitation request the turn did not take');
          } finally {
            only?.deadline?.resume();
          }
        }
      } else {
        this.log.info({ mode }, 'declined a 2025-era elicitation request');
      }
      only?.options.onDeclinedInput?.({
        mode,
        message: typeof params.message === 'string' ? params.message : '',
        reason,
      });
      // Nobody refused a task's question that reached no person (it came as its holder let go):
      // `cancel` says so, where `decline` would read as a person's refusal.
      return { action: taskId !== undefined ? 'cancel' : 'decline' };
    });
    if (roots) {
      this.announcedRoots = rootsKey(roots());
      client.setRequestHandler('roots/list', () => {
        const now = roots();
        this.announcedRoots = rootsKey(now);
        this.rootsAsked += 1;
        for (const wake of this.rootsWaiters.splice(0)) wake();
        return { roots: now };
      });
    }
    return client;
  }

  private async createTransport(): Promise<Transport> {
    const { entry } = this;
    if (this.deps.connect) return this.deps.connect(entry);
    if (this.remote) {
      const headers = this.deps.requestHeaders?.() ?? { ...entry.headers };
      this.secrets = remoteSecrets(entry, headers);
      const { credentials } = this.deps;
      if (entry.login === undefined || !credentials || !entry.url)
        return createRemoteTransport(entry, headers, this.wire);
      const events: LoginFetchEvents = {
        onToken: (token) => {
          if (!this.secrets.includes(token)) this.secrets.push(token);
        },
        onProblem: (problem) => {
          this.loginProblem = problem;
        },
        onAuthorized: () => {
          this.loginProblem = undefined;
        },
      };
      const login = entry.login;
      const url = entry.url;
      return createRemoteTransport(entry, headers, this.wire, {
        wrapFetch: (inner) => loginFetch(inner, login, url, credentials, events),
      });
    }
    if (entry.type !== 'stdio' || !entry.command) {
      throw new Error(`transport "${entry.type}" is not supported`);
    }
    const launch = this.deps.stdioCommand
      ? await this.deps.stdioCommand(entry, this.deps.environment)
      : { command: entry.command, args: entry.args, env: this.deps.environment(), cwd: entry.cwd };
    return new ProcessGroupStdioTransport({
      ...launch,
      onStderr: (chunk) => this.stderrTail.push(chunk),
      onJunk: (line) => {
        this.junkLines += 1;
        // Scrubbed before cut: a secret across the cut would not be found whole afterwards.
        const clean = this.deps.scrub(line);
        this.firstJunkLine ??= clean.slice(0, 200);
        this.log.warn({ stdout: clean.slice(0, 500) }, 'server wrote a non-protocol line to stdout');
      },
    });
  }

  /**
   * Lists every page of tools, within the server's start timeout and {@link MAX_LIST_PAGES} pages
   * of at most {@link MAX_LISTED_TOOLS} tools in all: a server that answers with a `nextCursor`
   * forever would otherwise hold the session (and every later turn of it) while it is listed.
   * Tools whose schemas nest deeper than {@link MAX_SCHEMA_DEPTH} are left out: they parse, but
   * cannot be serialized into the turn's history, which would fail every turn of the session.
   */
  async listTools(): Promise<Tool[]> {
    const client = this.requireClient();
    // Cleared before asking, so a list_changed that arrives while we list marks the next turn's listing stale again.
    this.toolsStale = false;
    const timeoutMs = this.startTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    const overdue = (pages: number) =>
      new ListingBoundError(
        `tools/list did not finish within ${timeoutMs} ms (start timeout; ${pages} page(s) so far)`,
      );
    try {
      const tools: Tool[] = [];
      const refused: RefusedTool[] = [];
      let cursor: string | undefined;
      let pages = 0;
      const listedAt = Date.now();
      let ttlMs: number | undefined;
      do {
        if (pages >= MAX_LIST_PAGES) {
          throw new ListingBoundError(
            `tools/list still had a next page after ${MAX_LIST_PAGES} pages (${tools.length} tools): a listing may have at most ${MAX_LIST_PAGES} pages`,
          );
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw overdue(pages);
        const params = cursor ? { cursor } : undefined;
        let page: ToolListingPage;
        try {
          page = await this.pending.run((signal) => toolListingPage(client, params, { signal, timeout: remaining }));
        } catch (err) {
          if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout && Date.now() >= deadline - 50)
            throw overdue(pages);
          throw err;
        }
        pages += 1;
        if (pages === 1) ttlMs = page.ttlMs;
        for (const listed of page.tools) {
          const name = String((listed as { name?: unknown } | null)?.name ?? '').slice(0, 100);
          const invalid =
            invalidToolReason(listed) ??
            (tools.some((t) => t.name === name) ? 'another tool of the listing has the same name' : undefined) ??
            // Headers exist only on the modern Streamable HTTP wire; elsewhere the annotation is inert.
            (this.era === 'modern' && this.entry.type === 'http'
              ? headerDeclarationProblem((listed as Tool).inputSchema)
              : undefined);
          if (invalid) refused.push({ name, reason: invalid });
          else if (
            nestedDeeperThan((listed as Tool).inputSchema, MAX_SCHEMA_DEPTH) ||
            nestedDeeperThan((listed as Tool).outputSchema, MAX_SCHEMA_DEPTH)
          ) {
            refused.push({ name, reason: `its schemas nest deeper than ${MAX_SCHEMA_DEPTH} levels` });
          } else tools.push(listed as Tool);
        }
        if (tools.length > MAX_LISTED_TOOLS)
          throw new ListingBoundError(
            `tools/list returned more than ${MAX_LISTED_TOOLS} tools: a server may offer at most ${MAX_LISTED_TOOLS}`,
          );
        cursor = page.nextCursor;
      } while (cursor);
      this.listingFreshUntil =
        this.era === 'modern' ? listedAt + Math.min(Math.max(ttlMs ?? 0, 0), MAX_LISTING_TTL_MS) : undefined;
      this.refusedTools = refused.map((t) => ({ name: this.scrubText(t.name), reason: this.scrubText(t.reason) }));
      const deep = this.refusedTools.filter((t) => t.reason.startsWith('its schemas nest'));
      const invalid = this.refusedTools.filter((t) => !t.reason.startsWith('its schemas nest'));
      if (deep.length > 0)
        this.log.warn(
          { tools: deep.map((t) => t.name), maxDepth: MAX_SCHEMA_DEPTH },
          'tools left out: their schemas nest too deeply',
        );
      if (invalid.length > 0) this.log.warn({ tools: invalid }, 'tools left out: invalid tool definitions');
      this.tools = tools;
      return tools;
    } catch (err) {
      this.toolsStale = true;
      throw err;
    }
  }

  /**
   * Makes a ready server current for a new turn. Listing costs the server work (some build their
   * list on every request) and the answer only changes when it says so, so the last listing is
   * kept unless `notifications/tools/list_changed` came (a legacy server) or its `ttlMs` ran out (a
   * modern server, which says when to list again instead). Otherwise a ping makes sure it is still
   * there: a process that died after the last turn may not have been seen exiting yet, and a
   * remote server can vanish without a sign. Throws when the server does not answer.
   */
  async refresh(): Promise<void> {
    if (this.toolsStale || (this.listingFreshUntil !== undefined && Date.now() >= this.listingFreshUntil)) {
      await this.listTools();
      return;
    }
    const client = this.requireClient();
    try {
      await this.pending.run((signal) => livenessRequest(client, { signal, timeout: this.startTimeoutMs }));
    } catch (err) {
      // An error answer (a server without ping) still shows it is there.
      if (classifyPingFailure(err) !== 'alive') throw err;
    }
  }

  /**
   * Calls a tool. Rejects with {@link ConnectionLostError} as soon as the server is known to be
   * gone (stdio: its process exited; http/sse: the connection or session is lost).
   */
  callTool(
    tool: string,
    args: Record<string, unknown>,
    options: CallOptions & { askPerson: true },
  ): Promise<CallToolResult | NeedsInput>;
  callTool(tool: string, args: Record<string, unknown>, options: CallOptions): Promise<CallToolResult>;
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    options: CallOptions,
  ): Promise<CallToolResult | NeedsInput> {
    const client = this.requireClient();
    // The listed definition goes along so a modern server gets the tool's designated parameter
    // headers; without its output schema, since checking structured content after the tool ran
    // would report a call that already had its effect as a bad request. Recorded as it came.
    const listed = this.tools.find((t) => t.name === tool);
    const toolDefinition: Tool = listed
      ? { ...listed, outputSchema: undefined }
      : { name: tool, inputSchema: { type: 'object' } };
    const reply = options.inputReply;
    const retry: Record<string, unknown> = reply
      ? {
          inputResponses: { ...reply.ownResponses, ...reply.inputResponses },
          ...(reply.requestState !== undefined ? { requestState: reply.requestState } : {}),
        }
      : {};
    // Rounds this client answers alone (roots, state only) are retried here; a round that needs a
    // person ends the call, and the turn sends the answers with a new call.
    const listener: LegacyInputListener | undefined =
      options.onDeclinedInput || options.askLegacyInput ? { options } : undefined;
    if (listener) this.legacyInputListeners.add(listener);
    try {
      return await this.callRounds(client, tool, args, options, toolDefinition, retry, listener);
    } catch (err) {
      // The server refused the call for want of scope: it did not run, and only a person's new
      // login can widen the access. The model reads that as the tool's error; nothing retries.
      const problem = this.loginProblem;
      if (err instanceof InsufficientScopeError && problem?.kind === 'insufficient_scope') {
        return {
          content: [
            {
              type: 'text',
              text: this.scrubText(
                `${this.entry.name} refused this call, so it did not run: its login ${problem.message}`,
              ),
            },
          ],
          isError: true,
        };
      }
      throw err;
    } finally {
      if (listener) this.legacyInputListeners.delete(listener);
    }
  }

  private async callRounds(
    client: Client,
    tool: string,
    args: Record<string, unknown>,
    options: CallOptions,
    toolDefinition: Tool,
    first: Record<string, unknown>,
    listener: LegacyInputListener | undefined,
  ): Promise<CallToolResult | NeedsInput> {
    let retry = first;
    for (let round = 1; ; round += 1) {
      const params = { name: tool, arguments: args, ...retry } as { name: string; arguments: Record<string, unknown> };
      // A call that may wait for a person keeps its own timeout, which stands still during the wait;
      // the SDK's cannot.
      const deadline =
        options.askLegacyInput && options.legacyInputWaits !== false ? new CallDeadline(options.timeoutMs) : undefined;
      if (listener) listener.deadline = deadline;
      const onprogress =
        deadline && options.onProgress
          ? (p: Parameters<NonNullable<CallOptions['onProgress']>>[0]) => {
              deadline.reset();
              options.onProgress?.(p);
            }
          : deadline
            ? () => deadline.reset()
            : options.onProgress;
      const result = await this.pending
        .run(
          (signal) =>
            client.callTool(params, {
              signal: deadline ? AbortSignal.any([signal, deadline.signal]) : signal,
              timeout: deadline ? MAX_TIMER_MS : options.timeoutMs,
              resetTimeoutOnProgress: true,
              onprogress,
              toolDefinition,
              allowInputRequired: true,
            }),
          options.signal,
        )
        .finally(() => deadline?.stop());
      if (!isInputRequiredResult(result)) return result;
      const needs = readInputRequired(result, this.deps.roots);
      if (needs.requests.length > 0) {
        if (options.askPerson === true) return needs;
        throw new UnservedInputRequestError(`${tool} asks a person for input, and this caller cannot ask one`);
      }
      if (round >= MAX_INPUT_ROUNDS)
        throw new RefusedCallError(`the server asked for input ${round} times without finishing the call`);
      retry = {
        ...(Object.keys(needs.ownResponses).length > 0 ? { inputResponses: needs.ownResponses } : {}),
        ...(needs.requestState !== undefined ? { requestState: needs.requestState } : {}),
      };
    }
  }

  /**
   * Runs `request` on the server's MCP task session (tasks/get, tasks/result, tasks/cancel and
   * task-augmented calls, which the SDK client does not send itself). Like a call, it fails at
   * once when the server is known to be gone. On a 2026-07-28 server that offers the tasks
   * extension, the session's requests declare it and go out as they are (see {@link TaskRequestClient}).
   */
  withTasks<T>(
    request: (session: TaskEnabledSession, tool: (name: string) => Tool | undefined, signal: AbortSignal) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const client = this.requireClient();
    if (this.taskSession?.client !== client) {
      const modern = client.getProtocolEra() === 'modern' && offersModernTasks(client.getServerCapabilities());
      const session = modern
        ? createTaskSessionFromClient(client, {
            endpointId: this.instance,
            rawDispatch: (req: JsonValue, options?: DispatchOptions) => client.rawRequest(req, options),
            v2RequestFraming: client.taskFraming(),
          })
        : createTaskSessionFromClient(client, { endpointId: this.instance });
      this.taskSession = { client, session };
    }
    const { session } = this.taskSession;
    return this.pending.run(
      (inner) => request(session, (name) => this.tools.find((t) => t.name === name), inner),
      signal,
    );
  }

  /**
   * A 2026-07-28 task's `inputRequests` (from `tasks/get`) read as a call's are: elicitations for a
   * person, `roots/list` answered here with the roots offered now. Throws
   * {@link UnservedInputRequestError} for what no person can answer (sampling) or cannot read.
   */
  readTaskInput(inputRequests: unknown): NeedsInput {
    const requests =
      typeof inputRequests === 'object' && inputRequests !== null && !Array.isArray(inputRequests)
        ? (inputRequests as Record<string, unknown>)
        : {};
    return readInputRequired(
      { resultType: 'input_required', inputRequests: requests } as Parameters<typeof readInputRequired>[0],
      this.deps.roots,
    );
  }

  /**
   * Sends one 2025-11-25 `tasks/result` for a task that waits for input: the server sends its
   * questions (`elicitation/create` naming the task) over that request, and `ask` answers them.
   * Resolves with the task's result once it ends; `signal` ends the request earlier (the task
   * goes on), which rejects.
   */
  taskResultWithInput(
    taskId: string,
    ask: LegacyInputAsker,
    options: { signal: AbortSignal; timeoutMs: number },
  ): Promise<Record<string, unknown>> {
    const client = this.requireClient();
    this.taskInputAskers.set(taskId, ask);
    return this.pending
      .run(
        (inner) =>
          client.request({ method: 'tasks/result', params: { taskId } }, ANY_RESULT, {
            signal: inner,
            timeout: options.timeoutMs,
          }),
        options.signal,
      )
      .finally(() => {
        if (this.taskInputAskers.get(taskId) === ask) this.taskInputAskers.delete(taskId);
      });
  }

  /**
   * Sends `notifications/roots/list_changed` when the roots offered now differ from those the
   * server last saw. A server that has read roots before is given up to `waitMs` to ask for the new
   * ones, so the turn's first call finds it scoped to them; a server that never asks is not waited for.
   */
  async syncRoots(waitMs = ROOTS_SYNC_WAIT_MS): Promise<void> {
    const roots = this.deps.roots;
    const client = this.client;
    if (!roots || !client || this.state !== 'ready') return;
    const key = rootsKey(roots());
    if (key === this.announcedRoots) return;
    this.announcedRoots = key;
    let timer: NodeJS.Timeout | undefined;
    const asked =
      this.rootsAsked > 0
        ? new Promise<void>((wake) => {
            this.rootsWaiters.push(wake);
            timer = setTimeout(wake, waitMs);
          })
        : undefined;
    try {
      await client.sendRootsListChanged();
      this.log.debug('roots changed; server notified');
      await asked;
    } catch (err) {
      this.log.debug({ err: this.scrubText(String((err as Error)?.message ?? err)) }, 'could not announce new roots');
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    this.watchdog?.stop();
    await this.closeQuietly();
  }

  /** The SDK reports some transport failures only here, while the request they belong to keeps waiting. */
  private onTransportError(err: Error): void {
    if (this.state !== 'ready') return;
    this.log.debug({ err: this.scrubText(err.message) }, 'transport error');
    // A stream the server closed on purpose (SSE polling) is resumed by the transport; once it
    // gives up, the calls waiting on that stream can never be answered, though the server may
    // still answer pings.
    if (UNRESUMABLE_STREAM_RE.test(err.message) && this.pending.size > 0) {
      this.markLost(`a response stream was closed and could not be resumed (${err.message})`);
      return;
    }
    void this.watchdog?.check();
  }

  /** The client closed without us asking: the process exited or the transport gave up. */
  private onClosed(): void {
    // Runs before the SDK rejects pending requests with a bare "Connection closed".
    if (this.state === 'ready') this.markLost(describeExit(this.transport, this.stderrTail, 'connection closed'));
  }

  /** The server is gone while ready: fail what is waiting and count it as crashed (wasReady stays). */
  private markLost(cause: string): void {
    if (this.state !== 'ready') return;
    const text = this.scrubText(cause);
    this.state = 'failed';
    this.error = lostText(this.remote, text);
    this.log.warn({ err: this.error, inFlight: this.pending.size }, 'server stopped');
    this.watchdog?.stop();
    this.pending.failAll(new ConnectionLostError(this.entry.name, text));
    if (this.remote) void this.closeQuietly({ lost: true });
  }

  private requireClient(): TaskRequestClient {
    if (this.state !== 'ready' && this.state !== 'starting') {
      throw new ServerUnavailableError(this.entry.name, this.error ?? `server is ${this.state}`);
    }
    if (!this.client) throw new ServerUnavailableError(this.entry.name, 'server has no connection');
    return this.client;
  }

  /** Values only this server was given (header values, URL secrets, its login's tokens): scrubbed from its results. */
  get secretValues(): readonly string[] {
    const login = this.entry.login;
    const tokens = login !== undefined ? this.deps.credentials?.secretsOf?.(login) : undefined;
    return tokens?.length ? [...this.secrets, ...tokens] : this.secrets;
  }

  /** Removes secret values (environment secrets, header values, URL secrets) from text that leaves the worker. */
  private scrubText(text: string): string {
    return redact(this.deps.scrub(text), this.secretValues);
  }

  private async closeQuietly(options: { lost?: boolean } = {}): Promise<void> {
    const client = this.client;
    const transport = this.transport;
    this.client = undefined;
    if (!options.lost) {
      // end the Streamable HTTP session before closing; pointless once the server is gone.
      await terminateRemoteSession(transport, TERMINATE_TIMEOUT_MS).catch((err: unknown) => {
        this.log.debug({ err: this.scrubText((err as Error).message) }, 'ending the HTTP session failed');
      });
    }
    try {
      await (client ? client.close() : transport?.close());
    } catch (err) {
      this.log.debug({ err: this.scrubText(String((err as Error)?.message ?? err)) }, 'error while closing server');
    }
    // Client.close() closes the transport; make sure a stdio group is gone even if it was not connected.
    if (transport) await transport.close().catch(() => undefined);
  }
}

/** What the Streamable HTTP transport reports when it stops trying to resume a closed stream. */
const UNRESUMABLE_STREAM_RE = /^Maximum reconnection attempts \(\d+\) exceeded/;

/** Longest stderr line kept whole; past it only the (scrubbed) end of the line is kept. */
const MAX_STDERR_LINE = 64 * 1024;
const STDERR_LINE_KEEP = 4096;

/**
 * A server's stderr, scrubbed a whole line at a time before it is logged or kept for a failure
 * message. A pipe hands over chunks that can end inside a secret, and the kept tail is cut at its
 * start: scrubbing chunks, or the tail after the cut, would let part of a secret through.
 */
class ScrubbedStderr extends TailBuffer {
  /** The line being written (no newline yet), raw or, once over-long, its scrubbed end. */
  private partial = '';

  constructor(
    private readonly scrub: (text: string) => string,
    private readonly onLine: (line: string) => void,
  ) {
    super();
  }

  override push(chunk: string): void {
    const text = this.partial + chunk;
    const end = text.lastIndexOf('\n');
    this.partial = end < 0 ? text : text.slice(end + 1);
    if (this.partial.length > MAX_STDERR_LINE) {
      // Scrubbed, then cut: any secret still incomplete lies within the kept end and is found when
      // the line completes (scrubbing scrubbed text again changes nothing).
      this.partial = `…${this.scrub(this.partial).slice(-STDERR_LINE_KEEP)}`;
    }
    if (end < 0) return;
    for (const line of text.slice(0, end).split('\n')) {
      const clean = this.scrub(line);
      super.push(`${clean}\n`);
      if (clean.trim()) this.onLine(clean);
    }
  }

  /** The last `n` lines, the unfinished one included (a process may die mid-line). */
  override lastLines(n: number): string {
    const rest = this.scrub(this.partial).trimEnd();
    const done = super.lastLines(n);
    if (!rest) return done;
    return (done ? `${done}\n${rest}` : rest).split('\n').slice(-n).join('\n');
  }
}

/** The server went away while a call was waiting for it: the call may have run. */
export class ConnectionLostError extends Error {
  override name = 'ConnectionLostError';
  constructor(
    readonly server: string,
    cause: string,
  ) {
    super(`connection to MCP server "${server}" lost: ${cause}`);
  }
}

/** A listing past its deadline or page cap: the server is failed with this message. */
export class ListingBoundError extends Error {
  override name = 'ListingBoundError';
}

/** The server is not running: the call never started, so it is always safe to retry. */
export class ServerUnavailableError extends Error {
  override name = 'ServerUnavailableError';
  constructor(
    readonly server: string,
    reason: string,
  ) {
    super(`MCP server "${server}" is not available: ${reason}`);
  }
}

/** A call the worker refuses to send (the operator's rules, a missing hook decision, a name that does not match). */
export class RefusedCallError extends Error {
  override name = 'RefusedCallError';
}
