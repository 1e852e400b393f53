/**
 * `durable-mcp mcp login <name>` and `mcp logout <name>` (the shelf's command group calls these
 * after looking the server up), and `mcp rekey`. Login waits for the browser on the loopback
 * callback, or takes the address the browser ended on as its argument (paste-back). Nothing here
 * prints a token: only addresses, times and names.
 */
import { spawn } from 'node:child_process';
import { nameProblem } from '../config/names.js';
import { listenForCallback, type CallbackOutcome } from '../plane/loginCallback.js';
import { LoginError } from '../plane/loginChecks.js';
import { logout } from '../plane/logout.js';
import {
  callbackUrl,
  finishLogin,
  startLogin,
  type FinishedLogin,
  type LoginDeps,
  type StartLoginOptions,
} from '../plane/oauth.js';
import { tokenStoreFromSettings, type TokenStore } from '../plane/tokenStore.js';
import type { Settings } from '../settings/index.js';
import type { ShelfOAuthClient } from '../contract/index.js';

export interface LoginCommandOptions {
  /** The shelf name of the server. */
  server: string;
  /** Its Streamable HTTP or SSE address (from the shelf entry). */
  serverUrl: string;
  /** Paste-back: the address the browser ended on; finishes the pending login instead of starting one. */
  redirect?: string;
  /** Do not try to open a browser; print the address only. */
  noBrowser?: boolean;
  /** Start the login, print the address, and return without waiting on the callback port (paste-back later). */
  noWait?: boolean;
  settings: Settings;
  /** Lines for stdout. */
  out: (line: string) => void;
  /** Lines for stderr; default `out` with an `error: ` prefix. */
  err?: (line: string) => void;
  /** How long to wait for the browser; default 10 minutes. */
  waitMs?: number;
  /** Opens the address in a browser; default the platform's opener (xdg-open, open, rundll32 url.dll), without a shell. */
  openBrowser?: (url: string) => void;
  /** For every request to the servers (tests). */
  fetch?: typeof fetch;
  /** The token store; default the one the settings name. */
  store?: TokenStore;
  /** The shelf entry's pre-registered client (its secret is read from `env`). */
  client?: ShelfOAuthClient;
  /** Where a pre-registered client's secret variable is read; default process.env. */
  env?: NodeJS.ProcessEnv;
}

export interface LogoutCommandOptions {
  server: string;
  settings: Settings;
  out: (line: string) => void;
  err?: (line: string) => void;
  fetch?: typeof fetch;
  store?: TokenStore;
}

/**
 * The program and argument vector that open `url` in a browser on `platform`, started without a
 * shell: the address comes from the authorization server, and a shell (`cmd /c start` on Windows)
 * would run what follows an `&` or `|` in it as commands. Undefined for anything but an http(s)
 * address, since the openers also start programs and files they are given.
 */
export function browserOpener(platform: NodeJS.Platform, url: string): { command: string; args: string[] } | undefined {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return undefined;
  }
  if (protocol !== 'https:' && protocol !== 'http:') return undefined;
  if (platform === 'darwin') return { command: 'open', args: [url] };
  // url.dll hands the address to the default browser; rundll32 takes it as plain text, no shell.
  if (platform === 'win32') return { command: 'rundll32', args: ['url.dll,FileProtocolHandler', url] };
  return { command: 'xdg-open', args: [url] };
}

