import type { CallToolResult, Transport } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { LoadedConfig, ServerEntry } from '../config/types.js';
import type { ToolInfo, TurnStatus } from '../contract/index.js';
import { remoteSecrets } from './httpTransport.js';
import type { NeedsInput } from './inputRequests.js';
import type { LoginCredentials } from './login.js';
import type { ManagedServer, ManagedState } from './managedServer.js';
import { newSession, rememberTurn, renewHold, type Session } from './poolSession.js';
import { admitRoot } from './roots.js';
import type { UntrustedStdioOptions } from './sandbox.js';
import { ServerFactory } from './serverFactory.js';
import { RefusedCallError, ServerUnavailableError } from './serverErrors.js';
import { ServerRetirement } from './serverRetirement.js';
import { sessionStatus } from './sessionStatus.js';
import { SessionToolNames, sessionTools } from './sessionTools.js';
import { SparePool } from './spares.js';
import type { CallOptions } from './toolCall.js';
import type { ToolPrefix } from './toolNames.js';

/** Dependencies and settings of a {@link ServerPool}. */
export interface ServerPoolOptions {
  logger: Logger;
  /** The complete environment a stdio server starts with (worker env minus secrets, plus env/envFrom). */
  environmentFor: (entry: ServerEntry) => Record<string, string>;
  /** Headers of an http/sse server (`headers` plus the bearer token), resolved at connect time. */
  requestHeadersFor?: (entry: ServerEntry) => Record<string, string>;
  /** Removes secret values from text that leaves the worker. */
  scrub?: (text: string) => string;
  /** DMCP_START_TIMEOUT: per-server deadline for start, handshake and first listing. */
  startTimeoutMs: number;
  toolPrefix: ToolPrefix;
  clientVersion?: string;
  /**
   * How stdio servers of untrusted layers (workspace, plugins) run: DMCP_UNTRUSTED_STDIO, the
   * bwrap binary, the paths they must not see. Default: sandboxed, hiding nothing extra.
   */
  untrustedStdio?: UntrustedStdioOptions;
  /**
   * DMCP_WARM_SPARES: started spare processes kept per trusted stdio entry, handed to the next new
   * session that names the same entry (see `mcp/spares.ts`). Default 0: none.
   */
  warmSpares?: number;
  /** How long after a session asked for an entry its spare is (re)started (default 1000 ms). */
  spareDelayMs?: number;
  /**
   * DMCP_WORKSPACE_ROOTS: the folders a turn's workspace must lie in to be offered to servers as
   * their MCP root. Undefined: anywhere; empty: never. A workspace inside the data or config dir
   * or another path the sandbox hides (`untrustedStdio.hiddenPaths`, not its home) or `/` is never offered.
   */
  rootsWithin?: string[];
  /** Told about server starts and restarts (metrics); called synchronously, must not throw. */
  observer?: PoolObserver;
  /** Shelf servers' OAuth logins: tokens for entries with `login`, refreshed on the worker. */
  credentials?: LoginCredentials;
  /**
   * Tests only: connects each server instead of starting its process or dialling its URL (see
   * `ManagedServerDeps.connect`), so pool logic can be tested against servers in the test's own
   * process. Absent in production.
   */
  connect?: (entry: ServerEntry) => Transport | Promise<Transport>;
}

/** What the pool reports as it goes (the worker's metrics). Names are config keys, never session IDs. */
export interface PoolObserver {
  /** A server's start ended (a warm spare's too): ready or failed, and how long it took. */
  serverStarted?(server: string, result: 'ready' | 'failed', durationMs: number): void;
  /** A server that had been ready stopped on its own (crash, lost connection) and is started again. */
  serverRestarted?(server: string): void;
}

