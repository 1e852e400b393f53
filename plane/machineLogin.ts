/**
 * Machine logins: a shelf server whose entry names a client with `grant: client_credentials` (or
 * `id_jag`) gets its tokens from the workers themselves, with no person and no `mcp login`. The
 * client authenticates with a secret (`client_secret_basic`, or `client_secret_post` where the
 * authorization server offers only that) or with a JWT signed with its private key
 * (`private_key_jwt`, RFC 7523); both are read from worker variables, never stored. This file
 * reads those credentials, keeps the stored token while it is good, makes a new grant
 * (`machineGrant.ts`) under the server's lock when it is not, and says what to fix when none can be had.
 */
import { createPrivateKey } from 'node:crypto';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from 'pino';
import type { LoginToken } from '../mcp/login.js';
import { mcpEnvEntries } from '../settings/index.js';
import { sameServerUrl } from '../text/sameUrl.js';
import {
  authorizationServerPinOf,
  grantMachineTokens,
  MachineGrantError,
  machineLoginId,
  type AuthorizationServerPin,
  type MachineCredential,
  type MachineMove,
} from './machineGrant.js';
import type { MachineClient } from './shelfMachineClient.js';
import { refreshDue, shortReason } from './tokens.js';
import type { LoginRecord, StoredTokens, TokenStore } from './tokenStore.js';

export type { MachineClient };

/** The flags that put a machine login on the shelf, for messages that say how to fix one. */
export function machineAddCommand(server: string, url: string, client: MachineClient): string {
  if (client.grant === 'id_jag') {
    return `durable-mcp mcp add ${server} ${url} --id-jag --client-id ${client.clientId} --client-secret-env ${client.clientSecretEnv ?? '<VAR>'} --idp-token-endpoint ${client.idpTokenEndpoint ?? '<URL>'} --idp-client-id ${client.idpClientId ?? '<ID>'} --id-token-env ${client.idTokenEnv ?? '<VAR>'}`;
  }
  const how =
    client.privateKeyEnv !== undefined
      ? `--private-key-env ${client.privateKeyEnv}${client.signingAlgorithm ? ` --signing-algorithm ${client.signingAlgorithm}` : ''}`
      : `--client-secret-env ${client.clientSecretEnv ?? '<VAR>'}`;
  return `durable-mcp mcp add ${server} ${url} --client-credentials --client-id ${client.clientId} ${how}`;
}

const CURVE_ALGORITHMS: Record<string, string> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };

/**
 * The private key as PKCS#8 PEM (what the SDK's signer imports), and the algorithm to sign with:
 * the one given, else the key's own (RS256 for RSA, PS256 for RSA-PSS, ES256/384/512 by curve).
 * A key kept in a one-line variable with `\n` escapes is read too.
 * @throws Error saying what is wrong with the key (never quoting it).
 */
export function privateKeyOf(text: string, algorithm: string | undefined): { privateKey: string; algorithm: string } {
  const pem = text.includes('\n') ? text : text.replace(/\\n/g, '\n');
  let key;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new Error('it does not hold a private key in PEM (-----BEGIN PRIVATE KEY----- ...)');
  }
  const type = key.asymmetricKeyType;
  const own =
    type === 'rsa'
      ? 'RS256'
      : type === 'rsa-pss'
        ? 'PS256'
        : type === 'ec'
          ? CURVE_ALGORITHMS[key.asymmetricKeyDetails?.namedCurve ?? '']
          : undefined;
  const chosen = algorithm ?? own;
  if (!chosen)
    throw new Error(
      `its ${type ?? 'unknown'} key has no signing algorithm here; use an RSA or EC (P-256, P-384, P-521) key`,
    );
  const family = chosen.startsWith('ES') ? 'ec' : 'rsa';
  if (family !== (type === 'ec' ? 'ec' : 'rsa')) throw new Error(`it holds a ${type} key, which cannot sign ${chosen}`);
  return { privateKey: key.export({ type: 'pkcs8', format: 'pem' }).toString(), algorithm: chosen };
}

