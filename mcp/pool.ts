import type { CallToolResult, Transport } from '@modelcontextprotocol/client';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { LoadedConfig, ServerEntry } from '../config/types.js';
import {
  ManagedServer,
  RefusedCallError,
  ServerUnavailableError,
  type CallOptions,
  type ManagedState,
} from './managedServer.js';
import type { EraVerdicts } from './era.js';
import type { NeedsInput } from './inputRequests.js';
import { admitRoot, rootsOf } from './roots.js';
import { StdioSandbox, type UntrustedStdioOptions } from './sandbox.js';
import { remoteSecrets } from './httpTransport.js';
import { SparePool } from './spares.js';
import type { LoginCredentials } from './login.js';
import { ToolNameMap, describeTool, type ToolPrefix } from './toolNames.js';
import type { ServerStatus, ToolInfo, TurnStatus } from '../contract/index.js';

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

interface Session {
  configHash?: string;
  servers: Map<string, ManagedServer>;
  config?: LoadedConfig;
  lastUsed: number;
  /**
   * An interactive turn of the session may send calls until about this time (epoch ms), so its
   * servers stay up at least that long, however short the session idle time.
   */
  holdUntil?: number;
  /** How far each call of the session pushes `holdUntil`: the idle limit of its interactive turn. */
  holdMs?: number;
  /** Reconciliations and calls in progress: an idle stop never interrupts them. */
  busy: number;
  /** The last workspace a reconciliation named (see {@link ReconcileOptions.workspace}). */
  workspace?: string;
  /** Whether the last reconciliation offered the workspace as a root ({@link ReconcileOptions.offerRoot}). */
  offerRoot?: boolean;
  /** That workspace (symlinks resolved) when it may be offered as the servers' MCP root. */
  root?: string;
  /** The workspace {@link root} was last decided for (a refusal is logged once per workspace). */
  rootChecked?: string;
  /** Reconciliations of a session run one at a time (a failover reconcile may overlap the last one). */
  lock: Promise<unknown>;
  /** Turns that reconciled the session here, with the config hash they reconciled; the newest last. */
  turns: Map<string, string>;
}

/** The task fields of a listed tool: its task support, and the entry's `"tasks": "prefer"` where it matters. */
function taskFields(support: unknown, mode: ServerEntry['tasks']): Pick<ToolInfo, 'taskSupport' | 'tasks'> {
  if (support !== 'optional' && support !== 'required') return {};
  return { taskSupport: support, ...(support === 'optional' && mode === 'prefer' ? { tasks: 'prefer' as const } : {}) };
}

/** Turns remembered per session: older ones reconcile again (their calls never started) before they call. */
const TURNS_KEPT = 32;

/**
 * The worker's MCP servers, keyed by session: a session's turns share server
 * processes as long as they land on this worker and the config is unchanged.
 */
export class ServerPool {
  private readonly sessions = new Map<string, Session>();
  private readonly nameMaps = new WeakMap<Session, { key: unknown[]; map: ToolNameMap }>();
  private readonly scrub: (text: string) => string;
  private readonly callsInFlight = new Map<ManagedServer, number>();
  /** Servers replaced by a config change while a call was running: stopped when their calls end. */
  private readonly retiring = new Set<ManagedServer>();
  private shuttingDown = false;
  private readonly sandbox: StdioSandbox;
  private readonly spares: SparePool;
  /** The session each server works for: a warm spare gets one when it is handed over. */
  private readonly owners = new WeakMap<ManagedServer, Session>();
  /** Servers started in a sandbox, with the folder it lets them write. */
  private readonly sandboxed = new WeakMap<ManagedServer, { writable?: string }>();
  /** What each stdio config's era probe found, so its restarts and new sessions skip the probe. */
  private readonly eraVerdicts: EraVerdicts = new Map();

