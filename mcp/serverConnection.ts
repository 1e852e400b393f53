/**
 * Connecting one server: the transport its entry asks for (a process group for stdio, Streamable
 * HTTP or SSE for a remote entry, with its login's token) and the client that speaks over it in
 * the era the handshake settles on.
 */
import type { Root, Transport, VersionNegotiationOptions } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { ServerEntry } from '../config/types.js';
import { refuseServerRequest, type EraVerdicts } from './era.js';
import { createRemoteTransport, remoteSecrets, type WireTracker } from './httpTransport.js';
import type { LegacyQuestionRouter } from './legacyQuestions.js';
import { loginFetch, type LoginCredentials, type LoginFetchEvents } from './login.js';
import type { RootsAnnouncer } from './roots.js';
import type { StdioCommand } from './sandbox.js';
import { ProcessGroupStdioTransport } from './stdioTransport.js';
import { TaskRequestClient } from './taskRequests.js';

/** How one server is started, connected and watched: what `ManagedServer` is given. */
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
   * answers `roots/list` with them; `ManagedServer.syncRoots` announces a change. Absent: no
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

/** What the client of one connection attempt answers and reports. */
export interface ServerClientOptions {
  clientVersion: string;
  versionNegotiation: VersionNegotiationOptions;
  /** The server's 2025-era questions. */
  questions: LegacyQuestionRouter;
  /** Given: the client declares the `roots` capability and answers `roots/list` from it. */
  roots?: RootsAnnouncer;
  /** The client closed, without being asked to or not. */
  onClose: (client: TaskRequestClient) => void;
  /** A transport failure the SDK reports only here, while the request it belongs to keeps waiting. */
  onError: (err: Error) => void;
}

/**
 * A client for one connection attempt. Sampling is never declared (deprecated in 2026-07-28, and
 * the worker holds no model): a server that asks anyway is refused in words the model can read.
 */
export function createServerClient(options: ServerClientOptions): TaskRequestClient {
  const { roots } = options;
  // Elicitation is declared in both modes; a 2026-07-28 `input_required` is never fulfilled in
  // memory (autoFulfill: false): the call returns it, and the turn waits for a person durably.
  // `tasks`: the client knows 2025-11-25 tasks (it sends task-augmented calls); it runs none itself.
  // The 2026-07-28 tasks extension is declared per request, only on the requests of a call that
  // runs as a task (see ManagedServer.withTasks): an ordinary call must not be answered with a task.
  const capabilities = {
    elicitation: { form: {}, url: {} },
    tasks: {},
    ...(roots ? { roots: { listChanged: true } } : {}),
  };
  const info = { name: 'durable-mcp', version: options.clientVersion };
  const client = new TaskRequestClient(info, capabilities, {
    capabilities,
    versionNegotiation: options.versionNegotiation,
    inputRequired: { autoFulfill: false },
  });
  client.fallbackRequestHandler = (request) => Promise.reject(refuseServerRequest(request.method));
  client.onclose = () => options.onClose(client);
  client.onerror = (err) => options.onError(err);
  // A 2025-era server asks in the middle of the call, over the connection the call holds.
  client.setRequestHandler('elicitation/create', (request, ctx) =>
    options.questions.answer(request, ctx.mcpReq.signal),
  );
  if (roots) {
    roots.connected();
    client.setRequestHandler('roots/list', () => roots.list());
  }
  return client;
}

/** What a transport reports back to its server. */
export interface TransportEvents {
  /** A remote server's header values and URL secrets, before it is dialled. */
  onSecrets: (values: string[]) => void;
  /** A shelf server's login: its tokens (secrets too) and its problems. */
  login: LoginFetchEvents;
  /** A chunk of a stdio server's stderr. */
  onStderr: (chunk: string) => void;
  /** A line a stdio server wrote to stdout that is not the protocol's. */
  onJunk: (line: string) => void;
}

/** The transport `entry` asks for, or the one the tests connect instead. */
export async function openTransport(
  entry: ServerEntry,
  deps: Pick<ManagedServerDeps, 'connect' | 'requestHeaders' | 'credentials' | 'stdioCommand' | 'environment'>,
  wire: WireTracker,
  events: TransportEvents,
): Promise<Transport> {
  if (deps.connect) return deps.connect(entry);
  if (entry.type === 'http' || entry.type === 'sse') {
    const headers = deps.requestHeaders?.() ?? { ...entry.headers };
    events.onSecrets(remoteSecrets(entry, headers));
    const { credentials } = deps;
    if (entry.login === undefined || !credentials || !entry.url) return createRemoteTransport(entry, headers, wire);
    const login = entry.login;
    const url = entry.url;
    return createRemoteTransport(entry, headers, wire, {
      wrapFetch: (inner) => loginFetch(inner, login, url, credentials, events.login),
    });
  }
  if (entry.type !== 'stdio' || !entry.command) {
    throw new Error(`transport "${entry.type}" is not supported`);
  }
  const launch = deps.stdioCommand
    ? await deps.stdioCommand(entry, deps.environment)
    : { command: entry.command, args: entry.args, env: deps.environment(), cwd: entry.cwd };
  return new ProcessGroupStdioTransport({ ...launch, onStderr: events.onStderr, onJunk: events.onJunk });
}
