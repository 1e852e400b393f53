/**
 * The loopback callback of a login on this machine: a server on 127.0.0.1 that takes the browser's
 * redirect, hands its address to the login, and shows the browser a page saying how it went.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { LoginError } from './loginChecks.js';

export interface CallbackListener {
  port: number;
  /** Resolves after the first callback request whose handling said `done` (the login finished or failed for good). */
  done: Promise<void>;
  close(): Promise<void>;
}

/** What the callback handler makes of one redirect: the page to show, and whether the login is over. */
export type CallbackOutcome = { done: boolean; ok: boolean; message: string };

/**
 * Listens on 127.0.0.1:`port` for the browser's redirect to `/callback` and hands each one's full
 * address to `handle`. One login at a time: a taken port is a {@link LoginError} saying so.
 */
export function listenForCallback(
  port: number,
  server: string,
  handle: (address: string) => Promise<CallbackOutcome>,
): Promise<CallbackListener> {
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let bound = port;
  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const address = `http://127.0.0.1:${bound}${req.url ?? '/'}`;
    if (req.method !== 'GET' || new URL(address).pathname !== '/callback') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    handle(address).then(
      (outcome) => {
        res
          .writeHead(outcome.ok ? 200 : 400, {
            'content-type': 'text/html; charset=utf-8',
            'cache-control': 'no-store',
          })
          .end(page(outcome));
        if (outcome.done) finish();
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${(err as Error).message}\n`);
      },
    );
  });
  return new Promise((resolve, reject) => {
    http.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') {
        reject(
          new LoginError(
            `port ${port} (DMCP_OAUTH_CALLBACK_PORT) on 127.0.0.1 is taken: another login may be running, or another program uses it. ` +
              `Set DMCP_OAUTH_CALLBACK_PORT to a free port, or start the login without waiting (durable-mcp mcp login ${server} --no-wait), ` +
              `open the address it prints, and paste the address the browser ends on: durable-mcp mcp login ${server} '<address>'`,
          ),
        );
      } else reject(new LoginError(`cannot listen on 127.0.0.1:${port} (DMCP_OAUTH_CALLBACK_PORT): ${err.message}`));
    });
    http.listen(port, '127.0.0.1', () => {
      const address = http.address();
      bound = typeof address === 'object' && address ? address.port : port;
      resolve({
        port: bound,
        done,
        close: () =>
          new Promise<void>((r) => {
            http.closeAllConnections();
            http.close(() => r());
          }),
      });
    });
  });
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

function page(outcome: CallbackOutcome): string {
  const title = outcome.ok ? 'Logged in' : 'Login failed';
  return `<!doctype html><html><head><meta charset="utf-8"><title>durable-mcp: ${title}</title></head><body><h1>${title}</h1><p>${escapeHtml(outcome.message)}</p></body></html>\n`;
}
