/**
 * OAuth logins of shelf servers, as the pool sees them: a bearer token added to every request of a
 * remote server that has a login, one refresh after a 401, and the reason a server cannot be reached
 * without a (new) login. The tokens come from the worker's credentials (the token store); this room
 * never stores one.
 */
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { LoginProblemKind } from '../contract/index.js';

/** Why a shelf server cannot be used until someone logs in (again), with the text the status shows. */
export interface LoginProblem {
  kind: LoginProblemKind;
  message: string;
}

export type LoginToken = { token: string; loginId: string } | { problem: LoginProblem };

/** What the pool needs of the worker's credentials (the token store's worker side). */
export interface LoginCredentials {
  /** A valid access token of the shelf server's login, refreshed first when it is about to expire. */
  accessToken(server: string, serverUrl: string): Promise<LoginToken>;
  /** After a 401 to `failedToken`: one refresh (or the token another process refreshed meanwhile). */
  afterUnauthorized(server: string, serverUrl: string, failedToken: string | undefined): Promise<LoginToken>;
  /**
   * The server refused `deniedToken` with 403 `insufficient_scope`, naming `scope`: noted with the
   * login (for `mcp list` and the next login), and the problem in the status's words.
   */
  insufficientScope?(
    server: string,
    serverUrl: string,
    deniedToken: string,
    scope: string | undefined,
  ): Promise<LoginProblem>;
  /**
   * After a 401 to a server that has a login: whether its protected resource metadata (at
   * `resourceMetadataUrl`, from the 401, when it named one) now names another authorization server
   * than the login's. Noted with the login, and the problem in the status's words; undefined when
   * it has not moved or that cannot be told.
   */
  authorizationServerMoved?(
    server: string,
    serverUrl: string,
    resourceMetadataUrl: string | undefined,
  ): Promise<LoginProblem | undefined>;
  /** Every token value this process has seen for the login (access and refresh): scrubbed wherever the server's text goes. */
  secretsOf?(server: string): string[];
}

/** What {@link loginFetch} tells its server about each request. */
export interface LoginFetchEvents {
  /** A token is about to be sent: it must be scrubbed from everything that leaves the worker. */
  onToken(token: string): void;
  /** The server refused the request and no login could fix it now. */
  onProblem(problem: LoginProblem): void;
  /** A request went through with a login (clears an earlier problem; not one of a token refused for its scope). */
  onAuthorized(): void;
}

/** Whether `hostname` names this machine (tokens go over plain http only there). */
function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '[::1]' || /^127(\.\d{1,3}){3}$/.test(h);
}

function withBearer(init: RequestInit | undefined, token: string | undefined): RequestInit {
  const headers = new Headers(init?.headers);
  if (token !== undefined) headers.set('Authorization', `Bearer ${token}`);
  return { ...init, headers };
}

/**
 * Wraps the transport's fetch for a shelf server with a login: each request carries the current
 * access token (read per request, so a refresh by another worker is picked up), and a 401 is
 * answered by one refresh and one retry before the server is reported as wanting a login. A server
 * without a login is called without a token: it may need none.
 */
export function loginFetch(
  inner: FetchLike,
  server: string,
  serverUrl: string,
  credentials: LoginCredentials,
  events: LoginFetchEvents,
): FetchLike {
  const url = new URL(serverUrl);
  const clear = url.protocol === 'http:' && !isLoopback(url.hostname);
  // The token a server refused for want of scope: requests it still lets through do not clear
  // that problem, since only a new login (another token) gives the access.
  let scopeDenied: string | undefined;
  const authorized = (token: string) => {
    if (token !== scopeDenied) events.onAuthorized();
  };
  const checkScope = async (response: Response, token: string | undefined): Promise<void> => {
    if (response.status !== 403 || token === undefined) return;
    const { error, scope } = extractWWWAuthenticateParams(response);
    if (error !== 'insufficient_scope') return;
    scopeDenied = token;
    events.onProblem(
      credentials.insufficientScope
        ? await credentials.insufficientScope(server, serverUrl, token, scope)
        : {
            kind: 'insufficient_scope',
            message: `wants more access (${scope ? `scope ${scope}` : 'the server named no scope'}): durable-mcp mcp login ${server}`,
          },
    );
  };
  return async (target, init) => {
    // Over plain http to another machine no token is sent, so none is looked up (or refreshed).
    const first: LoginToken = clear
      ? { problem: { kind: 'wanted', message: '' } }
      : await credentials.accessToken(server, serverUrl);
    let token = 'token' in first ? first.token : undefined;
    if (token !== undefined) events.onToken(token);
    let response = await inner(target, withBearer(init, token));
    if (response.status !== 401) {
      if (token !== undefined && response.ok) authorized(token);
      await checkScope(response, token);
      return response;
    }
    if (clear) {
      events.onProblem({
        kind: 'wanted',
        message: `wants an account, and its url is plain http to another machine: a token would cross the network readable; use an https:// url`,
      });
      return response;
    }
    // A server that moved to another authorization server refuses this login's tokens for good:
    // none is refreshed at the old one, and only a person's login at the new one helps.
    const challenge = extractWWWAuthenticateParams(response);
    const moved = await credentials.authorizationServerMoved?.(server, serverUrl, challenge.resourceMetadataUrl?.href);
    if (moved) {
      events.onProblem(moved);
      return response;
    }
    const again = await credentials.afterUnauthorized(server, serverUrl, token);
    if ('token' in again && again.token !== token) {
      await response.body?.cancel().catch(() => undefined);
      token = again.token;
      events.onToken(token);
      response = await inner(target, withBearer(init, token));
      if (response.status !== 401) {
        if (response.ok) authorized(token);
        await checkScope(response, token);
        return response;
      }
    }
    events.onProblem(
      'problem' in again
        ? again.problem
        : 'problem' in first
          ? first.problem
          : {
              kind: 'expired',
              message: `its login expired or was revoked: durable-mcp mcp login ${server}`,
            },
    );
    return response;
  };
}
