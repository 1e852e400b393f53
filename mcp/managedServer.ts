import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { ServerEntry } from '../config/types.js';
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
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

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
  private client?: Client;
  private transport?: Transport;
  private readonly stderrTail = new TailBuffer();
  private readonly log: Logger;

  constructor(
    readonly entry: ServerEntry,
    private readonly deps: ManagedServerDeps,
  ) {
    this.log = deps.logger.child({ server: entry.name });
  }

  get pid(): number | undefined {
    return this.transport instanceof ProcessGroupStdioTransport ? this.transport.pid : undefined;
  }

  /** Starts the server: process/connection, handshake and first tool listing, under one deadline. */
  async start(): Promise<void> {
    this.state = 'starting';
    this.error = undefined;
    const timeoutMs = this.entry.startTimeoutMs ?? this.deps.startTimeoutMs;
    let phase = 'spawn';
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
    if (entry.type !== 'stdio' || !entry.command) {
      throw new Error(`transport "${entry.type}" is not supported yet`);
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
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    this.tools = tools;
    this.toolsStale = false;
    return tools;
  }

  async callTool(tool: string, args: Record<string, unknown>, options: CallOptions): Promise<CallToolResult> {
    const client = this.requireClient();
    const result = await client.callTool({ name: tool, arguments: args }, undefined, {
      signal: options.signal,
      timeout: options.timeoutMs,
      resetTimeoutOnProgress: true,
      onprogress: options.onProgress,
    });
    return result as CallToolResult;
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    await this.closeQuietly();
  }

  private requireClient(): Client {
    if (this.state !== 'ready' && this.state !== 'starting') {
      throw new ServerUnavailableError(this.entry.name, this.error ?? `server is ${this.state}`);
    }
    if (!this.client) throw new ServerUnavailableError(this.entry.name, 'server has no connection');
    return this.client;
  }

  private onClosed(): void {
    if (this.state === 'ready') {
      this.state = 'failed';
      this.error = this.describeExit('connection closed');
      this.log.warn({ err: this.error }, 'server stopped');
    }
  }

  private describeExit(fallback: string): string {
    const t = this.transport;
    let text = fallback;
    if (t instanceof ProcessGroupStdioTransport && (t.exitCode !== null || t.exitSignal !== null)) {
      text = t.exitSignal ? `exited on ${t.exitSignal}` : `exited with code ${t.exitCode}`;
    }
    const tail = this.stderrTail.lastLines(5);
    return this.deps.scrub(tail ? `${text}; stderr: ${tail}` : text);
  }

  private describeFailure(err: unknown): string {
    const message = err instanceof Error ? err.message : String(err);
    const t = this.transport;
    if (t instanceof ProcessGroupStdioTransport && (t.exitCode !== null || t.exitSignal !== null)) {
      return this.describeExit(message);
    }
    const junk = this.junkLines > 0 ? ` (wrote ${this.junkLines} non-protocol line(s) to stdout)` : '';
    const tail = this.stderrTail.lastLines(5);
    return this.deps.scrub(`${message}${junk}${tail ? `; stderr: ${tail}` : ''}`);
  }

  private async closeQuietly(): Promise<void> {
    const client = this.client;
    const transport = this.transport;
    this.client = undefined;
    if (client) client.onclose = undefined;
    try {
      await (client ? client.close() : transport?.close());
    } catch (err) {
      this.log.debug({ err }, 'error while closing server');
    }
    // Client.close() closes the transport; make sure a stdio group is gone even if it was not connected.
    if (transport) await transport.close().catch(() => undefined);
  }
}

/** The server is not running: the call never started, so it is always safe to retry (DESIGN 8.4). */
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