/** Opens `url` with the platform's opener, detached; failures are silent (the address is printed anyway). */
export function openInBrowser(url: string): void {
  const opener = browserOpener(process.platform, url);
  if (!opener) return;
  const { command, args } = opener;
  try {
    const child = spawn(command, args, { detached: true, stdio: 'ignore', shell: false, windowsHide: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // No opener: the printed address is the way.
  }
}

function finishedLines(done: FinishedLogin): string[] {
  const lines = [
    `Logged in to ${done.server} (${done.serverUrl}): ${done.expiresAt !== undefined ? `the access token expires ${new Date(done.expiresAt).toISOString()}` : 'the access token has no expiry'}${done.hasRefreshToken ? ' and is refreshed by the workers' : ''}.`,
  ];
  if (!done.hasRefreshToken && done.expiresAt !== undefined)
    lines.push(`The server gave no refresh token: log in again when it expires.`);
  return lines;
}

async function storeFor(opts: { settings: Settings; store?: TokenStore }): Promise<TokenStore> {
  return opts.store ?? tokenStoreFromSettings(opts.settings);
}

/** Whether `server` is not a shelf name; says why through `err`. */
function refusedName(server: string, err: (line: string) => void): boolean {
  const problem = nameProblem(server);
  if (problem) err(problem);
  return problem !== undefined;
}

/** Where a command's errors go: `err`, else `out` with an `error: ` prefix. */
function errorPrinter(opts: { out: (line: string) => void; err?: (line: string) => void }): (line: string) => void {
  return opts.err ?? ((line: string) => opts.out(`error: ${line}`));
}

/** What {@link loginCommand} has made ready by the time it waits for the browser. */
interface ReadyLogin {
  deps: LoginDeps;
  start: StartLoginOptions;
  /** What finishing the login needs besides the address: a pre-registered client's secret. */
  finishing: { clientSecret?: string };
  pasteBack: string;
  err: (line: string) => void;
}

/**
 * Listens on the loopback callback, starts the login, opens the browser and waits for it to come
 * back (or for the wait to end); the exit code of {@link loginCommand}.
 */
async function loginThroughCallback(opts: LoginCommandOptions, ready: ReadyLogin): Promise<number> {
  const { deps, start, finishing, pasteBack, err } = ready;
  let finished: FinishedLogin | undefined;
  let failure: string | undefined;
  const handle = async (address: string): Promise<CallbackOutcome> => {
    try {
      finished = await finishLogin(deps, {
        server: opts.server,
        redirectAddress: address,
        serverUrl: opts.serverUrl,
        ...finishing,
      });
      return { done: true, ok: true, message: `Logged in to ${opts.server}. You can close this tab.` };
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      // A tab of an older login must not end this one; anything else does.
      const stale = e instanceof LoginError && e.reason === 'state';
      if (!stale) failure = message;
      return { done: !stale, ok: false, message };
    }
  };
  const listener = await listenForCallback(opts.settings.oauth.callbackPort, opts.server, handle);
  let timer: NodeJS.Timeout | undefined;
  try {
    const started = await startLogin(deps, start);
    opts.out(`Open this address in a browser to log in to ${opts.server}:`);
    opts.out(`  ${started.authorizationUrl}`);
    opts.out(
      `Waiting for the browser to come back to ${start.redirectUrl} ... (if it runs on another machine, paste the address it ends on: ${pasteBack})`,
    );
    if (!opts.noBrowser) (opts.openBrowser ?? openInBrowser)(started.authorizationUrl);
    const waitMs = opts.waitMs ?? 10 * 60_000;
    const timedOut = await Promise.race([
      listener.done.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), waitMs))),
    ]);
    if (timedOut) {
      err(`no answer from the browser within ${Math.round(waitMs / 1000)} s; the login stays pending: ${pasteBack}`);
      return 1;
    }
  } finally {
    clearTimeout(timer);
    await listener.close();
  }
  if (!finished) {
    err(failure ?? 'the login did not finish');
    return 1;
  }
  for (const line of finishedLines(finished)) opts.out(line);
  return 0;
}

/**
 * Logs in to a shelf server. Exit code 0 when logged in (or, with `noWait`, when the login was
 * started), 1 when it failed, 2 for a bad server name.
 */
