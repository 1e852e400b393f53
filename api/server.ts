/**
 * Serves the API over HTTP and stops it gracefully: no new connections, event streams ended,
 * requests in flight finished (up to a bound), then the Temporal connection closed by the caller.
 */
import { setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import type { Logger } from 'pino';
import { createApi, type ApiOptions } from './app.js';
import { isLoopback } from './auth.js';

/** Options of {@link startApiServer}: the API's own, and where to listen. */
export interface ApiServerOptions extends Omit<ApiOptions, 'shutdown'> {
  host: string;
  /** 0 picks a free port. */
  port: number;
  logger: Logger;
  /** How long `close()` waits for requests in flight before cutting them (default 30 s). */
  closeGraceMs?: number;
  /** How long a connection may take to send a request's headers before it is closed (default 10 s). */
  headersTimeoutMs?: number;
  /**
   * How long a connection may take to send a whole request, headers and body, before it is closed
   * (default 30 s). It ends when the request has arrived: an event stream's answer is not bounded.
   */
  requestTimeoutMs?: number;
  /** Connections served at once; the ones beyond are closed as they arrive (default 256). */
  maxConnections?: number;
}

/** Below the common 1024 open files of a process, which its worker's servers and Temporal share. */
const DEFAULT_MAX_CONNECTIONS = 256;

export interface RunningApi {
  /** `http://host:port` */
  url: string;
  port: number;
  /** Stops accepting, ends event streams, waits for requests in flight; idempotent. */
  close(): Promise<void>;
}

export async function startApiServer(options: ApiServerOptions): Promise<RunningApi> {
  const shutdown = new AbortController();
  // Every open event stream listens for the shutdown: hundreds of them are expected, not a leak.
  setMaxListeners(0, shutdown.signal);
  // Listening on a network, the API is reached by whatever names lead there; on loopback only by
  // loopback names, since any other name is one a web page rebound to 127.0.0.1.
  const onLoopback = isLoopback(options.host) || options.host.toLowerCase() === 'localhost';
  const app = createApi({
    ...options,
    shutdown: shutdown.signal,
    requestOrigins: { ...options.requestOrigins, anyHost: options.requestOrigins?.anyHost ?? !onLoopback },
  });
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const requestTimeout = Math.max(options.requestTimeoutMs ?? 30_000, headersTimeout);
  // A slow client cannot hold a connection open before it has sent its request. Node checks the
  // timeouts every `connectionsCheckingInterval` (30 s by default, which would double them).
  const server = createAdaptorServer({
    fetch: app.fetch,
    hostname: options.host,
    serverOptions: { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.min(1000, headersTimeout / 2) },
  }) as Server;
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close() {
      closing ??= (async () => {
        const done = new Promise<void>((resolve) => server.close(() => resolve()));
        shutdown.abort();
        // A keep-alive connection goes idle when its last request finishes; close it then, not
        // after the client's keep-alive timeout.
        server.closeIdleConnections();
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<'timeout'>(
          (resolve) => (timer = setTimeout(() => resolve('timeout'), options.closeGraceMs ?? 30_000)),
        );
        const how = await Promise.race([done.then(() => 'done' as const), grace]);
        clearTimeout(timer);
        clearInterval(sweep);
        if (how === 'timeout') {
          options.logger.warn('requests still in flight after the grace period; closing their connections');
          server.closeAllConnections();
          await done;
        }
      })();
      return closing;
    },
  };
}