/** A tool call through the pool. */
export interface PoolCallOptions extends CallOptions {
  /**
   * Receives, before the call starts, what is secret about this server beyond the worker's
   * environment: a remote server's header values and URL secrets, and its login's tokens. Results
   * and progress are scrubbed of them too, since a server may echo what it was sent. A getter: a
   * login refreshed during the call adds a token that must be scrubbed as well.
   */
  onServerSecrets?: (values: () => readonly string[]) => void;
  /**
   * The turn the call belongs to: its run chain (workflow ID and first run, see `currentTurnChain`),
   * never the workflow ID alone, which a later workflow may reuse. The pool serves it only if that
   * chain reconciled the session on this worker under the config its servers now run: anyone can
   * start a workflow that names a session, so the session ID alone proves nothing.
   */
  turnId: string;
  /** The tool's public name: it must map to `server` and `tool` in the session's listing. */
  publicName?: string;
}

export interface ReconcileOptions {
  /** The turn reconciling, as its run chain ({@link PoolCallOptions.turnId}): it may call the session's servers until another config replaces them. */
  turnId?: string;
  /** Keep the session at least this long after now and after each of its calls (an interactive turn's idle limit). */
  holdMs?: number;
  /**
   * The turn's workspace (`ConfigRefs.workspace`): the one host folder a sandboxed server may
   * write. Absent: a workspace-layer server gets the folder its `.agents/mcp.json` is in, a plugin
   * server none.
   */
  workspace?: string;
  /**
   * Offer the workspace to the servers as their MCP root (the turn named it explicitly), where
   * {@link ServerPoolOptions.rootsWithin} allows it. Absent: no root this turn.
   */
  offerRoot?: boolean;
}

/**
 * The worker's MCP servers, keyed by session: a session's turns share server
 * processes as long as they land on this worker and the config is unchanged.
 */
export class ServerPool {
  private readonly sessions = new Map<string, Session>();
  private readonly toolNames: SessionToolNames;
  private readonly scrub: (text: string) => string;
  private readonly retirement: ServerRetirement;
  private shuttingDown = false;
  private readonly serverFactory: ServerFactory;
  private readonly spares: SparePool;

  constructor(private readonly options: ServerPoolOptions) {
    this.scrub = options.scrub ?? ((t) => t);
    this.toolNames = new SessionToolNames(options.toolPrefix);
    this.retirement = new ServerRetirement(options.logger);
    this.serverFactory = new ServerFactory(options, this.scrub);
    this.spares = new SparePool({
      perEntry: options.warmSpares ?? 0,
      logger: options.logger,
      // Built like a session's server: only trusted entries get spares, and their launch does not
      // depend on the session (the workspace matters to sandboxed servers alone).
      create: (entry) => this.serverFactory.create(entry),
      environmentFor: options.environmentFor,
      fillDelayMs: options.spareDelayMs ?? 1000,
    });
  }

  /**
   * Brings the session's servers up to date with `config` and reports the status.
   *
   * `holdMs`: an interactive turn stays open until it has gone this long without a call (its
   * idle limit), and a memory server must not lose its state under an open turn. So the session
   * is held for `holdMs` from now and from the end of each of its calls, even past the session
   * idle time. Absent (a batch turn): no new hold, and an existing one is left as it is.
   */
  async reconcile(sessionId: string, config: LoadedConfig, options: ReconcileOptions = {}): Promise<TurnStatus> {
    if (this.shuttingDown) throw new Error('worker is shutting down');
    const session = this.session(sessionId);
    const holds = options.holdMs !== undefined && Number.isFinite(options.holdMs) && options.holdMs > 0;
    if (holds) session.holdMs = options.holdMs;
    if (options.workspace) session.workspace = options.workspace;
    session.offerRoot = options.offerRoot === true;
    session.busy += 1;
    const run = session.lock.then(async () => {
      const status = await this.reconcileNow(sessionId, session, config);
      if (options.turnId !== undefined) rememberTurn(session, options.turnId, config.hash);
      return status;
    });
    session.lock = run.catch(() => undefined);
    try {
      return await run;
    } finally {
      session.busy -= 1;
      session.lastUsed = Date.now();
      // The turn's idle clock starts once its servers are up, not when it asked for them.
      if (holds) renewHold(session);
    }
  }