/**
 * The client's secret or key from `env`. On a worker (`listed`) the variable must be one its
 * DMCP_MCP_ENV lists, like every secret a server gets from a worker.
 */
export function machineCredentialOf(
  client: MachineClient,
  env: NodeJS.ProcessEnv,
  listed: boolean,
): MachineCredential | { reason: string } {
  const variable = client.privateKeyEnv ?? client.clientSecretEnv;
  const what = client.privateKeyEnv !== undefined ? 'private key' : 'client secret';
  if (variable === undefined) return { reason: 'its machine login names neither a secret nor a private key' };
  const allowed = !listed || mcpEnvEntries(env).includes(variable);
  const value = allowed ? env[variable] : undefined;
  if (!value)
    return {
      reason: `its ${what} is read from ${variable}, which ${listed ? 'this worker' : 'this process'} ${allowed ? 'does not have: set it' : 'may not read: list it in DMCP_MCP_ENV'}`,
    };
  if (client.privateKeyEnv === undefined) {
    if (client.grant !== 'id_jag') return { clientSecret: value };
    const idVariable = client.idTokenEnv ?? '';
    const idAllowed = !listed || mcpEnvEntries(env).includes(idVariable);
    const idToken = idAllowed ? env[idVariable] : undefined;
    if (!idToken)
      return {
        reason: `its ID token is read from ${idVariable}, which ${listed ? 'this worker' : 'this process'} ${idAllowed ? "does not have: set it to the user's ID token from the identity provider" : 'may not read: list it in DMCP_MCP_ENV'}`,
      };
    return { clientSecret: value, idToken: idToken.trim() };
  }
  try {
    return privateKeyOf(value, client.signingAlgorithm);
  } catch (err) {
    return { reason: `${variable}: ${(err as Error).message}` };
  }
}

/**
 * What the status says when a machine login's server names another authorization server than
 * the one it was pinned to, and how an operator who expected the move re-pins it.
 */
export function machineMovedMessage(server: string, moved: Pick<MachineMove, 'what' | 'from' | 'to'>): string {
  return (
    `its ${moved.what} moved from ${moved.from} to ${moved.to}, where its client credentials are not sent (only to where its first grant was made): ` +
    `if the move is expected, durable-mcp mcp logout ${server}; the next grant is then made at the new one and kept to it`
  );
}

/** What the status says when a machine login has no token to give, naming what to fix. */
export function machineProblemMessage(
  server: string,
  client: MachineClient,
  reason: string,
  refused: boolean,
  where = { variable: 'on the workers', url: '<url>' },
): string {
  const variable = client.privateKeyEnv ?? client.clientSecretEnv;
  if (client.grant === 'id_jag' && reason.startsWith('the identity provider refused'))
    return `${reason}; tried again next turn`;
  if (refused) {
    return `the authorization server refused its client credentials (${reason}): check ${variable} ${where.variable}, or put the server back with the right client: durable-mcp mcp forget ${server}, then ${machineAddCommand(server, where.url, client)}; tried again next turn`;
  }
  return `could not get a token by the ${client.grant === 'id_jag' ? 'cross-app access (ID-JAG)' : 'client-credentials'} grant (${reason}); tried again next turn`;
}

export interface MachineTokenDeps {
  store: TokenStore;
  logger: Logger;
  /** The worker's environment: the client's secret or key, from a variable DMCP_MCP_ENV lists. */
  env: NodeJS.ProcessEnv;
  fetch: FetchLike;
  now: () => number;
  /** Renew when the access token expires within this many milliseconds. */
  marginMs: number;
  /** Every token value seen, for scrubbing. */
  remember(server: string, tokens: StoredTokens): void;
}

/** Whether `record` holds tokens of this machine client for this address (and not some earlier login). */
function machineRecordFits(
  record: LoginRecord | undefined,
  server: string,
  serverUrl: string,
  client: MachineClient,
): record is LoginRecord {
  return (
    record !== undefined &&
    record.grant === client.grant &&
    record.loginId === machineLoginId(server, client) &&
    sameServerUrl(record.serverUrl, serverUrl) &&
    !record.dead
  );
}