export async function loginCommand(opts: LoginCommandOptions): Promise<number> {
  const err = errorPrinter(opts);
  if (refusedName(opts.server, err)) return 2;
  try {
    const store = await storeFor(opts);
    const deps: LoginDeps = { store, ...(opts.fetch ? { fetch: opts.fetch } : {}) };
    const secretEnv = opts.client?.clientSecretEnv;
    const clientSecret = secretEnv !== undefined ? (opts.env ?? process.env)[secretEnv] || undefined : undefined;
    if (secretEnv !== undefined && clientSecret === undefined) {
      err(
        `${opts.server}: its client secret is read from ${secretEnv}, which is not set here: set ${secretEnv} to the secret of client ${opts.client!.clientId} and run durable-mcp mcp login ${opts.server} again`,
      );
      return 1;
    }
    const client = opts.client
      ? {
          clientId: opts.client.clientId,
          ...(clientSecret !== undefined ? { clientSecret, clientSecretEnv: secretEnv! } : {}),
        }
      : undefined;
    const finishing = { ...(clientSecret !== undefined ? { clientSecret } : {}) };
    if (opts.redirect !== undefined) {
      for (const line of finishedLines(
        await finishLogin(deps, {
          server: opts.server,
          redirectAddress: opts.redirect,
          serverUrl: opts.serverUrl,
          ...finishing,
        }),
      ))
        opts.out(line);
      return 0;
    }
    const port = opts.settings.oauth.callbackPort;
    const metadataUrl = opts.settings.oauth.clientMetadataUrl;
    const metadataDocument = metadataUrl !== undefined ? { clientMetadataUrl: metadataUrl } : {};
    const redirectUrl = callbackUrl(port);
    const pasteBack = `durable-mcp mcp login ${opts.server} '<address>'`;
    const start: StartLoginOptions = {
      server: opts.server,
      serverUrl: opts.serverUrl,
      redirectUrl,
      ...(client ? { client } : {}),
      ...metadataDocument,
    };
    if (opts.noWait) {
      const started = await startLogin(deps, start);
      opts.out(`Open this address in a browser to log in to ${opts.server}:`);
      opts.out(`  ${started.authorizationUrl}`);
      opts.out(
        `The browser ends on ${redirectUrl}?... (a page that may not load on that machine); paste that whole address back:`,
      );
      opts.out(`  ${pasteBack}`);
      return 0;
    }
    return await loginThroughCallback(opts, { deps, start, finishing, pasteBack, err });
  } catch (e) {
    err(e instanceof Error ? e.message : String(e));
    return 1;
  }
}

/**
 * Logs out of a shelf server for every worker: revokes its tokens where the authorization server
 * offers revocation, and deletes them. Exit code 0 when done, 1 when a revocation failed (the
 * tokens are deleted anyway) or the store could not be used, 2 for a bad server name.
 */
export async function logoutCommand(opts: LogoutCommandOptions): Promise<number> {
  const err = errorPrinter(opts);
  if (refusedName(opts.server, err)) return 2;
  try {
    const store = await storeFor(opts);
    const result = await logout({ store, ...(opts.fetch ? { fetch: opts.fetch } : {}) }, opts.server);
    if (!result.deleted && result.failures.length === 0) {
      opts.out(`${opts.server}: not logged in; nothing to do.`);
      return 0;
    }
    if (result.revoked.length > 0)
      opts.out(
        `${opts.server}: revoked the ${result.revoked.map((r) => r.replace('_', ' ')).join(' and the ')} at ${result.revocationEndpoint}.`,
      );
    else if (!result.revocationEndpoint)
      opts.out(
        `${opts.server}: the authorization server offers no revocation; the tokens stay valid there until they expire.`,
      );
    for (const f of result.failures) err(`${opts.server}: could not revoke ${f}`);
    if (result.deleted) opts.out(`${opts.server}: logged out; the login is deleted for every worker.`);
    return result.failures.length > 0 ? 1 : 0;
  } catch (e) {
    err(e instanceof Error ? e.message : String(e));
    return 1;
  }
}

/** Rewrites every login file with the current OAuth key (after DMCP_OAUTH_KEY changed); exit code 0 or 1. */
export async function rekeyCommand(opts: {
  settings: Settings;
  out: (line: string) => void;
  err?: (line: string) => void;
  store?: TokenStore;
}): Promise<number> {
  const err = errorPrinter(opts);
  try {
    const store = await storeFor(opts);
    const { rewritten, oldKeyFile } = await store.rekey();
    opts.out(
      rewritten.length === 0
        ? `Every login file in ${store.dir} is already written with the current key.`
        : `Rewrote ${rewritten.length} login file(s) in ${store.dir} with the current key; the previous key is no longer needed for them.`,
    );
    if (oldKeyFile !== undefined)
      opts.out(
        `The old key file ${oldKeyFile} can be deleted once every process has DMCP_OAUTH_KEY; until then its key is still read.`,
      );
    return 0;
  } catch (e) {
    err(e instanceof Error ? e.message : String(e));
    return 1;
  }
}
