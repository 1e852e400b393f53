import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { ServerEntry } from '../config/types.js';
import {
  WireTracker,
  classifyPingFailure,
  createRemoteTransport,
  describeRemoteError,
  redact,
  remoteSecrets,
  terminateRemoteSession,
} from './httpTransport.js';
import { ProcessGroupStdioTransport } from './stdioTransport.js';

/** Lifecycle of one server inside a session. */
export type ManagedState = 'idle' | 'starting' | 'ready' | 'failed' | 'stopped';

/** Keeps the end of a stream: enough to say why a server died, bounded so a chatty one costs little. */
export class TailBuffer {
  private text = '';
  constructor(private readonly maxChars = 4096) {}
  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.maxChars);
  }
  lastLines(n: number): string {
    return this.text.trimEnd().split('\n').slice(-n).join('\n');
  }
}

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
  /** While calls to an `http`/`sse` server are in flight, ping it this often (default 1000 ms). */
  livenessIntervalMs?: number;
  /** A ping unanswered for this long counts as a strike; three in a row mean lost (default 2500 ms). */
  livenessTimeoutMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

/** A call that is waiting for its server; `fail` ends it when the connection is lost. */
interface InFlight {
  fail(err: Error): void;
}

/** Consecutive unanswered pings after which a remote server counts as gone. */
const MAX_SLOW_PINGS = 3;
/** Bound on the DELETE that ends a Streamable HTTP session when a server stops. */
const TERMINATE_TIMEOUT_MS = 2000;

/** One MCP server of one session: its process or connection, its client and its tool list. */
export class ManagedServer {
  state: ManagedState = 'idle';
  tools: Tool[] = [];
  /** Set by `notifications/tools/list_changed`; the next reconciliation lists again. */
  toolsStale = false;
  /** The server reached `ready` once: if it stops later it crashed, and reconciliation restarts it. */
  wasReady = false;
  error?: string;
  junkLines = 0;
  /** The first non-protocol stdout line (scrubbed, cut), so the status can show what it was. */
  firstJunkLine?: string;
  private client?: Client;
  private transport?: Transport;
  private readonly stderrTail = new TailBuffer();
  private readonly log: Logger;
  private readonly inFlight = new Set<InFlight>();
  private readonly wire = new WireTracker();
  /** Header values and URL secrets of a remote server, removed from every text that leaves. */
  private secrets: string[] = [];
  private watchdog?: NodeJS.Timeout;
  private checking = false;
  private slowPings = 0;

  constructor(
    readonly entry: ServerEntry,
    private readonly deps: ManagedServerDeps,
  ) {
    this.log = deps.logger.child({ server: entry.name });
  }

  /** Streamable HTTP or SSE: the SDK does not notice a vanished server, so we watch it ourselves. */
  get remote(): boolean {
    return this.entry.type === 'http' || this.entry.type === 'sse';
  }

  get pid(): number | undefined {
    return this.transport instanceof ProcessGroupStdioTransport ? this.transport.pid : undefined;
  }