/**
 * The pin of this machine client's login at this address: the authorization server its first
 * grant was made at, kept with every later grant's record. A login of another client or address
 * (an operator's new entry) pins afresh; `mcp logout` deletes the record, and with it the pin.
 */
export function machinePinOf(
  record: LoginRecord | undefined,
  server: string,
  serverUrl: string,
  client: MachineClient,
): AuthorizationServerPin | undefined {
  return machineRecordFits(record, server, serverUrl, client) ? authorizationServerPinOf(record.discovery) : undefined;
}

/**
 * A machine login's access token: the stored one while it is good, else a new grant. `stale` is a
 * token the server refused (a 401): it is not given again. The grant runs under the server's lock
 * and the record is read again inside it, so workers sharing the token folder make one grant, not
 * one each.
 */
export async function machineToken(
  deps: MachineTokenDeps,
  server: string,
  serverUrl: string,
  client: MachineClient,
  stale?: string,
): Promise<LoginToken> {
  const answer = (r: LoginRecord): LoginToken => ({ token: r.tokens.access_token, loginId: r.loginId });
  const problem = (reason: string, refused: boolean): LoginToken => ({
    problem: { kind: 'refresh_failed', message: machineProblemMessage(server, client, reason, refused) },
  });
  const usable = (r: LoginRecord, margin: number) =>
    r.tokens.access_token !== stale && !refreshDue(r.tokens, margin, deps.now());
  // Without the lock first: a good token needs none.
  const current = await deps.store.read(server);
  if (machineRecordFits(current, server, serverUrl, client) && usable(current, deps.marginMs)) {
    deps.remember(server, current.tokens);
    return answer(current);
  }
  return deps.store.withLock(server, async () => {
    const record = await deps.store.read(server);
    const fits = machineRecordFits(record, server, serverUrl, client);
    if (fits) {
      deps.remember(server, record.tokens);
      if (usable(record, deps.marginMs)) return answer(record);
    }
    // A token not yet expired still serves while a new one cannot be had.
    const fallback = fits && usable(record, 0) ? record : undefined;
    const credential = machineCredentialOf(client, deps.env, true);
    if ('reason' in credential) {
      deps.logger.warn({ server, grant: client.grant, reason: credential.reason }, 'cannot make the machine grant');
      return fallback ? answer(fallback) : problem(credential.reason, false);
    }
    let next: LoginRecord;
    const pinned = machinePinOf(record, server, serverUrl, client);
    try {
      next = await grantMachineTokens({
        server,
        serverUrl,
        client,
        credential,
        fetch: deps.fetch,
        now: deps.now(),
        ...(fits && record.wantedScope ? { wantedScope: record.wantedScope } : {}),
        ...(pinned ? { pinned } : {}),
      });
    } catch (err) {
      if (err instanceof MachineGrantError && err.moved && fits) {
        deps.logger.warn(
          { server, grant: client.grant, from: err.moved.from, to: err.moved.to },
          'the server names another authorization server than the machine login is pinned to: no grant made there',
        );
        if (record.movedTo !== err.moved.to) await deps.store.write({ ...record, movedTo: err.moved.to });
        return fallback
          ? answer(fallback)
          : { problem: { kind: 'moved', message: machineMovedMessage(server, err.moved) } };
      }
      const reason =
        err instanceof MachineGrantError
          ? err.reason
          : shortReason(
              err,
              'clientSecret' in credential
                ? [credential.clientSecret, ...(credential.idToken ? [credential.idToken] : [])]
                : [],
            );
      deps.logger.warn({ server, grant: client.grant, reason }, 'the machine grant failed');
      return fallback ? answer(fallback) : problem(reason, err instanceof MachineGrantError && err.refused);
    }
    deps.remember(server, next.tokens);
    await deps.store.write(next);
    deps.logger.info(
      { server, grant: client.grant, loginId: next.loginId, expiresAt: next.tokens.expiresAt },
      'obtained a token by the machine grant',
    );
    return answer(next);
  });
}
