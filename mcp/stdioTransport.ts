import { spawn, type ChildProcess } from 'node:child_process';
import {
  parseJSONRPCMessage,
  serializeMessage,
  type JSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/client';
import { isJsonObject } from '../contract/index.js';

/** Options for {@link ProcessGroupStdioTransport}. */
export interface StdioLaunch {
  command: string;
  args: string[];
  /** The complete environment of the server (already stripped of secrets). */
  env: Record<string, string>;
  cwd?: string;
  /** Called with each chunk the server writes to stderr; never mixed into protocol output. */
  onStderr?: (chunk: string) => void;
  /** Called with each stdout line that is not a JSON-RPC message (the server is broken or chatty). */
  onJunk?: (line: string) => void;
  /** Grace period between SIGTERM and SIGKILL of the process group. */
  killGraceMs?: number;
  /** Largest single message accepted from the server (default 128 MiB). */
  maxMessageBytes?: number;
}

/**
 * The SDK's default (10 MiB) is smaller than a plain 10 MB image once base64-encoded; results
 * that big are shaped for the model later and moved out of history by external storage.
 */
const DEFAULT_MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

/** Options of a {@link LineReader}. */
export interface LineReaderOptions {
  /** Largest line accepted; a longer one is dropped and reported with `onOverflow`. */
  maxLineBytes: number;
  /** Called with each complete line (UTF-8 decoded, without its `\n` or a trailing `\r`). */
  onLine: (line: string) => void;
  /** Called once a line grows past `maxLineBytes`; what was read of it is dropped. */
  onOverflow: () => void;
  /** Tests count the work done: bytes searched for a newline, and bytes copied to join chunks. */
  onWork?: (work: { scanned: number; copied: number }) => void;
}

/**
 * Splits a byte stream into newline-terminated lines in time linear in its length: the chunks of an
 * unfinished line are kept in a list, only each new chunk is searched for a newline, and a line is
 * joined once, when it ends. (Joining and searching the whole pending line per chunk made one
 * 32 MiB line block the event loop for seconds, long enough to starve activity heartbeats.)
 */
export class LineReader {
  /** The unfinished line's chunks, and their total length. */
  private parts: Buffer[] = [];
  private size = 0;
  /** After an overflow, the rest of the oversized line is skipped up to its newline. */
  private skipping = false;

  constructor(private readonly options: LineReaderOptions) {}

  push(chunk: Buffer): void {
    const { onWork, maxLineBytes } = this.options;
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(0x0a, start);
      onWork?.({ scanned: (end < 0 ? chunk.length : end + 1) - start, copied: 0 });
      if (end < 0) {
        this.keep(chunk.subarray(start));
        break;
      }
      const tail = chunk.subarray(start, end);
      start = end + 1;
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      if (this.size + tail.length > maxLineBytes) {
        this.overflow();
        this.skipping = false;
        continue;
      }
      let line = tail;
      if (this.parts.length > 0) {
        this.parts.push(tail);
        line = Buffer.concat(this.parts, this.size + tail.length);
        onWork?.({ scanned: 0, copied: line.length });
        this.parts = [];
        this.size = 0;
      }
      const text = line.toString('utf8');
      this.options.onLine(text.endsWith('\r') ? text.slice(0, -1) : text);
    }
  }

  private keep(part: Buffer): void {
    if (this.skipping || part.length === 0) return;
    this.parts.push(part);
    this.size += part.length;
    if (this.size > this.options.maxLineBytes) {
      this.overflow();
      this.skipping = true;
    }
  }

  private overflow(): void {
    this.parts = [];
    this.size = 0;
    this.options.onOverflow();
  }
}

/**
 * A JSON-RPC message from one line, as the SDK's `deserializeMessage` reads it (its schema tries
 * each kind of message in turn), except for the commonest line, a plain result (`jsonrpc`, `id` and a `result`
 * object without `_meta`, nothing else), which that schema would accept as it is. The request's own
 * result schema checks the result after this, as for any message.
 */
export function readMessage(line: string): JSONRPCMessage {
  const value: unknown = JSON.parse(line);
  return isPlainResult(value) ? (value as JSONRPCMessage) : parseJSONRPCMessage(value);
}

function isPlainResult(value: unknown): boolean {
  if (!isJsonObject(value) || value.jsonrpc !== '2.0' || !isJsonObject(value.result) || '_meta' in value.result)
    return false;
  const { id } = value;
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) return false;
  let keys = 0;
  for (const _ in value) keys += 1;
  return keys === 3;
}

/**
 * A stdio client transport that starts the server in its own process group, so stopping it also
 * stops whatever it spawned (`npx` wrappers, shells, grandchildren). The MCP SDK's transport
 * signals only the direct child.
 */
export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private readonly reader: LineReader;
  private exited?: Promise<void>;
  private closed = false;
  exitCode: number | null = null;
  exitSignal: NodeJS.Signals | null = null;

  constructor(private readonly launch: StdioLaunch) {
    const maxMessageBytes = launch.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.reader = new LineReader({
      maxLineBytes: maxMessageBytes,
      onLine: (line) => this.readLine(line),
      onOverflow: () => {
        // The stream is out of step now: stop the server rather than misread what follows.
        this.onerror?.(new Error(`server sent a message larger than ${maxMessageBytes} bytes`));
        void this.close();
      },
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Always null (stderr goes to `onStderr`). Present because the MCP client tells a stdio
   * transport by its `pid` and `stderr`: on stdio a server silent on the era probe is a legacy
   * server, where over HTTP silence would be an outage.
   */
  get stderr(): null {
    return null;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.launch.command, this.launch.args, {
        env: this.launch.env,
        cwd: this.launch.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        shell: false,
        windowsHide: true,
      });
      this.child = child;
      this.exited = new Promise((done) => {
        // 'exit', not 'close': a grandchild that keeps stdout open would delay 'close' forever,
        // and in-flight calls must fail as soon as the server process is gone.
        child.once('exit', (code, signal) => {
          this.exitCode = code;
          this.exitSignal = signal;
          this.closed = true;
          done();
          this.onclose?.();
        });
      });
      child.once('error', (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.once('spawn', () => resolve());
      child.stdin?.on('error', (err) => this.onerror?.(err));
      child.stdout?.on('data', (chunk: Buffer) => this.reader.push(chunk));
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => this.launch.onStderr?.(chunk));
    });
  }

  /** Each stdout line is a message; a line that is not a JSON-RPC message is reported, not dropped silently. */
  private readLine(line: string): void {
    if (line.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = readMessage(line);
    } catch {
      this.launch.onJunk?.(line);
      return;
    }
    this.onmessage?.(message);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.closed) {
        reject(new Error('server process is not running'));
        return;
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Ends stdin, then SIGTERM to the process group, then SIGKILL after the grace period. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    if (this.closed) {
      // The leader is gone, but what it spawned may live on in its group.
      signalGroup(child.pid, 'SIGKILL');
      return;
    }
    const grace = this.launch.killGraceMs ?? 2000;
    child.stdin?.end();
    signalGroup(child.pid, 'SIGTERM');
    const exited = this.exited ?? Promise.resolve();
    const timer = (ms: number) => new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref());
    if ((await Promise.race([exited.then(() => 'exited' as const), timer(grace)])) === 'timeout') {
      signalGroup(child.pid, 'SIGKILL');
      await Promise.race([exited, timer(grace)]);
    }
    // The leader may exit on SIGTERM while a child that ignores it lives on: finish the group.
    signalGroup(child.pid, 'SIGKILL');
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}