  constructor(private readonly options: ServerPoolOptions) {
    this.scrub = options.scrub ?? ((t) => t);
    this.sandbox = new StdioSandbox(options.untrustedStdio ?? { mode: 'sandbox', hiddenPaths: [] });
    this.spares = new SparePool({
      perEntry: options.warmSpares ?? 0,
      logger: options.logger,
      // Built like a session's server: only trusted entries get spares, and their launch does not
      // depend on the session (the workspace matters to sandboxed servers alone).
      create: (entry) => this.newServer(entry),
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
      if (options.turnId !== undefined) {
        session.turns.delete(options.turnId);
        session.turns.set(options.turnId, config.hash);
        if (session.turns.size > TURNS_KEPT) session.turns.delete(session.turns.keys().next().value!);
      }
      return status;
    });
    session.lock = run.catch(() => undefined);
    try {
      return await run;
    } finally {
      session.busy -= 1;
      session.lastUsed = Date.now();
      // The turn's idle clock starts once its servers are up, not when it asked for them.
      if (holds) this.renewHold(session);
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
      for (const entry of config.servers) session.servers.set(entry.name, this.newServer(entry, session));
      session.configHash = config.hash;
      await Promise.all(old.map((s) => this.retire(s)));
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
        if (server.state === 'ready' && this.boundElsewhere(server, session))
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
    const fresh = this.newServer(old.entry, session);
    session.servers.set(name, fresh);
    if (crashed) this.options.observer?.serverRestarted?.(name);
    await this.retire(old);
    await this.startServer(sessionId, session, name, fresh);
  }

  /** Starts a session's new server, or puts a warm spare of the same entry in its place. */
  private async startServer(sessionId: string, session: Session, name: string, server: ManagedServer): Promise<void> {
    const spare = await this.spares.take(server.entry);
    if (spare) {
      // The session may have been stopped while the spare was checked: it must not keep a process then.
      if (this.sessions.get(sessionId) === session && !this.shuttingDown && session.servers.get(name) === server) {
        session.servers.set(name, spare);
        this.owners.set(spare, session);
        return;
      }
      await spare.stop();
    }
    await server.start();
  }

  /** Stops a server now, or after its in-flight calls (removing an entry does not cancel a call). */
  private async retire(server: ManagedServer): Promise<void> {
    if ((this.callsInFlight.get(server) ?? 0) > 0) {
      this.retiring.add(server);
      return;
    }
    await server.stop();
  }

  /** Whether a sandboxed server's writable folder is not the session's workspace any more. */
  private boundElsewhere(server: ManagedServer, session: Session): boolean {
    const bound = this.sandboxed.get(server);
    return bound !== undefined && session.workspace !== undefined && bound.writable !== resolve(session.workspace);
  }

  private newServer(entry: ServerEntry, session?: Session): ManagedServer {
    // A sandboxed server keeps the root of the folder its sandbox lets it write, for its whole life:
    // offering another would promise what the sandbox does not allow (it is started anew for
    // another workspace instead, see boundElsewhere). Others follow the session.
    let sandboxRoot: { root?: string } | undefined;
    const observer = this.options.observer;
    const server: ManagedServer = new ManagedServer(entry, {
      logger: this.options.logger,
      environment: () => this.options.environmentFor(entry),
      stdioCommand: async (e, environment) => {
        const launch = await this.sandbox.launch(e, environment, session?.workspace);
        if (launch.sandbox) {
          sandboxRoot =
            launch.sandbox.writable !== undefined && session?.root !== undefined ? { root: session.root } : {};
          this.sandboxed.set(server, launch.sandbox);
        }
        return launch;
      },
      // `"roots": false`: no roots capability at all, so the server keeps its own directories.
      ...(entry.roots === false
        ? {}
        : { roots: () => rootsOf(sandboxRoot ? sandboxRoot.root : this.owners.get(server)?.root) }),
      ...(observer?.serverStarted
        ? { onStart: (result: 'ready' | 'failed', ms: number) => observer.serverStarted!(entry.name, result, ms) }
        : {}),
      ...(this.options.requestHeadersFor ? { requestHeaders: () => this.options.requestHeadersFor!(entry) } : {}),
      ...(this.options.credentials ? { credentials: this.options.credentials } : {}),
      ...(this.options.connect ? { connect: this.options.connect } : {}),
      scrub: this.scrub,
      startTimeoutMs: this.options.startTimeoutMs,
      clientVersion: this.options.clientVersion ?? '0.1.0',
      eraVerdicts: this.eraVerdicts,
    });
    if (session) this.owners.set(server, session);
    return server;
  }

  /** The session's status as of now. */
  status(sessionId: string): TurnStatus {
    const session = this.session(sessionId);
    const config = session.config;
    const reportedAt = new Date().toISOString();
    if (!config || config.off) return { mcp: config?.off ? 'off' : 'on', servers: [], warnings: [], reportedAt };
    const names = this.nameMap(session);
    const servers: ServerStatus[] = [];
    for (const server of session.servers.values()) {
      const { entry } = server;
      const base = {
        name: entry.name,
        layer: entry.layer,
        source: entry.source,
        transport: entry.type,
        warnings: [] as string[],
      };
      if (!entry.enabled) {
        servers.push({ ...base, state: 'disabled', tools: [] });
        continue;
      }
      if (server.state !== 'ready') {
        const login = server.loginProblem ? { login: server.loginProblem.kind } : {};
        servers.push({
          ...base,
          state: 'failed',
          tools: [],
          error: server.error ?? `server is ${server.state}`,
          ...login,
        });
        continue;
      }
      const offered = new Set(server.tools.map((t) => t.name));
      const kept = this.keptTools(server);
      for (const wanted of entry.tools ?? []) {
        if (!offered.has(wanted))
          base.warnings.push(`tool "${wanted}" is listed in "tools" but the server does not offer it`);
      }
      for (const refused of server.refusedTools)
        base.warnings.push(`tool ${JSON.stringify(refused.name)} left out: ${refused.reason}`);
      // A connected server whose login a request found wanting (more scope, or a new authorization server).
      const scopeProblem =
        server.loginProblem?.kind === 'insufficient_scope' || server.loginProblem?.kind === 'moved'
          ? server.loginProblem
          : undefined;
      if (scopeProblem)
        base.warnings.push(scopeProblem.kind === 'moved' ? scopeProblem.message : `its login ${scopeProblem.message}`);
      if (server.junkLines > 0) {
        base.warnings.push(
          `the server wrote ${server.junkLines} non-protocol line(s) to stdout, first: ${JSON.stringify(server.firstJunkLine)}; they were dropped`,
        );
      }
      servers.push({
        ...base,
        state: base.warnings.length > 0 ? 'degraded' : 'ready',
        tools: kept.map((t) => names.publicName(entry.name, t.name)!),
        pid: server.pid,
        ...(server.era ? { era: server.era } : {}),
        ...(scopeProblem ? { login: scopeProblem.kind } : {}),
      });
    }
    for (const refused of config.refused) {
      servers.push({
        name: refused.name,
        layer: refused.layer,
        source: refused.source,
        transport: refused.transport,
        state: 'failed',
        tools: [],
        error: this.scrub(refused.reason),
        warnings: [],
      });
    }
    servers.sort((a, b) => a.name.localeCompare(b.name));
    return { mcp: 'on', servers, warnings: config.warnings.map(this.scrub), reportedAt };
  }

  /** The tools of the session's ready servers, as the model will see them. */
  tools(sessionId: string): ToolInfo[] {
    const session = this.session(sessionId);
    const names = this.nameMap(session);
    const out: ToolInfo[] = [];
    for (const server of this.readyServers(session)) {
      for (const tool of this.keptTools(server)) {
        out.push({
          name: names.publicName(server.entry.name, tool.name)!,
          server: server.entry.name,
          tool: tool.name,
          description: describeTool(server.entry.name, tool.description),
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(tool.annotations ? { annotations: tool.annotations } : {}),
          ...(server.entry.toolTimeoutMs ? { timeoutMs: server.entry.toolTimeoutMs } : {}),
          // 'auto' (or nothing) leaves the decision to the annotations.
          ...(server.entry.retry === 'safe' || server.entry.retry === 'never' ? { retry: server.entry.retry } : {}),
          ...taskFields(server.offersModernTasks ? 'optional' : tool.execution?.taskSupport, server.entry.tasks),
        });
      }
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  private readyServers(session: Session): ManagedServer[] {
    return [...session.servers.values()].filter((s) => s.state === 'ready' && s.entry.enabled);
  }

  private keptTools(server: ManagedServer) {
    const filter = server.entry.tools;
    return filter ? server.tools.filter((t) => filter.includes(t.name)) : server.tools;
  }

  /**
   * One map per listing, so public names are unique across all of the session's servers. Kept while
   * the ready servers, their entries and their listings are the same objects (a new listing or
   * entry is a new object): every call checks its public name against it.
   */
  private nameMap(session: Session): ToolNameMap {
    const ready = this.readyServers(session);
    const key = ready.flatMap((s) => [s, s.entry, s.tools]);
    const kept = this.nameMaps.get(session);
    if (kept && kept.key.length === key.length && kept.key.every((k, i) => k === key[i])) return kept.map;
    const refs = ready.flatMap((s) => this.keptTools(s).map((t) => ({ server: s.entry.name, tool: t.name })));
    const map = new ToolNameMap(refs, this.options.toolPrefix);
    this.nameMaps.set(session, { key, map });
    return map;
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
      const listed = this.nameMap(session).publicName(server, tool);
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
    this.callsInFlight.set(managed, (this.callsInFlight.get(managed) ?? 0) + 1);
    try {
      return await run(managed);
    } finally {
      session.busy -= 1;
      session.lastUsed = Date.now();
      // The turn's idle clock restarts when the call ends.
      this.renewHold(session);
      const left = (this.callsInFlight.get(managed) ?? 1) - 1;
      if (left > 0) this.callsInFlight.set(managed, left);
      else {
        this.callsInFlight.delete(managed);
        if (this.retiring.delete(managed)) {
          managed
            .stop()
            .catch((err: unknown) => this.options.logger.warn({ err }, 'stopping a replaced server failed'));
        }
      }
    }
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
    await Promise.all(servers.map((s) => this.retire(s)));
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
    const servers = [...this.sessions.values()].flatMap((s) => [...s.servers.values()]).concat([...this.retiring]);
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
    const retiring = [...this.retiring];
    this.retiring.clear();
    await Promise.all(
      [...this.sessions.keys()]
        .map((id) => this.stopSession(id))
        .concat(
          retiring.map((s) => s.stop()),
          spares,
        ),
    );
  }

  private renewHold(session: Session): void {
    if (session.holdMs === undefined) return;
    session.holdUntil = Math.max(session.holdUntil ?? 0, Date.now() + session.holdMs);
  }

  private session(sessionId: string): Session {
    let session = this.sessions.get(sessionId);
    if (!session) {
      session = { servers: new Map(), lastUsed: Date.now(), busy: 0, lock: Promise.resolve(), turns: new Map() };
      this.sessions.set(sessionId, session);
    }
    session.lastUsed = Date.now();
    return session;
  }
}