  private async reconcileNow(sessionId: string, session: Session, config: LoadedConfig): Promise<TurnStatus> {
    if (this.shuttingDown) throw new Error('worker is shutting down');
    // A turn that did not name its workspace offers no root: a server that replaces its own
    // directories with the client's roots (server-filesystem) keeps those its operator gave it.
    const offered = session.offerRoot ? session.workspace : undefined;
    const admitted =
      offered === undefined
        ? {}
        : await admitRoot(offered, {
            within: this.options.rootsWithin,
            protected: this.options.untrustedStdio?.hiddenPaths ?? [],
          });
    if (admitted.problem && offered !== undefined && session.rootChecked !== offered) {
      this.options.logger.info(
        { workspace: offered, why: admitted.problem },
        'workspace not offered to servers as a root',
      );
    }
    session.rootChecked = offered;
    session.root = admitted.root;
    if (session.configHash !== config.hash) {
      const old = [...session.servers.values()];
      session.servers.clear();
      for (const entry of config.servers) session.servers.set(entry.name, this.serverFactory.create(entry, session));
      session.configHash = config.hash;
      await Promise.all(old.map((s) => this.retirement.retire(s)));
    }
    session.config = config;

    await Promise.all(
      [...session.servers.entries()].map(async ([name, server]) => {
        if (!server.entry.enabled) return;
        if (server.state === 'idle') return this.startServer(sessionId, session, name, server);
        if (server.state === 'failed' && server.wasReady) return this.restart(sessionId, session, name, server);
        // A refresh that failed for a passing reason is tried again each turn; other login problems
        // wait for a new login, which changes the entry's loginId and so the config.
        if (server.state === 'failed' && server.loginProblem?.kind === 'refresh_failed')
          return this.restart(sessionId, session, name, server, false);
        // A sandbox lets its server write one workspace: for another one the server starts anew.
        if (server.state === 'ready' && this.serverFactory.boundElsewhere(server, session))
          return this.restart(sessionId, session, name, server, false);
        // A server that never started waits for a config change (it would cost its start timeout every turn).
        if (server.state !== 'ready') return;
        try {
          // Lists again only after list_changed; otherwise the last listing stands.
          await server.refresh();
        } catch (err) {
          // The process may have died after the last turn without its exit being seen yet.
          this.options.logger.warn(
            { server: name, err: this.scrub((err as Error).message) },
            'server did not answer; restarting it',
          );
          await this.restart(sessionId, session, name, server);
        }
      }),
    );
    // Servers kept from the last turn learn about another workspace before this turn's first call.
    await Promise.all([...session.servers.values()].map((s) => s.syncRoots()));
    if (this.spares.enabled && this.sessions.get(sessionId) === session) {
      this.spares.use(
        sessionId,
        [...session.servers.values()].map((s) => ({ entry: s.entry, ready: s.state === 'ready' })),
      );
    }
    return this.status(sessionId);
  }

  private async restart(
    sessionId: string,
    session: Session,
    name: string,
    old: ManagedServer,
    crashed = true,
  ): Promise<void> {
    const fresh = this.serverFactory.create(old.entry, session);
    session.servers.set(name, fresh);
    if (crashed) this.options.observer?.serverRestarted?.(name);
    await this.retirement.retire(old);
    await this.startServer(sessionId, session, name, fresh);
  }

  /** Starts a session's new server, or puts a warm spare of the same entry in its place. */
  private async startServer(sessionId: string, session: Session, name: string, server: ManagedServer): Promise<void> {
    const spare = await this.spares.take(server.entry);
    if (spare) {
      // The session may have been stopped while the spare was checked: it must not keep a process then.
      if (this.sessions.get(sessionId) === session && !this.shuttingDown && session.servers.get(name) === server) {
        session.servers.set(name, spare);
        this.serverFactory.handOver(spare, session);
        return;
      }
      await spare.stop();
    }
    await server.start();
  }

