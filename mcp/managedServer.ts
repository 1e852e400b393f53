import { InsufficientScopeError, type CallToolResult, type Tool, type Transport } from '@modelcontextprotocol/client';
import { randomUUID } from 'node:crypto';
import type { TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ProtocolEra } from '../contract/index.js';
import type { ServerEntry } from '../config/types.js';
import { describeExit, describeStartFailure, lostText, startTimeoutText } from './failureText.js';
import type { LoginFetchEvents, LoginProblem } from './login.js';
import { WireTracker, classifyPingFailure, lostOnWire, redact, terminateRemoteSession } from './httpTransport.js';
import { connectWithEra } from './era.js';
import { PendingRequests, RemoteWatchdog, livenessRequest } from './liveness.js';
import {
  MAX_LISTING_TTL_MS,
  MAX_SCHEMA_DEPTH,
  listAllTools,
  toolListingPage,
  type RefusedTool,
} from './toolListing.js';
import { ROOTS_SYNC_WAIT_MS, RootsAnnouncer } from './roots.js';
import { readTaskInputRequests, type NeedsInput } from './inputRequests.js';
import type { LegacyInputAsker } from './legacyInputs.js';
import { LegacyQuestionRouter, type LegacyInputListener } from './legacyQuestions.js';
import { ScrubbedStderr } from './scrubbedStderr.js';
import { createServerClient, openTransport, type ManagedServerDeps, type TransportEvents } from './serverConnection.js';
import { ConnectionLostError, ServerUnavailableError } from './serverErrors.js';
import { ProcessGroupStdioTransport } from './stdioTransport.js';
import { offersModernTasks, taskSessionOver, type TaskRequestClient } from './taskRequests.js';
import { callInRounds, sentDefinition, type CallOptions } from './toolCall.js';

/** A result taken as the server sent it (a task's result is the tool's, read by the caller). */
const ANY_RESULT = z.record(z.string(), z.unknown());

/** Lifecycle of one server inside a session. */
export type ManagedState = 'idle' | 'starting' | 'ready' | 'failed' | 'stopped';

/** Bound on the DELETE that ends a Streamable HTTP session when a server stops. */
const TERMINATE_TIMEOUT_MS = 2000;

/** What the Streamable HTTP transport reports when it stops trying to resume a closed stream. */
const UNRESUMABLE_STREAM_RE = /^Maximum reconnection attempts \(\d+\) exceeded/;

/**
 * One MCP server of one session: its process or connection, its client and its tool list. It
 * starts the server, watches for its loss and stops it; listing, calls, questions and roots are
 * each their own module's job, over the connection this class holds.
 */
export class ManagedServer {
  state: ManagedState = 'idle';
  /** The last listing; kept until the server says its tools changed (or a new process starts). */
  tools: Tool[] = [];
  /** Tools of the last listing left out: invalid, or schemas nesting too deeply to be recorded. */
  refusedTools: RefusedTool[] = [];
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
  /** Why this shelf server needs a (new) login, as its last refused request said. */
  loginProblem?: LoginProblem;
  /** This server run's identity: a stdio server's MCP tasks live only as long as its process. */
  readonly instance = randomUUID();
  private client?: TaskRequestClient;
  private transport?: Transport;
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
  /** The server's 2025-era questions, routed to the call or task holder they belong to. */
  private readonly questions: LegacyQuestionRouter;
  /** The roots this server was last shown (only when it is offered roots). */
  private readonly roots?: RootsAnnouncer;

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
    this.questions = new LegacyQuestionRouter(this.log, (text) => this.scrubText(text));
    if (deps.roots) this.roots = new RootsAnnouncer(deps.roots);
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