  /** Starts the server: process/connection, handshake and first tool listing, under one deadline. */
  async start(): Promise<void> {
    this.state = 'starting';
    this.error = undefined;
    const timeoutMs = this.entry.startTimeoutMs ?? this.deps.startTimeoutMs;
    let phase = this.remote ? 'connect' : 'spawn';
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${formatSeconds(timeoutMs)} during ${phase}`)), timeoutMs);
    });
    try {
      await Promise.race([
        (async () => {
          this.transport = this.createTransport();
          const client = new Client({ name: 'durable-mcp', version: this.deps.clientVersion }, { capabilities: {} });
          client.onclose = () => this.onClosed();
          client.onerror = (err) => this.onTransportError(err);
          this.client = client;
          phase = 'handshake';
          await client.connect(this.transport);
          client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
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
    } catch (err) {
      this.error = this.describeFailure(err);
      this.state = 'failed';
      this.log.warn({ err: this.error }, 'server failed to start');
      await this.closeQuietly();
    } finally {
      clearTimeout(timer);
    }
  }

  private createTransport(): Transport {
    const { entry } = this;
    if (this.remote) {
      const headers = this.deps.requestHeaders?.() ?? { ...entry.headers };
      this.secrets = remoteSecrets(entry, headers);
      return createRemoteTransport(entry, headers, this.wire);
    }
    if (entry.type !== 'stdio' || !entry.command) {
      throw new Error(`transport "${entry.type}" is not supported`);
    }
    return new ProcessGroupStdioTransport({
      command: entry.command,
      args: entry.args,
      env: this.deps.environment(),
      cwd: entry.cwd,
      onStderr: (chunk) => {
        this.stderrTail.push(chunk);
        for (const line of chunk.split('\n')) {
          if (line.trim()) this.log.info({ stderr: this.deps.scrub(line) }, 'server stderr');
        }
      },
      onJunk: (line) => {
        this.junkLines += 1;
        this.firstJunkLine ??= this.deps.scrub(line.slice(0, 200));
        this.log.warn({ stdout: this.deps.scrub(line.slice(0, 500)) }, 'server wrote a non-protocol line to stdout');
      },
    });
  }

  /** Lists every page of tools; clears the stale mark. */
  async listTools(): Promise<Tool[]> {
    const client = this.requireClient();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.track((signal) => client.listTools(cursor ? { cursor } : undefined, { signal }));
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    this.tools = tools;
    this.toolsStale = false;
    return tools;
  }

  /**
   * Calls a tool. Rejects with {@link ConnectionLostError} as soon as the server is known to be
   * gone (stdio: its process exited; http/sse: the connection or session is lost).
   */
  async callTool(tool: string, args: Record<string, unknown>, options: CallOptions): Promise<CallToolResult> {
    const client = this.requireClient();
    // client.request, not client.callTool: callTool checks structured content against the tool's
    // output schema after the tool ran and throws InvalidRequest/InvalidParams, which would report
    // a call that already had its effect as a bad request. The result is recorded as it came.
    const result = await this.track(
      (signal) =>
        client.request({ method: 'tools/call', params: { name: tool, arguments: args } }, CallToolResultSchema, {
          signal,
          timeout: options.timeoutMs,
          resetTimeoutOnProgress: true,
          onprogress: options.onProgress,
        }),
      options.signal,
    );
    return result as CallToolResult;
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    this.stopWatchdog();
    await this.closeQuietly();
  }

  /**
   * Runs one request so that a lost connection ends it at once. The SDK turns an abort reason
   * into a timeout error, so the request is aborted (to free its handlers) and our own error wins
   * the race.
   */
  private track<T>(run: (signal: AbortSignal) => Promise<T>, outer?: AbortSignal): Promise<T> {
    const controller = new AbortController();
    const forward = () => controller.abort(outer?.reason);
    if (outer?.aborted) forward();
    else outer?.addEventListener('abort', forward, { once: true });
    return new Promise<T>((resolve, reject) => {
      const call: InFlight = {
        fail: (err) => {
          reject(err);
          controller.abort(err);
        },
      };
      this.inFlight.add(call);
      this.startWatchdog();
      run(controller.signal)
        .then(resolve, reject)
        .finally(() => {
          this.inFlight.delete(call);
          outer?.removeEventListener('abort', forward);
          if (this.inFlight.size === 0) this.stopWatchdog();
        });
    });
  }

  private startWatchdog(): void {
    if (!this.remote || this.watchdog || this.state !== 'ready') return;
    this.watchdog = setInterval(() => void this.checkConnection(), this.deps.livenessIntervalMs ?? 1000);
    this.watchdog.unref();
  }

  private stopWatchdog(): void {
    clearInterval(this.watchdog);
    this.watchdog = undefined;
    this.slowPings = 0;
  }

  /** Pings a remote server; a connection-level failure (or three slow pings) marks it lost. */
  private async checkConnection(): Promise<void> {
    const client = this.client;
    if (this.checking || this.state !== 'ready' || !client) return;
    this.checking = true;
    const timeoutMs = this.deps.livenessTimeoutMs ?? 2500;
    try {
      await client.ping({ timeout: timeoutMs });
      this.slowPings = 0;
    } catch (err) {
      if (client !== this.client) return;
      const verdict = classifyPingFailure(err);
      if (verdict === 'alive') {
        this.slowPings = 0;
      } else if (verdict === 'lost') {
        this.markLost(describeRemoteError(err, this.wire.last));
      } else if (++this.slowPings >= MAX_SLOW_PINGS) {
        this.markLost(`no answer to ${MAX_SLOW_PINGS} pings of ${formatSeconds(timeoutMs)}`);
      }
    } finally {
      this.checking = false;
    }
  }

  /**
   * The SDK reports a broken SSE stream or a failed POST only here, while the request it
   * belonged to keeps waiting; a ping tells a dropped stream from a dead server.
   */
  private onTransportError(err: Error): void {
    if (this.state !== 'ready') return;
    this.log.debug({ err: this.scrubText(err.message) }, 'transport error');
    if (this.remote) void this.checkConnection();
  }

  /** The server is gone while ready: fail what is waiting and count it as crashed (wasReady stays). */
  private markLost(cause: string): void {
    if (this.state !== 'ready') return;
    const text = this.scrubText(cause);
    this.state = 'failed';
    this.error = this.remote ? `connection lost: ${text}` : text;
    this.log.warn({ err: this.error, inFlight: this.inFlight.size }, 'server stopped');
    this.stopWatchdog();
    const lost = new ConnectionLostError(this.entry.name, text);
    for (const call of [...this.inFlight]) call.fail(lost);
    this.inFlight.clear();
    if (this.remote) void this.closeQuietly({ lost: true });
  }

  private requireClient(): Client {
    if (this.state !== 'ready' && this.state !== 'starting') {
      throw new ServerUnavailableError(this.entry.name, this.error ?? `server is ${this.state}`);
    }
    if (!this.client) throw new ServerUnavailableError(this.entry.name, 'server has no connection');
    return this.client;
  }

  /** The client closed without us asking: the process exited or the transport gave up. */
  private onClosed(): void {
    // Runs before the SDK rejects pending requests with a bare "Connection closed".
    if (this.state === 'ready') this.markLost(this.describeExit('connection closed'));
  }

  /** Removes secret values (environment secrets, header values, URL secrets) from text that leaves the worker. */
  private scrubText(text: string): string {
    return redact(this.deps.scrub(text), this.secrets);
  }

  private describeExit(fallback: string): string {
    const t = this.transport;
    let text = fallback;
    if (t instanceof ProcessGroupStdioTransport && (t.exitCode !== null || t.exitSignal !== null)) {
      text = t.exitSignal ? `exited on ${t.exitSignal}` : `exited with code ${t.exitCode}`;
    }
    const tail = this.stderrTail.lastLines(5);
    return this.scrubText(tail ? `${text}; stderr: ${tail}` : text);
  }

  private describeFailure(err: unknown): string {
    if (this.remote) return this.scrubText(describeRemoteError(err, this.wire.last));
    const message = err instanceof Error ? err.message : String(err);
    const t = this.transport;
    if (t instanceof ProcessGroupStdioTransport && (t.exitCode !== null || t.exitSignal !== null)) {
      return this.describeExit(message);
    }
    const junk = this.junkLines > 0 ? ` (wrote ${this.junkLines} non-protocol line(s) to stdout, first: ${JSON.stringify(this.firstJunkLine)})` : '';
    const tail = this.stderrTail.lastLines(5);
    return this.deps.scrub(`${message}${junk}${tail ? `; stderr: ${tail}` : ''}`);
  }

  private async closeQuietly(options: { lost?: boolean } = {}): Promise<void> {
    const client = this.client;
    const transport = this.transport;
    this.client = undefined;
    if (client) client.onclose = undefined;
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

export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}