  /** The session's status as of now. */
  status(sessionId: string): TurnStatus {
    return sessionStatus(this.session(sessionId), this.toolNames, this.scrub);
  }

  /** The tools of the session's ready servers, as the model will see them. */
  tools(sessionId: string): ToolInfo[] {
    const session = this.session(sessionId);
    return sessionTools(session, this.toolNames.of(session));
  }

  /** Calls a tool on the session's server. Throws {@link ServerUnavailableError} when it is not running. */
  callTool(
    sessionId: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: PoolCallOptions & { askPerson: true },
  ): Promise<CallToolResult | NeedsInput>;
  callTool(
    sessionId: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: PoolCallOptions,
  ): Promise<CallToolResult>;
  async callTool(
    sessionId: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: PoolCallOptions,
  ): Promise<CallToolResult | NeedsInput> {
    return this.withServer(sessionId, server, tool, options, (managed) =>
      managed.callTool(tool, args, { ...options, askPerson: options.askPerson === true } as CallOptions & {
        askPerson: true;
      }),
    );
  }

  /**
   * Runs `run` with the session's server under the checks of {@link callTool} (the turn reconciled
   * it here, the public name is the tool's), counted as a call in flight: the MCP task requests of
   * a call (create, poll, result, cancel).
   */
  async withServer<T>(
    sessionId: string,
    server: string,
    tool: string,
    options: Omit<PoolCallOptions, keyof CallOptions> & Pick<CallOptions, 'signal'>,
    run: (managed: ManagedServer) => Promise<T>,
  ): Promise<T> {
    const session = this.sessions.get(sessionId);
    const managed = session?.servers.get(server);
    if (!session || !managed) throw new ServerUnavailableError(server, 'not started on this worker');
    // Refused as "not started": a turn whose servers another turn reconciled under another config
    // reconciles its own again and calls then; a turn that never reconciled here cannot call.
    if (session.turns.get(options.turnId) !== session.configHash)
      throw new ServerUnavailableError(server, 'not reconciled for this turn on this worker');
    if (options.publicName !== undefined) {
      // The operator's rules match public names: the name checked must be the one this tool has.
      const listed = this.toolNames.of(session).publicName(server, tool);
      if (listed !== undefined && listed !== options.publicName)
        throw new RefusedCallError(
          `${options.publicName} is not the name of tool "${tool}" of server "${server}" (that is ${listed})`,
        );
    }
    if (options.onServerSecrets && (managed.entry.type === 'http' || managed.entry.type === 'sse')) {
      let headers = managed.entry.headers;
      try {
        headers = this.options.requestHeadersFor?.(managed.entry) ?? headers;
      } catch {
        // A token that cannot be resolved now was never sent: only the literal headers can come back.
      }
      const fixed = remoteSecrets(managed.entry, headers);
      options.onServerSecrets(() => [...fixed, ...managed.secretValues]);
    }
    session.lastUsed = Date.now();
    session.busy += 1;
    this.retirement.callStarted(managed);
    try {
      return await run(managed);
    } finally {
      session.busy -= 1;
      session.lastUsed = Date.now();
      // The turn's idle clock restarts when the call ends.
      renewHold(session);
      this.retirement.callEnded(managed);
    }
  }

  /**
   * Whether `turnId` reconciled the session here under its current config and its `server` is
   * ready to call. Creates nothing.
   */
  serves(sessionId: string, turnId: string, server: string): boolean {
    const session = this.sessions.get(sessionId);
    return session?.servers.get(server)?.state === 'ready' && session.turns.get(turnId) === session.configHash;
  }

  /** How many servers of all sessions are in each state, per server name (the worker's metrics). */
  serverStates(): { server: string; state: ManagedState; count: number }[] {
    const counts = new Map<string, { server: string; state: ManagedState; count: number }>();
    for (const session of this.sessions.values()) {
      for (const s of session.servers.values()) {
        const key = `${s.entry.name}\n${s.state}`;
        const row = counts.get(key) ?? { server: s.entry.name, state: s.state, count: 0 };
        row.count += 1;
        counts.set(key, row);
      }
    }
    return [...counts.values()];
  }

