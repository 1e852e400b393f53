/**
 * Serves the API over HTTP and stops it gracefully: no new connections, event streams ended,
 * requests in flight finished (up to a bound), then the Temporal connection closed by the caller.
 */
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
}

export interface RunningApi {
  /** `http://host:port` */
  url: string;
  port: number;
  /** Stops accepting, ends event streams, waits for requests in flight; idempotent. */
  close(): Promise<void>;
}

export async function startApiServer(options: ApiServerOptions): Promise<RunningApi> {
  const shutdown = new AbortController();
  // Listening on a network, the API is reached by whatever names lead there; on loopback only by
  // loopback names, since any other name is one a web page rebound to 127.0.0.1.
  const onLoopback = isLoopback(options.host) || options.host.toLowerCase() === 'localhost';
  const app = createApi({ ...options, shutdown: shutdown.signal, requestOrigins: { ...options.requestOrigins, anyHost: options.requestOrigins?.anyHost ?? !onLoopback } });
  const server = createAdaptorServer({ fetch: app.fetch, hostname: options.host }) as Server;
  // A slow client cannot hold a connection open forever before it has sent its request.
  server.headersTimeout = 20_000;
  server.requestTimeout = 0;
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
        const grace = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), options.closeGraceMs ?? 30_000)));
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
