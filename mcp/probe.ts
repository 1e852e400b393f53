/**
 * One look at a remote server from outside a worker (`durable-mcp mcp list`): the same transport
 * and era negotiation as the server pool, so what it reports is what a worker will meet. It sends
 * no credentials: no header of the entry (their values are the workers' to resolve) and no token.
 */
import {
  Client,
  extractWWWAuthenticateParams,
  type FetchLike,
  type ProtocolEra,
  type Transport,
} from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { ServerEntry } from '../config/types.js';
import { connectWithEra } from './era.js';
import {
  WireTracker,
  createRemoteTransport,
  httpStatusOf,
  networkCause,
  summarizeBody,
  terminateRemoteSession,
} from './httpTransport.js';

/** What one probe of a remote server learned. */
export type RemoteProbe =
  | { kind: 'reachable'; era: ProtocolEra; server?: { name: string; version: string } }
  /** 401: it wants an account; the challenge's protected-resource metadata and scope, when it names them. */
  | { kind: 'unauthorized'; resourceMetadata?: string; scope?: string }
  | { kind: 'unreachable'; why: string }
  | { kind: 'not_probed'; why: string };

export interface ProbeRemoteOptions {
  /** The whole probe's deadline: connection, negotiation and handshake. */
  timeoutMs: number;
  /** The name and version the probe introduces itself with. */
  clientInfo: { name: string; version: string };
}

/** The last HTTP answer that was not a success, as the server put it. */
interface Refusal {
  status: number;
  statusText: string;
  challenge?: { resourceMetadata?: string; scope?: string };
}

const quiet = { info: () => undefined, debug: () => undefined, warn: () => undefined } as unknown as Logger;

/**
 * Connects to `entry` (`http` or `sse`) as the pool does (`auto` era negotiation, its transport
 * with its redirect rule and size cap), then ends the session it opened. A URL that still holds
 * `${VAR}` references is not probed: only the workers resolve them.
 */
export async function probeRemote(
  entry: Pick<ServerEntry, 'type' | 'url'> & { name?: string },
  options: ProbeRemoteOptions,
): Promise<RemoteProbe> {
  if (entry.type !== 'http' && entry.type !== 'sse') return { kind: 'not_probed', why: 'a command' };
  if (!entry.url) return { kind: 'not_probed', why: 'it has no url' };
  if (entry.url.includes('$')) return { kind: 'not_probed', why: 'its URL holds variables the workers resolve' };
  const { timeoutMs } = options;
  const began = Date.now();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  let refusal: Refusal | undefined;
  let network: string | undefined;
  // Sits under the transport's own fetch (which follows no redirect off the server's origin).
  const watch =
    (inner: FetchLike): FetchLike =>
    async (url, init) => {
      // The DELETE that ends the session comes after the deadline, with its own bound.
      const signal =
        init?.method === 'DELETE'
          ? init.signal
          : init?.signal
            ? AbortSignal.any([init.signal, deadline.signal])
            : deadline.signal;
      try {
        const response = await inner(url, { ...init, ...(signal ? { signal } : {}) });
        // Only the last refusal counts: a legacy server refuses `server/discover`, then connects.
        if (response.ok) refusal = undefined;
        else if (!(response.status === 405 && init?.method === 'GET')) {
          refusal = { status: response.status, statusText: response.statusText };
          if (response.status === 401) {
            const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
            refusal.challenge = {
              ...(resourceMetadataUrl ? { resourceMetadata: resourceMetadataUrl.href } : {}),
              ...(scope ? { scope } : {}),
            };
          }
        }
        return response;
      } catch (err) {
        if (!deadline.signal.aborted) {
          const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
          network =
            typeof cause?.code === 'string'
              ? cause.code
              : typeof cause?.message === 'string'
                ? cause.message
                : (err as Error).message;
        }
        throw err;
      }
    };
  const server = { ...entry, name: entry.name ?? 'probe', type: entry.type, url: entry.url } as ServerEntry;
  let transport: Transport | undefined;
  let client: Client | undefined;
  try {
    client = await Promise.race([
      connectWithEra({
        entry: server,
        remote: true,
        timeoutMs: () => Math.max(1, began + timeoutMs - Date.now()),
        createTransport: async () => {
          transport = createRemoteTransport(server, {}, new WireTracker(), { wrapFetch: watch });
          return transport;
        },
        createClient: (versionNegotiation) => new Client(options.clientInfo, { versionNegotiation }),
        log: quiet,
      }),
      new Promise<never>((_, reject) =>
        deadline.signal.addEventListener('abort', () => reject(new Error('deadline')), { once: true }),
      ),
    ]);
    const era = client.getProtocolEra() ?? 'legacy';
    const info = client.getServerVersion();
    return { kind: 'reachable', era, ...(info ? { server: { name: info.name, version: info.version } } : {}) };
  } catch (err) {
    const failed = refusal as Refusal | undefined;
    if (failed?.status === 401) return { kind: 'unauthorized', ...failed.challenge };
    // The SDK's own request timeout (the time left) may fire just before the deadline does.
    if (deadline.signal.aborted || Date.now() - began >= timeoutMs)
      return { kind: 'unreachable', why: `no answer within ${Math.round(timeoutMs / 100) / 10} s` };
    const said = httpStatusOf(err);
    if (said === undefined && network !== undefined) return { kind: 'unreachable', why: network };
    const status = said ?? failed?.status;
    // A 2xx the transport could not use (an SSE GET answered with a page) is said in its words.
    if (status !== undefined && status >= 300) {
      const text = failed?.status === status ? failed.statusText : '';
      return { kind: 'unreachable', why: `HTTP ${status}${text ? ` ${text}` : ''}` };
    }
    return {
      kind: 'unreachable',
      why: networkCause(err) ?? (summarizeBody(err instanceof Error ? err.message : String(err)) || 'no MCP answer'),
    };
  } finally {
    clearTimeout(timer);
    // A legacy session it opened is ended, as a client would; the 2026-07-28 era has none.
    await terminateRemoteSession(transport, Math.max(100, Math.min(timeoutMs, 2000))).catch(() => undefined);
    await (client?.close() ?? transport?.close())?.catch(() => undefined);
  }
}
