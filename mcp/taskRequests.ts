/**
 * The requests of the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`), which the SDK
 * client cannot send itself: its 2026-era result decoding refuses a `tools/call` answered with
 * `resultType: "task"`, and it has no `tasks/*` requests of that era. ext-tasks frames them; this
 * client sends them on its own connection and matches their answers.
 */
import {
  Client,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  isJSONRPCErrorResponse,
  type ClientCapabilities,
  type JSONRPCResponse,
  type ServerCapabilities,
} from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  type DispatchOptions,
  type JsonRpcResponse,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';
import type { JsonValue } from '@modelcontextprotocol/ext-tasks/core';

/** The extension's identifier, in capabilities and in `-32021` errors. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** How long a raw request may wait when its caller gave no timeout (the SDK's own default). */
const DEFAULT_RAW_TIMEOUT_MS = 60_000;

/** Whether a 2026-07-28 server's `server/discover` capabilities offer the tasks extension (an object, as the extension defines). */
export function offersModernTasks(capabilities: ServerCapabilities | undefined): boolean {
  const value = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions?.[TASKS_EXTENSION];
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Whether an error answer says the server serves the request only to a client that declares the
 * tasks extension (`-32021`, "Missing required client capability", naming it).
 */
export function needsTasksExtension(code: number, data: unknown): boolean {
  if (code !== ProtocolErrorCode.MissingRequiredClientCapability) return false;
  const extensions = (data as { requiredCapabilities?: { extensions?: Record<string, unknown> } } | undefined)
    ?.requiredCapabilities?.extensions;
  return extensions !== undefined && TASKS_EXTENSION in extensions;
}

interface RawPending {
  settle: (response: JsonRpcResponse) => void;
  fail: (err: Error) => void;
}

/**
 * The SDK client, plus requests sent as they are and answered as they come (string IDs, which the
 * SDK's own requests never use), for the tasks extension of 2026-07-28 servers.
 */
export class TaskRequestClient extends Client {
  private readonly raw = new Map<string, RawPending>();
  private rawIds = 0;

  constructor(
    private readonly info: { name: string; version: string },
    private readonly declared: ClientCapabilities,
    options: ConstructorParameters<typeof Client>[1],
  ) {
    super(info, options);
  }

  /** What ext-tasks adds to each request of a 2026-07-28 session (`_meta` protocol version, client info and capabilities). */
  taskFraming(): {
    protocolVersion: string;
    clientInfo: { name: string; version: string };
    clientCapabilities: Record<string, JsonValue>;
  } {
    // `tasks` is the 2025-era capability, which 2026-07-28 does not have (the extension replaces it).
    const { tasks: _legacy, ...capabilities } = this.declared;
    return {
      protocolVersion: this.getNegotiatedProtocolVersion() ?? '2026-07-28',
      clientInfo: this.info,
      clientCapabilities: JSON.parse(JSON.stringify(capabilities)) as Record<string, JsonValue>,
    };
  }

  /**
   * Sends one JSON-RPC request as given (ext-tasks has framed it) and resolves with the server's
   * answer, result or error. Aborted or timed out, the request is withdrawn (its HTTP stream
   * closed, or `notifications/cancelled` sent) and the promise rejects.
   */
  rawRequest(request: JsonValue, options: DispatchOptions = {}): Promise<JsonRpcResponse> {
    const transport = this.transport;
    if (!transport) return Promise.reject(new SdkError(SdkErrorCode.NotConnected, 'Not connected'));
    const message = request as { method: string; params?: Record<string, unknown> };
    const id = `dmcp-task-${(this.rawIds += 1)}`;
    const perRequestStream = (transport as { hasPerRequestStream?: boolean }).hasPerRequestStream === true;
    const withdraw = perRequestStream ? new AbortController() : undefined;
    return new Promise<JsonRpcResponse>((resolve, reject) => {
      const reason = () =>
        options.signal?.reason instanceof Error
          ? options.signal.reason
          : new SdkError(SdkErrorCode.RequestTimeout, String(options.signal?.reason ?? 'aborted'));
      if (options.signal?.aborted) return reject(reason());
      const timeoutMs = options.context?.requestTimeoutMs ?? DEFAULT_RAW_TIMEOUT_MS;
      const done = () => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.raw.delete(id);
      };
      const cancel = (err: Error) => {
        if (!this.raw.has(id)) return;
        done();
        if (withdraw) withdraw.abort();
        else
          void transport
            .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: err.message } })
            .catch(() => undefined);
        reject(err);
      };
      const onAbort = () => cancel(reason());
      const timer = setTimeout(
        () => cancel(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out', { timeout: timeoutMs })),
        timeoutMs,
      );
      this.raw.set(id, {
        settle: (response) => {
          done();
          resolve(response);
        },
        fail: (err) => {
          done();
          reject(err);
        },
      });
      options.signal?.addEventListener('abort', onAbort, { once: true });
      transport
        .send({ ...message, jsonrpc: '2.0', id } as never, {
          ...(options.context?.headers ? { headers: options.context.headers } : {}),
          ...(withdraw ? { requestSignal: withdraw.signal } : {}),
        })
        .catch((err: unknown) => this.raw.get(id)?.fail(err instanceof Error ? err : new Error(String(err))));
    });
  }

  protected override _onresponse(response: JSONRPCResponse): void {
    const pending = typeof response.id === 'string' ? this.raw.get(response.id) : undefined;
    if (!pending) return super._onresponse(response);
    if (isJSONRPCErrorResponse(response)) {
      const { code, message, data } = response.error;
      pending.settle({
        kind: 'error',
        error: { code, message, ...(data !== undefined ? { data: data as JsonValue } : {}) },
      });
    } else {
      pending.settle({ kind: 'result', result: response.result as JsonValue });
    }
  }

  protected override _onclose(): void {
    for (const pending of [...this.raw.values()])
      pending.fail(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'));
    super._onclose();
  }
}

/**
 * The MCP task session over `client` (tasks/get, tasks/result, tasks/cancel and task-augmented
 * calls, which the SDK client does not send itself). On a 2026-07-28 server that offers the tasks
 * extension, its requests declare it and go out as they are (see {@link TaskRequestClient}).
 */
export function taskSessionOver(client: TaskRequestClient, endpointId: string): TaskEnabledSession {
  const modern = client.getProtocolEra() === 'modern' && offersModernTasks(client.getServerCapabilities());
  return modern
    ? createTaskSessionFromClient(client, {
        endpointId,
        rawDispatch: (req: JsonValue, options?: DispatchOptions) => client.rawRequest(req, options),
        v2RequestFraming: client.taskFraming(),
      })
    : createTaskSessionFromClient(client, { endpointId });
}
