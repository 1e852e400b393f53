import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ServerEntry } from '../config/types.js';

/** The last thing that went wrong on the wire: an HTTP status the server answered, or a network error. */
export type WireFailure = { kind: 'http'; status: number; text: string } | { kind: 'network'; text: string };

/** Longest server-provided text kept in a failure cause. */
const MAX_DETAIL_CHARS = 200;
/** How long we wait for the body of an error response before describing it by its status line. */
const ERROR_BODY_WAIT_MS = 1000;

/**
 * Wraps `fetch` for one remote server and remembers the last failure. The SDK's own errors lose
 * the interesting part (SSE reports "Non-200 status code (401)", a refused connection is "fetch
 * failed"), and the status must say what the server answered.
 */
export class WireTracker {
  last?: WireFailure;

  readonly fetch: FetchLike = async (url, init) => {
    let response: Response;
    try {
      response = await fetch(url, init);
    } catch (err) {
      if (!isAbort(err)) this.last = { kind: 'network', text: networkCause(err) ?? errorText(err) };
      throw err;
    }
    // A GET answered 405 only means "no standalone stream", which the SDK expects.
    if (!response.ok && !(response.status === 405 && init?.method === 'GET')) {
      this.last = { kind: 'http', status: response.status, text: await errorBody(response) };
    }
    return response;
  };
}

async function errorBody(response: Response): Promise<string> {
  const fallback = response.statusText.toLowerCase();
  const copy = response.clone();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ERROR_BODY_WAIT_MS);
  });
  try {
    const body = await Promise.race([copy.text().catch(() => undefined), timeout]);
    return summarizeBody(body) || fallback;
  } finally {
    clearTimeout(timer);
    copy.body?.cancel().catch(() => undefined);
  }
}

/** The first useful line of an error body; a JSON-RPC error body gives its message. */
export function summarizeBody(body: string | undefined): string {
  if (!body) return '';
  let text = body.trim();
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof parsed.error === 'object' ? parsed.error?.message : parsed.error ?? parsed.message;
    if (typeof message === 'string' && message.trim()) text = message.trim();
  } catch {
    // Not JSON: keep the text.
  }
  const line = text.split(/\r?\n/).find((l) => l.trim()) ?? '';
  return line.length > MAX_DETAIL_CHARS ? `${line.slice(0, MAX_DETAIL_CHARS)}...` : line;
}

/** Builds the SDK client transport for an `http` or `sse` entry, sending `headers` on every request. */
export function createRemoteTransport(entry: ServerEntry, headers: Record<string, string>, tracker: WireTracker): Transport {
  if (!entry.url) throw new Error(`server "${entry.name}" has no url`);
  const url = new URL(entry.url);
  const requestInit = { headers };
  if (entry.type === 'sse') return new SSEClientTransport(url, { requestInit, fetch: tracker.fetch });
  return new StreamableHTTPClientTransport(url, {
    requestInit,
    fetch: tracker.fetch,
    // The standalone GET stream is only for server-initiated messages; when it drops we ping
    // instead of reconnecting for half a minute.
    reconnectionOptions: { initialReconnectionDelay: 500, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 1.5, maxRetries: 2 },
  });
}

/**
 * Ends a Streamable HTTP session with DELETE, bounded so a server that does not
 * answer cannot hold up a shutdown. SSE has no session to end.
 */
export async function terminateRemoteSession(transport: Transport | undefined, timeoutMs: number): Promise<void> {
  if (!(transport instanceof StreamableHTTPClientTransport) || !transport.sessionId) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to DELETE within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([transport.terminateSession(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Strings that must never leave the worker for this entry beyond what the environment scrubber
 * knows: header values, and the user-info and query values of its URL.
 */
export function remoteSecrets(entry: ServerEntry, headers: Record<string, string>): string[] {
  const out = new Set<string>();
  for (const value of Object.values(headers)) {
    out.add(value);
    const bearer = /^Bearer\s+(.+)$/i.exec(value);
    if (bearer?.[1]) out.add(bearer[1]);
  }
  if (entry.url) {
    try {
      const url = new URL(entry.url);
      if (url.username) out.add(decodeURIComponent(url.username));
      if (url.password) out.add(decodeURIComponent(url.password));
      for (const value of url.searchParams.values()) out.add(value);
    } catch {
      // Validated by config; nothing to add if it does not parse here.
    }
  }
  return [...out].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
}

/** Replaces each of `secrets` in `text` with `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('[redacted]');
  return out;
}

/** HTTP status carried by an SDK transport error, if any. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof McpError) return undefined;
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'number' && code >= 100 && code < 600) return code;
  const match = /\(HTTP (\d{3})\)/.exec(errorText(err));
  return match ? Number(match[1]) : undefined;
}

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed by the server',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
};

/** "connection refused: connect ECONNREFUSED 127.0.0.1:4000" for a fetch that failed on the network. */
export function networkCause(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES[code]) {
      return `${NETWORK_CODES[code]}: ${errorText(e)}`;
    }
  }
  return undefined;
}

/** Messages that say only "something failed on the wire"; the tracker knows more. */
const GENERIC_RE = /^(?:fetch failed|terminated|SSE error: undefined|Non-200 status code.*|SSE stream disconnected: TypeError: (?:fetch failed|terminated))$/i;

/** Describes a failure of a remote server for the status and for errors (not yet scrubbed). */
export function describeRemoteError(err: unknown, last: WireFailure | undefined): string {
  const status = httpStatusOf(err);
  if (status !== undefined) {
    const detail = last?.kind === 'http' && last.status === status ? last.text : summarizeBody(errorText(err));
    return `HTTP ${status}${detail ? `: ${detail}` : ''}`;
  }
  const network = networkCause(err);
  if (network) return network;
  const message = errorText(err);
  // SSE errors flatten the cause into their message ("SSE error: TypeError: fetch failed: connect ECONNREFUSED ...").
  const code = Object.keys(NETWORK_CODES).find((c) => new RegExp(`\\b${c}\\b`).test(message));
  if (code) return last?.kind === 'network' ? last.text : `${NETWORK_CODES[code]}: ${message}`;
  if (last && (GENERIC_RE.test(message) || message === '')) {
    return last.kind === 'http' ? `HTTP ${last.status}${last.text ? `: ${last.text}` : ''}` : last.text;
  }
  return message;
}

/**
 * What a failed ping says about the connection: `alive` (the server answered, even with an
 * error), `slow` (no answer in time: maybe busy, maybe gone; counted), `lost` (the connection or
 * session is gone).
 */
export function classifyPingFailure(err: unknown): 'alive' | 'slow' | 'lost' {
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return 'slow';
    if (err.code === ErrorCode.ConnectionClosed) return 'lost';
    return 'alive';
  }
  const status = httpStatusOf(err);
  // A gateway or an overloaded server answering 5xx/429 is still there; anything else (404: the
  // session is gone, 401: the token no longer works, network errors) means reconnect.
  if (status !== undefined && (status >= 500 || status === 429)) return 'slow';
  return 'lost';
}

function isAbort(err: unknown): boolean {
  return (err as { name?: unknown } | undefined)?.name === 'AbortError';
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
