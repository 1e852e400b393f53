/**
 * Which MCP wire era a server speaks: `legacy` (2024-11-05 through 2025-11-25, the `initialize`
 * handshake) or `modern` (2026-07-28, `server/discover`, stateless). Negotiated per server at
 * connect time, as the entry's `protocol` allows.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type Client,
  type PriorDiscovery,
  type Transport,
  type VersionNegotiationOptions,
} from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { ServerEntry } from '../config/types.js';
import { ProcessGroupStdioTransport } from './stdioTransport.js';

/**
 * Longest a stdio server may stay silent on the `server/discover` probe before it counts as a
 * legacy server. Some 2025-era servers never answer a request that comes before `initialize`, and
 * each of them pays this once per worker and config (the verdict is remembered); a longer wait
 * would add to every first start of such a server.
 */
export const STDIO_PROBE_TIMEOUT_MS = 2000;

/** Era verdicts of stdio servers, by {@link eraVerdictKey}, kept for the life of the worker. */
export type EraVerdicts = Map<string, PriorDiscovery>;

/**
 * The part of an entry that decides what process answers: the same command in the same place with
 * the same environment is the same server. Header values and environment values never reach this
 * key's users (it stays in memory).
 */
export function eraVerdictKey(entry: ServerEntry): string {
  return JSON.stringify([entry.type, entry.command, entry.args, entry.cwd, entry.env, entry.envFrom, entry.url]);
}

/** How the client negotiates for `entry`: a pin never falls back; `auto` on stdio probes briefly. */
export function negotiationFor(entry: ServerEntry, remote: boolean, timeoutMs: number): VersionNegotiationOptions {
  const protocol = entry.protocol ?? 'auto';
  if (protocol === 'legacy') return { mode: 'legacy' };
  const mode = protocol === '2026-07-28' ? { pin: '2026-07-28' } : 'auto';
  // Over HTTP silence is an outage, not an era: the probe has the whole start deadline.
  const probeMs = remote ? timeoutMs : Math.min(STDIO_PROBE_TIMEOUT_MS, Math.max(1, Math.floor(timeoutMs / 2)));
  return { mode, probe: { timeoutMs: probeMs, maxRetries: 0 } };
}

export interface ConnectWithEraOptions<C extends Client = Client> {
  entry: ServerEntry;
  remote: boolean;
  verdicts?: EraVerdicts;
  /** What is left of the start deadline, in ms. */
  timeoutMs: () => number;
  createTransport: () => Promise<Transport>;
  createClient: (negotiation: VersionNegotiationOptions) => C;
  log: Logger;
}

/**
 * Connects a new client, negotiating the era. A stdio server of an `auto` entry whose verdict is
 * known skips the probe; one that exits on the probe (some servers end on any request that comes
 * before `initialize`) is started again and spoken to in the legacy era.
 */
export async function connectWithEra<C extends Client>(options: ConnectWithEraOptions<C>): Promise<C> {
  const { entry, remote, verdicts } = options;
  const key = !remote && (entry.protocol ?? 'auto') === 'auto' && verdicts ? eraVerdictKey(entry) : undefined;
  const prior = key !== undefined ? verdicts?.get(key) : undefined;
  const transport = await options.createTransport();
  const client = options.createClient(negotiationFor(entry, remote, options.timeoutMs()));
  try {
    await client.connect(transport, { timeout: options.timeoutMs(), ...(prior ? { prior } : {}) });
  } catch (err) {
    if (key !== undefined) verdicts?.delete(key);
    if (key === undefined || prior || !exited(transport)) throw err;
    options.log.info('server exited on the protocol probe; starting it again in the legacy era');
    await transport.close().catch(() => undefined);
    const again = await options.createTransport();
    const legacy = options.createClient({ mode: 'legacy' });
    await legacy.connect(again, { timeout: options.timeoutMs() });
    verdicts?.set(key, { kind: 'legacy' });
    return legacy;
  }
  if (key !== undefined && !prior) {
    const discover = client.getDiscoverResult();
    verdicts?.set(
      key,
      client.getProtocolEra() === 'modern' && discover ? { kind: 'modern', discover } : { kind: 'legacy' },
    );
  }
  return client;
}

function exited(transport: Transport): boolean {
  return (
    transport instanceof ProcessGroupStdioTransport && (transport.exitCode !== null || transport.exitSignal !== null)
  );
}

/**
 * The answer to a request a server sends that this client does not serve (sampling above all: the
 * worker holds no model). The message reaches the server, which usually passes it on to the model.
 */
export function refuseServerRequest(method: string): ProtocolError {
  const what = method === 'sampling/createMessage' ? 'sampling (sampling/createMessage)' : `"${method}"`;
  return new ProtocolError(
    ProtocolErrorCode.MethodNotFound,
    `${what} is not supported by this client (durable-mcp): it offers no model to servers; do the work in the tool or return the text for the agent's own model`,
  );
}