  /** 2025-era `elicitation/create` requests this server sent. */
  get legacyElicitations(): number {
    return this.questions.received;
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
          await this.connect(() => Math.max(1, began + timeoutMs - Date.now()));
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

  /** Opens the transport and settles the era (see `connectWithEra`) within `timeoutMs`. */
  private async connect(timeoutMs: () => number): Promise<void> {
    const connected = await connectWithEra({
      entry: this.entry,
      remote: this.remote,
      verdicts: this.deps.eraVerdicts,
      timeoutMs,
      createTransport: async () => {
        this.transport = await openTransport(this.entry, this.deps, this.wire, this.transportEvents());
        return this.transport;
      },
      createClient: (versionNegotiation) =>
        createServerClient({
          clientVersion: this.deps.clientVersion,
          versionNegotiation,
          questions: this.questions,
          ...(this.roots ? { roots: this.roots } : {}),
          onClose: (client) => {
            if (client === this.client) this.onClosed();
          },
          onError: (err) => this.onTransportError(err),
        }),
      log: this.log,
    });
    this.client = connected;
    this.era = connected.getProtocolEra();
    connected.setNotificationHandler('notifications/tools/list_changed', () => {
      this.toolsStale = true;
    });
  }

  private transportEvents(): TransportEvents {
    const login: LoginFetchEvents = {
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
    return {
      onSecrets: (values) => {
        this.secrets = values;
      },
      login,
      onStderr: (chunk) => this.stderrTail.push(chunk),
      onJunk: (line) => {
        this.junkLines += 1;
        // Scrubbed before cut: a secret across the cut would not be found whole afterwards.
        const clean = this.deps.scrub(line);
        this.firstJunkLine ??= clean.slice(0, 200);
        this.log.warn({ stdout: clean.slice(0, 500) }, 'server wrote a non-protocol line to stdout');
      },
    };
  }

  /** Lists every page of tools within the server's start timeout (see {@link listAllTools}). */
  async listTools(): Promise<Tool[]> {
    const client = this.requireClient();
    // Cleared before asking, so a list_changed that arrives while we list marks the next turn's listing stale again.
    this.toolsStale = false;
    try {
      const listedAt = Date.now();
      const listing = await listAllTools(
        (params, timeout) => this.pending.run((signal) => toolListingPage(client, params, { signal, timeout })),
        // Headers exist only on the modern Streamable HTTP wire; elsewhere the annotation is inert.
        { timeoutMs: this.startTimeoutMs, checkHeaders: this.era === 'modern' && this.entry.type === 'http' },
      );
      this.listingFreshUntil =
        this.era === 'modern' ? listedAt + Math.min(Math.max(listing.ttlMs ?? 0, 0), MAX_LISTING_TTL_MS) : undefined;
      this.refusedTools = listing.refused.map((t) => ({
        name: this.scrubText(t.name),
        reason: this.scrubText(t.reason),
      }));
      const deep = this.refusedTools.filter((t) => t.reason.startsWith('its schemas nest'));
      const invalid = this.refusedTools.filter((t) => !t.reason.startsWith('its schemas nest'));
      if (deep.length > 0)
        this.log.warn(
          { tools: deep.map((t) => t.name), maxDepth: MAX_SCHEMA_DEPTH },
          'tools left out: their schemas nest too deeply',
        );
      if (invalid.length > 0) this.log.warn({ tools: invalid }, 'tools left out: invalid tool definitions');
      this.tools = listing.tools;
      return listing.tools;
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
   * Calls a tool (see {@link callInRounds}). Rejects with {@link ConnectionLostError} as soon as the
   * server is known to be gone (stdio: its process exited; http/sse: the connection or session is lost).
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
    const toolDefinition = sentDefinition(this.tools, tool);
    const listener: LegacyInputListener | undefined =
      options.onDeclinedInput || options.askLegacyInput
        ? { ask: options.askLegacyInput, onDeclined: options.onDeclinedInput }
        : undefined;
    const unlisten = listener ? this.questions.listen(listener) : undefined;
    try {
      const channel = { client, pending: this.pending, roots: this.deps.roots };
      return await callInRounds(channel, tool, args, options, toolDefinition, listener);
    } catch (err) {
      // The server refused the call for want of scope: it did not run, and only a person's new
      // login can widen the access. The model reads that as the tool's error; nothing retries.
      const problem = this.loginProblem;
      if (err instanceof InsufficientScopeError && problem?.kind === 'insufficient_scope') {
        const text = `${this.entry.name} refused this call, so it did not run: its login ${problem.message}`;
        return { content: [{ type: 'text', text: this.scrubText(text) }], isError: true };
      }
      const lost = this.remote ? lostOnWire(err, this.entry.name, this.wire.last, (t) => this.scrubText(t)) : undefined;
      if (lost) void this.watchdog?.check(); // its request failed before the transport reported a loss
      throw lost ?? err;
    } finally {
      unlisten?.();
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
      this.taskSession = { client, session: taskSessionOver(client, this.instance) };
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
    return readTaskInputRequests(inputRequests, this.deps.roots);
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
    const release = this.questions.holdTask(taskId, ask);
    return this.pending
      .run(
        (inner) =>
          client.request({ method: 'tasks/result', params: { taskId } }, ANY_RESULT, {
            signal: inner,
            timeout: options.timeoutMs,
          }),
        options.signal,
      )
      .finally(release);
  }

  /**
   * Sends `notifications/roots/list_changed` when the roots offered now differ from those the
   * server last saw. A server that has read roots before is given up to `waitMs` to ask for the new
   * ones, so the turn's first call finds it scoped to them; a server that never asks is not waited for.
   */
  async syncRoots(waitMs = ROOTS_SYNC_WAIT_MS): Promise<void> {
    const client = this.client;
    if (!this.roots || !client || this.state !== 'ready') return;
    try {
      await this.roots.announce(async () => {
        await client.sendRootsListChanged();
        this.log.debug('roots changed; server notified');
      }, waitMs);
    } catch (err) {
      this.log.debug({ err: this.scrubText(String((err as Error)?.message ?? err)) }, 'could not announce new roots');
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
