import {
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type FetchLike,
  type Transport,
} from '@modelcontextprotocol/client';
import type { ServerEntry } from '../config/types.js';
import { ConnectionLostError } from './serverErrors.js';

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

  /** `scrub` runs on an error body before it is cut, so a secret at the cut is not left half there. */
  constructor(private readonly scrub: (text: string) => string = (t) => t) {}

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
      this.last = { kind: 'http', status: response.status, text: await errorBody(response, this.scrub) };
    }
    return response;
  };
}

async function errorBody(response: Response, scrub: (text: string) => string): Promise<string> {
  const fallback = response.statusText.toLowerCase();
  const copy = response.clone();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ERROR_BODY_WAIT_MS);
  });
  try {
    const body = await Promise.race([copy.text().catch(() => undefined), timeout]);
    return summarizeBody(body, scrub) || fallback;
  } finally {
    clearTimeout(timer);
    copy.body?.cancel().catch(() => undefined);
  }
}

/**
 * The first useful line of an error body; a JSON-RPC error body gives its message. The line is
 * scrubbed before it is cut: cut first, a secret across the cut would keep the half before it.
 */
export function summarizeBody(body: string | undefined, scrub: (text: string) => string = (t) => t): string {
  if (!body) return '';
  let text = body.trim();
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof parsed.error === 'object' ? parsed.error?.message : (parsed.error ?? parsed.message);
    if (typeof message === 'string' && message.trim()) text = message.trim();
  } catch {
    // Not JSON: keep the text.
  }
  const line = scrub(text.split(/\r?\n/).find((l) => l.trim()) ?? '');
  return line.length > MAX_DETAIL_CHARS ? `${line.slice(0, MAX_DETAIL_CHARS)}...` : line;
}

/**
 * Largest message a remote server may send: a whole response, or one event of an SSE stream (a
 * stream lives as long as the session, so it is bounded per event). A tool result with a few large
 * images or a big embedded resource fits with a wide margin; past it the request fails rather than
 * the worker buffering whatever the server sends (fetch also inflates gzip and brotli bodies).
 */
export const MAX_REMOTE_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface RemoteTransportOptions {
  /** Default {@link MAX_REMOTE_MESSAGE_BYTES}. */
  maxMessageBytes?: number;
  /** Wraps the fetch every request goes through (a shelf server's login adds its token here). */
  wrapFetch?: (fetch: FetchLike) => FetchLike;
}

/** Header names whose values are credentials: never sent in clear text beyond this machine. */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|token|secret|api-?key|auth/i;

/** Whether `hostname` (as `URL.hostname` spells it) names this machine. */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '[::1]' || /^127(\.\d{1,3}){3}$/.test(h);
}

/**
 * Refuses credentials (an Authorization header, a bearer token, another credential header, or
 * the URL's user info) over plain `http://` to another machine: anyone on the path could read and
 * replay them. Loopback is exempt: the traffic never leaves the machine.
 */
function refuseCredentialsInClear(entry: ServerEntry, url: URL, headers: Record<string, string>): void {
  if (url.protocol !== 'http:' || isLoopbackHost(url.hostname)) return;
  const named = Object.keys(headers).filter((name) => CREDENTIAL_HEADER.test(name));
  if (named.length === 0 && !url.username && !url.password) return;
  const what = named.length > 0 ? `header(s) ${named.join(', ')}` : 'the credentials in its url';
  throw new Error(
    `server "${entry.name}": refusing to send ${what} to ${url.host} over plain http: anyone on the network path could read them; use an https:// url (plain http is allowed only to loopback addresses)`,
  );
}

/** Status codes whose responses have no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * Counts the bytes of a response body and fails it past `max`. For an SSE stream the count starts
 * again after each event (a blank line), so a long session is not cut, only an oversized event.
 * A failed stream leaves the request it answers waiting (the SDK reconnects streams), so when the
 * stream answers one known request, it ends with an error response to that request instead.
 */
function byteCap(
  max: number,
  perEvent: boolean,
  what: string,
  requestId: string | number | undefined,
): TransformStream<Uint8Array, Uint8Array> {
  let count = 0;
  let afterNewline = false;
  const message = `${what}: a message larger than ${max} bytes was refused`;
  const refuse = (controller: TransformStreamDefaultController<Uint8Array>) => {
    if (!perEvent || requestId === undefined) {
      controller.error(new Error(message));
      return;
    }
    // The blank line ends the cut event (dropped by the client as unparsable), then the answer.
    const answer = JSON.stringify({ jsonrpc: '2.0', id: requestId, error: { code: -32603, message } });
    controller.enqueue(new TextEncoder().encode(`\n\nevent: message\ndata: ${answer}\n\n`));
    controller.terminate();
  };
  return new TransformStream({
    transform(chunk, controller) {
      if (!perEvent) {
        count += chunk.byteLength;
        if (count > max) refuse(controller);
        else controller.enqueue(chunk);
        return;
      }
      for (let i = 0; i < chunk.length; i += 1) {
        const byte = chunk[i];
        if (byte === 0x0a) {
          if (afterNewline) count = 0;
          afterNewline = true;
        } else if (byte !== 0x0d) {
          afterNewline = false;
          count += 1;
        }
      }
      if (count > max) refuse(controller);
      else controller.enqueue(chunk);
    },
  });
}

