/** `durable-mcp mcp login`, `logout`, `rekey` and `client-metadata`: the logins of the shelf's remote servers. */
import type { ShelfOAuthClient } from '../../../contract/index.js';
import { isMachineGrant } from '../../../contract/shelf.js';
import type { ShelfClient } from '../../../plane/shelfClient.js';
import type { Settings } from '../../../settings/index.js';
import { commandSettings } from '../../common.js';
import { ShelfCommandError, print, printError, shelfCommand } from './shelfCommand.js';

/** The shelf entry of `server`, or a refusal naming what to do. */
async function remoteEntry(
  shelf: ShelfClient,
  server: string,
  turnKey: Buffer | undefined,
): Promise<{ url: string; oauth?: ShelfOAuthClient }> {
  const state = await shelf.read();
  const found = state.servers.find((s) => s.name === server);
  if (!found) throw new ShelfCommandError(`${server} is not on the shelf: durable-mcp mcp add ${server} <url> first`);
  if (found.entry.type === 'stdio')
    throw new ShelfCommandError(`${server} is a command, not a remote server: there is nothing to log in to`);
  // Whoever can send the shelf Updates could have put another address under this name: the
  // operator's browser is sent only to an address a holder of the turn key put there.
  const { verifyShelfServer } = await import('../../../plane/shelf.js');
  if (turnKey && !verifyShelfServer(turnKey, found)) {
    throw new ShelfCommandError(
      `${server} (${found.entry.url}) is not signed with this deployment's turn key, so no worker uses it; check the address, then put it back: durable-mcp mcp forget ${server} && durable-mcp mcp add ${server} <url>`,
    );
  }
  if (found.entry.url.includes('${')) {
    throw new ShelfCommandError(
      `${server}: its url ${found.entry.url} holds a variable that only the workers resolve; a login needs the address itself on the shelf`,
    );
  }
  return { url: found.entry.url, ...(found.entry.oauth ? { oauth: found.entry.oauth } : {}) };
}

export async function loginCli(
  server: string,
  address: string | undefined,
  opts: { browser: boolean; wait: boolean },
): Promise<void> {
  let found: { url: string; oauth?: ShelfOAuthClient; settings: Settings } | undefined;
  // The shelf is read and the connection closed before the login waits for the browser.
  await shelfCommand(true, async ({ shelf, settings, turnKey }) => {
    found = { ...(await remoteEntry(shelf, server, turnKey)), settings };
    return 0;
  });
  if (!found) return;
  if (isMachineGrant(found.oauth?.grant)) {
    const { machineLoginCommand } = await import('../../machineLogin.js');
    process.exitCode = await machineLoginCommand({
      server,
      serverUrl: found.url,
      client: { ...found.oauth, grant: found.oauth.grant },
      settings: found.settings,
      out: print,
      err: printError,
    });
    return;
  }
  const { loginCommand } = await import('../../login.js');
  process.exitCode = await loginCommand({
    server,
    serverUrl: found.url,
    settings: found.settings,
    out: print,
    err: printError,
    env: process.env,
    ...(found.oauth ? { client: found.oauth } : {}),
    ...(address !== undefined ? { redirect: address } : {}),
    ...(opts.browser ? {} : { noBrowser: true }),
    ...(opts.wait ? {} : { noWait: true }),
  });
}

export async function logoutCli(server: string): Promise<void> {
  const { logoutCommand } = await import('../../login.js');
  // No shelf needed: a login outlives a forgotten server until it is logged out.
  process.exitCode = await logoutCommand({ server, settings: commandSettings(), out: print, err: printError });
}

export async function rekeyCli(): Promise<void> {
  const { rekeyCommand } = await import('../../login.js');
  process.exitCode = await rekeyCommand({ settings: commandSettings(), out: print, err: printError });
}

/**
 * `mcp client-metadata`: the client ID metadata document to host at DMCP_OAUTH_CLIENT_METADATA_URL
 * (its `client_id` is that address; its redirect is this machine's callback port). Exit 1 when the
 * variable is not set.
 */
export async function clientMetadataCli(): Promise<void> {
  const settings = commandSettings();
  const url = settings.oauth.clientMetadataUrl;
  if (url === undefined) {
    process.stderr.write(
      'DMCP_OAUTH_CLIENT_METADATA_URL is not set: set it to the https address where you will host the document (https://example.com/durable-mcp/client.json), then run durable-mcp mcp client-metadata again\n',
    );
    process.exitCode = 1;
    return;
  }
  const { callbackUrl, clientMetadataFor } = await import('../../../plane/oauth.js');
  process.stdout.write(
    `${JSON.stringify(clientMetadataFor(callbackUrl(settings.oauth.callbackPort), url), null, 2)}\n`,
  );
}