  /** Server PIDs of a session (operators and tests use them to see reuse). */
  pids(sessionId: string): Record<string, number | undefined> {
    const session = this.sessions.get(sessionId);
    return Object.fromEntries(
      [...(session?.servers ?? new Map<string, ManagedServer>()).entries()].map(([n, s]) => [n, s.pid]),
    );
  }

  /** PIDs of the warm spares waiting for a new session, by server name. */
  sparePids(): Record<string, number[]> {
    return this.spares.pids();
  }

  /** Resolves once no warm spare is waiting to be started or starting (tests and benchmarks). */
  sparesSettled(): Promise<void> {
    return this.spares.settled();
  }

  /** Stops a session's servers now (in-flight calls fail); the next turn starts them again. */
  async stopSession(sessionId: string): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    this.sessions.delete(sessionId);
    this.spares.release(sessionId, session.lastUsed);
    await Promise.all([...session.servers.values()].map((s) => s.stop()));
  }

  /**
   * Ends a session now, as its caller asked: its servers stop (stdio process groups, Streamable
   * HTTP sessions ended with DELETE, streams closed), each with a call in flight once that call
   * ends, as a config change retires them; the next turn of the session starts them again. Returns
   * how many servers it had here (0: none on this worker).
   */
  async endSession(sessionId: string): Promise<number> {
    const session = this.sessions.get(sessionId);
    if (!session) return 0;
    this.sessions.delete(sessionId);
    this.spares.release(sessionId, session.lastUsed);
    // A server still starting would otherwise spawn its process after it was told to stop.
    await session.lock;
    const servers = [...session.servers.values()];
    await Promise.all(servers.map((s) => this.retirement.retire(s)));
    this.options.logger.info({ sessionId, servers: servers.length }, 'session ended');
    return servers.length;
  }

  /**
   * Stops sessions unused for `idleMs` (DMCP_SESSION_IDLE) whose hold (see {@link reconcile}) is
   * over; a session with a call or reconciliation running is not idle.
   */
  async stopIdle(idleMs: number, now = Date.now()): Promise<void> {
    const idle = [...this.sessions.entries()]
      .filter(([, s]) => s.busy === 0 && now >= Math.max(s.lastUsed + idleMs, s.holdUntil ?? 0))
      .map(([id]) => id);
    if (idle.length > 0) this.options.logger.info({ sessions: idle }, 'stopping idle sessions');
    await Promise.all(idle.map((id) => this.stopSession(id)));
    // Spares of entries no session has used for the idle time go too.
    await this.spares.sweep(idleMs, now);
  }

  /**
   * Kills every stdio server's process group at once (SIGKILL), without waiting for anything: the
   * last resort of a process told twice to stop, so no server outlives it.
   */
  killAll(): void {
    const servers = [...this.sessions.values()].flatMap((s) => [...s.servers.values()]).concat(this.retirement.waiting);
    for (const pid of servers.map((s) => s.pid)) {
      if (pid === undefined) continue;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    this.spares.killAll();
  }

  /** Stops every server of every session (worker shutdown), after any start in progress has settled. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    // First, so no spare is started or handed out while sessions finish.
    const spares = this.spares.shutdown();
    // A server still starting could otherwise spawn its process after it was told to stop.
    await Promise.all([...this.sessions.values()].map((s) => s.lock));
    const retiring = this.retirement.takeAll();
    await Promise.all(
      [...this.sessions.keys()]
        .map((id) => this.stopSession(id))
        .concat(
          retiring.map((s) => s.stop()),
          spares,
        ),
    );
  }

  private session(sessionId: string): Session {
    let session = this.sessions.get(sessionId);
    if (!session) {
      session = newSession();
      this.sessions.set(sessionId, session);
    }
    session.lastUsed = Date.now();
    return session;
  }
}