/** The ID of the one JSON-RPC request a POST carries, if it carries exactly one. */
function requestIdOf(init: RequestInit | undefined): string | number | undefined {
  if (init?.method !== 'POST' || typeof init.body !== 'string') return undefined;
  try {
    const message = JSON.parse(init.body) as { id?: unknown; method?: unknown };
    return (typeof message.id === 'string' || typeof message.id === 'number') && typeof message.method === 'string'
      ? message.id
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The fetch the SDK transports use: it never follows a redirect by itself (the SDK follows those
 * within the server's origin and reports the others, so headers never go to another origin), and
 * it caps what a response may hold.
 */
function boundedFetch(inner: FetchLike, max: number, what: string): FetchLike {
  return async (url, init) => {
    const response = await inner(url, { ...init, redirect: 'manual' });
    if (!response.body || NULL_BODY_STATUSES.has(response.status)) return response;
    const sse = (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');
    return new Response(response.body.pipeThrough(byteCap(max, sse, what, requestIdOf(init))), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** Builds the SDK client transport for an `http` or `sse` entry, sending `headers` on every request. */
export function createRemoteTransport(
  entry: ServerEntry,
  headers: Record<string, string>,
  tracker: WireTracker,
  options: RemoteTransportOptions = {},
): Transport {
  if (!entry.url) throw new Error(`server "${entry.name}" has no url`);
  const url = new URL(entry.url);
  refuseCredentialsInClear(entry, url, headers);
  const requestInit = { headers };
  const inner = options.wrapFetch ? options.wrapFetch(tracker.fetch) : tracker.fetch;
  const fetch = boundedFetch(inner, options.maxMessageBytes ?? MAX_REMOTE_MESSAGE_BYTES, `server "${entry.name}"`);
  if (entry.type === 'sse') return new SSEClientTransport(url, { requestInit, fetch });
  return new StreamableHTTPClientTransport(url, {
    requestInit,
    fetch,
    // The standalone GET stream is only for server-initiated messages; when it drops we ping
    // instead of reconnecting for half a minute.
    reconnectionOptions: {
      initialReconnectionDelay: 500,
      maxReconnectionDelay: 2000,
      reconnectionDelayGrowFactor: 1.5,
      maxRetries: 2,
    },
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
  if (err instanceof SdkHttpError) return err.status;
  if (err instanceof ProtocolError || err instanceof SdkError) return undefined;
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
const GENERIC_RE =
  /^(?:fetch failed|terminated|SSE error: undefined|Non-200 status code.*|SSE stream disconnected: TypeError: (?:fetch failed|terminated))$/i;

/**
 * The error of a call whose own request failed on the wire (refused, reset, closed: no HTTP
 * status), before the transport reported the connection lost: the loss's error, with the same
 * description. Undefined for anything else (an answer from the server, an HTTP status).
 */
export function lostOnWire(
  err: unknown,
  server: string,
  last: WireFailure | undefined,
  scrub: (text: string) => string,
): ConnectionLostError | undefined {
  if (httpStatusOf(err) !== undefined || err instanceof ProtocolError) return undefined;
  if (networkCause(err) === undefined && !GENERIC_RE.test(errorText(err))) return undefined;
  return new ConnectionLostError(server, scrub(describeRemoteError(err, last)));
}

/**
 * Describes a failure of a remote server for the status and for errors. Only the part that is cut
 * (an error body) is scrubbed here, with `scrub`; the caller scrubs the whole text.
 */
export function describeRemoteError(
  err: unknown,
  last: WireFailure | undefined,
  scrub: (text: string) => string = (t) => t,
): string {
  const status = httpStatusOf(err);
  if (status !== undefined) {
    const detail = last?.kind === 'http' && last.status === status ? last.text : summarizeBody(errorText(err), scrub);
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
  // An error answer from the server: it is there.
  if (err instanceof ProtocolError) return 'alive';
  if (err instanceof SdkError && !(err instanceof SdkHttpError)) {
    if (err.code === SdkErrorCode.RequestTimeout) return 'slow';
    if (
      err.code === SdkErrorCode.ConnectionClosed ||
      err.code === SdkErrorCode.NotConnected ||
      err.code === SdkErrorCode.SendFailed
    )
      return 'lost';
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
