import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { LoadedConfig, ServerEntry } from '../config/types.js';
import { ManagedServer, ServerUnavailableError, type CallOptions } from './managedServer.js';
import { ToolNameMap, describeTool, type ToolPrefix } from './toolNames.js';
import type { ServerStatus, ToolInfo, TurnStatus } from './types.js';

/** Dependencies and settings of a {@link ServerPool}. */
export interface ServerPoolOptions {
  logger: Logger;
  /** The complete environment a stdio server starts with (worker env minus secrets, plus env/envFrom). */
  environmentFor: (entry: ServerEntry) => Record<string, string>;
  /** Removes secret values from text that leaves the worker. */
  scrub?: (text: string) => string;
  /** DMCP_START_TIMEOUT: per-server deadline for start, handshake and first listing. */
  startTimeoutMs: number;
  toolPrefix: ToolPrefix;
  clientVersion?: string;
}

interface Session {
  configHash?: string;
  servers: Map<string, ManagedServer>;
  config?: LoadedConfig;
  lastUsed: number;
}

/**
 * The worker's MCP servers, keyed by session (DESIGN 2.1): a session's turns share server
 * processes as long as they land on this worker and the config is unchanged.
 */
export class ServerPool {
  private readonly sessions = new Map<string, Session>();
  private readonly scrub: (text: string) => string;
  private shuttingDown = false;

  constructor(private readonly options: ServerPoolOptions) {
    this.scrub = options.scrub ?? ((t) => t);
  }

  /** Brings the session's servers up to date with `config` and reports the status (DESIGN 6.2). */
  async reconcile(sessionId: string, config: LoadedConfig): Promise<TurnStatus> {
    if (this.shuttingDown) throw new Error('worker is shutting down');
    const session = this.session(sessionId);
    const changed = session.configHash !== config.hash;
    if (changed) {
      await Promise.all([...session.servers.values()].map((s) => s.stop()));
      session.servers.clear();
      for (const entry of config.servers) session.servers.set(entry.name, this.newServer(entry));
      session.configHash = config.hash;
    }
    session.config = config;

    await Promise.all(
      [...session.servers.entries()].map(async ([name, server]) => {
        if (!server.entry.enabled) return;
        if (server.state === 'idle') return server.start();
        if (server.state === 'failed' && server.wasReady) {
          // It ran and then stopped: restart. One that never started waits for a config change.
          const fresh = this.newServer(server.entry);
          session.servers.set(name, fresh);
          return fresh.start();
        }
        if (server.state === 'ready') {
          try {
            await server.listTools();
          } catch (err) {
            server.error = this.scrub(`tool listing failed: ${(err as Error).message}`);
            server.state = 'failed';
          }
        }
      }),
    );
    return this.status(sessionId);
  }

  private newServer(entry: ServerEntry): ManagedServer {
    return new ManagedServer(entry, {
      logger: this.options.logger,
      environment: () => this.options.environmentFor(entry),
      scrub: this.scrub,
      startTimeoutMs: this.options.startTimeoutMs,
      clientVersion: this.options.clientVersion ?? '0.1.0',
    });
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
      const base = { name: entry.name, layer: entry.layer, source: entry.source, transport: entry.type, warnings: [] as string[] };
      if (!entry.enabled) {
        servers.push({ ...base, state: 'disabled', tools: [] });
        continue;
      }
      if (server.state !== 'ready') {
        servers.push({ ...base, state: 'failed', tools: [], error: server.error ?? `server is ${server.state}` });
        continue;
      }
      const offered = new Set(server.tools.map((t) => t.name));
      const kept = this.keptTools(server);
      for (const wanted of entry.tools ?? []) {
        if (!offered.has(wanted)) base.warnings.push(`tool "${wanted}" is listed in "tools" but the server does not offer it`);
      }
      servers.push({
        ...base,
        state: base.warnings.length > 0 ? 'degraded' : 'ready',
        tools: kept.map((t) => names.publicName(entry.name, t.name)!),
        pid: server.pid,
      });
    }
    for (const refused of config.refused) {
      servers.push({
        name: refused.name, layer: refused.layer, source: refused.source, transport: refused.transport,
        state: 'failed', tools: [], error: this.scrub(refused.reason), warnings: [],
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

  /** One map per listing, so public names are unique across all of the session's servers (DESIGN 7). */
  private nameMap(session: Session): ToolNameMap {
    const refs = this.readyServers(session).flatMap((s) => this.keptTools(s).map((t) => ({ server: s.entry.name, tool: t.name })));
    return new ToolNameMap(refs, this.options.toolPrefix);
  }

  /** Calls a tool on the session's server. Throws {@link ServerUnavailableError} when it is not running. */
  async callTool(sessionId: string, server: string, tool: string, args: Record<string, unknown>, options: CallOptions): Promise<CallToolResult> {
    const session = this.sessions.get(sessionId);
    const managed = session?.servers.get(server);
    if (!session || !managed) throw new ServerUnavailableError(server, 'not started on this worker');
    session.lastUsed = Date.now();
    return managed.callTool(tool, args, options);
  }

  /** Server PIDs of a session (operators and tests use them to see reuse). */
  pids(sessionId: string): Record<string, number | undefined> {
    const session = this.sessions.get(sessionId);
    return Object.fromEntries([...(session?.servers ?? new Map<string, ManagedServer>()).entries()].map(([n, s]) => [n, s.pid]));
  }

  async stopSession(sessionId: string): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    this.sessions.delete(sessionId);
    await Promise.all([...session.servers.values()].map((s) => s.stop()));
  }

  /** Stops sessions unused for `idleMs` (DMCP_SESSION_IDLE). */
  async stopIdle(idleMs: number, now = Date.now()): Promise<void> {
    const idle = [...this.sessions.entries()].filter(([, s]) => now - s.lastUsed >= idleMs).map(([id]) => id);
    await Promise.all(idle.map((id) => this.stopSession(id)));
  }

  /** Stops every server of every session (worker shutdown). */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await Promise.all([...this.sessions.keys()].map((id) => this.stopSession(id)));
  }

  private session(sessionId: string): Session {
    let session = this.sessions.get(sessionId);
    if (!session) {
      session = { servers: new Map(), lastUsed: Date.now() };
      this.sessions.set(sessionId, session);
    }
    session.lastUsed = Date.now();
    return session;
  }
}
