/**
 * `durable-mcp mcp login <name>` for a machine login (a client with the client-credentials grant):
 * there is nothing to log in to, since the workers get their tokens by themselves. With the
 * client's variable set here, the grant is made once from this machine to test it, and the token
 * kept in the token store (the workers use it until it expires); without it, the command says how
 * the workers get their tokens. Nothing here prints a secret or a token.
 */
import { grantMachineTokens, MachineGrantError } from '../plane/machineGrant.js';
import {
  machineCredentialOf,
  machineMovedMessage,
  machinePinOf,
  machineProblemMessage,
  type MachineClient,
} from '../plane/machineLogin.js';
import { tokenStoreFromSettings, type TokenStore } from '../plane/tokenStore.js';
import type { Settings } from '../settings/index.js';

export interface MachineLoginOptions {
  server: string;
  serverUrl: string;
  client: MachineClient;
  settings: Settings;
  /** Where the client's variable is read; default process.env. */
  env?: NodeJS.ProcessEnv;
  out: (line: string) => void;
  err: (line: string) => void;
  fetch?: typeof fetch;
  store?: TokenStore;
}

/** Exit code 0 when the grant worked or was not tried (the variable is not set here), 1 when it was refused or not made (the server names another authorization server than the pinned one). */
export async function machineLoginCommand(opts: MachineLoginOptions): Promise<number> {
  const variable = opts.client.privateKeyEnv ?? opts.client.clientSecretEnv ?? '<VAR>';
  const what = opts.client.privateKeyEnv !== undefined ? 'private key' : 'client secret';
  const env = opts.env ?? process.env;
  const idJag = opts.client.grant === 'id_jag';
  const how = idJag
    ? `the workers exchange the user's ID token in ${opts.client.idTokenEnv} at ${opts.client.idpTokenEndpoint} for an ID-JAG and present it as client ${opts.client.clientId} with the client secret in ${variable} (both listed in their DMCP_MCP_ENV)`
    : `the workers get its tokens by the client-credentials grant, as client ${opts.client.clientId} with the ${what} in ${variable} (listed in their DMCP_MCP_ENV)`;
  const needed = idJag ? [variable, opts.client.idTokenEnv ?? '<VAR>'] : [variable];
  if (needed.some((v) => !env[v])) {
    opts.out(`${opts.server} needs no login: ${how}.`);
    opts.out(
      `To test the grant from here, set ${needed.join(' and ')} and run durable-mcp mcp login ${opts.server} again.`,
    );
    return 0;
  }
  const credential = machineCredentialOf(opts.client, env, false);
  if ('reason' in credential) {
    opts.err(`${opts.server}: ${credential.reason}`);
    return 1;
  }
  const base = opts.fetch ?? fetch;
  const store = opts.store ?? (await tokenStoreFromSettings(opts.settings));
  // What a 403 asked for since the last grant: this grant asks for it too.
  const current = await store.read(opts.server).catch(() => undefined);
  const wantedScope = current?.grant === opts.client.grant ? current.wantedScope : undefined;
  // A test grant from here is held to the workers' pin as well: only `mcp logout` lets go of it.
  const pinned = machinePinOf(current, opts.server, opts.serverUrl, opts.client);
  try {
    const record = await grantMachineTokens({
      server: opts.server,
      serverUrl: opts.serverUrl,
      client: opts.client,
      credential,
      fetch: (url, init) => base(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(15_000) }),
      now: Date.now(),
      ...(wantedScope ? { wantedScope } : {}),
      ...(pinned ? { pinned } : {}),
    });
    await store.withLock(opts.server, () => store.write(record));
    const expires =
      record.tokens.expiresAt !== undefined ? `, expires ${new Date(record.tokens.expiresAt).toISOString()}` : '';
    opts.out(
      `${opts.server}: the authorization server granted a token to client ${opts.client.clientId}${record.tokens.scope ? ` (scope ${record.tokens.scope})` : ''}${expires}; kept for the workers until then.`,
    );
    opts.out(`No login is needed: ${how}.`);
    return 0;
  } catch (err) {
    if (!(err instanceof MachineGrantError)) throw err;
    if (err.moved) {
      opts.err(`${opts.server}: ${machineMovedMessage(opts.server, err.moved)}`);
      return 1;
    }
    opts.err(
      `${opts.server}: ${machineProblemMessage(opts.server, opts.client, err.reason, err.refused, { variable: 'here and on the workers', url: opts.serverUrl }).replace(/; tried again next turn$/, '')}`,
    );
    return 1;
  }
}
