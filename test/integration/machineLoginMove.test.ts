/**
 * A machine login whose server moves to another authorization server, end to end: the project's
 * OAuth fixture with a second authorization server (`OAUTH_FIXTURE_SECOND_AS=1`) that takes the
 * same client, a real worker and the commands an operator runs. The first grant pins the first
 * server; after the move neither the 401 of a token still valid nor the grant a new token needs
 * sends the client secret to the second one, the status and `mcp login` say it moved and what to
 * run; `mcp logout` lets go of the pin, after which the grant is made at the second server and
 * the turn works again. The secret never reaches a status or the logs.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import { ShelfClient } from '../../plane/shelfClient.js';
import { tokenStoreFromSettings, type TokenStore } from '../../plane/tokenStore.js';
import { machineLoginCommand } from '../../cli/machineLogin.js';
import { logoutCommand } from '../../cli/login.js';
import { loadSettings, type Settings } from '../../settings/index.js';
import { textOf } from '../support/content.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';
import { startOAuthFixture, serverIn, type OAuthFixture } from '../support/oauthFixture.js';

interface Stats {
  clientCredentials: { method: string }[];
  as2TokenRequests: { grantType: string | null; credentials: string[] }[];
}

const SECRET = 'fleet-secret-pinned-5150-abc';
const client = { clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', grant: 'client_credentials' as const };

describe('a machine login whose server moves to another authorization server', { timeout: 180_000 }, () => {
  let fx: OAuthFixture<Stats>;
  let as2: string;
  let h: Harness;
  let turns: TurnClient;
  let store: TokenStore;
  let settings: Settings;
  const statusTexts: string[] = [];

  async function cliLogin(): Promise<{ code: number; out: string[]; err: string[] }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await machineLoginCommand({
      server: 'docs',
      serverUrl: fx.url,
      client,
      settings,
      env: { FLEET_SECRET: SECRET },
      store,
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    statusTexts.push(...out, ...err);
    return { code, out, err };
  }

  async function turnStatus(sessionId: string) {
    const turn = await turns.startTurn({ sessionId, agent: 'fleet' });
    statusTexts.push(JSON.stringify(turn.status), turn.serversParagraph);
    return turn;
  }

  before(async () => {
    fx = await startOAuthFixture<Stats>({ OAUTH_FIXTURE_SECOND_AS: '1', OAUTH_FIXTURE_CC_CLIENT: `fleet:${SECRET}` });
    as2 = fx.printed.as2!;
    const dataDir = join(await tempDir('dmcp-machine-move-'), 'data');
    h = await startHarness('machine-move', {
      DMCP_DATA_DIR: dataDir,
      FLEET_SECRET: SECRET,
      DMCP_MCP_ENV: 'FLEET_SECRET',
    });
    const turnKey = await ensureTurnKey(dataDir);
    turns = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey });
    settings = loadSettings({ DMCP_DATA_DIR: dataDir });
    store = await tokenStoreFromSettings(settings);
    const shelf = new ShelfClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey, by: 'test' });
    await shelf.add('docs', { type: 'http', url: fx.url, oauth: client }, { agent: 'fleet' });
  });

  after(async () => {
    await h?.stop();
    fx?.child.kill();
  });

  test('pinned at the first grant; after the move nothing goes to the new server and the status says so; mcp logout re-pins', async () => {
    const first = await turnStatus('move-1');
    assert.equal(serverIn(first.status, 'docs').state, 'ready', serverIn(first.status, 'docs').error);
    assert.equal(
      textOf(
        (await first.callTool({ id: 'e1', name: 'mcp__docs__echo', arguments: { text: 'at the first' } })).content?.[0],
      ),
      'at the first',
    );
    await first.end({ endSession: true });
    assert.equal((await fx.stats()).clientCredentials.length, 1);

    assert.deepEqual(await (await fetch(new URL('/admin/move-as', fx.issuer), { method: 'POST' })).json(), {
      moved: true,
    });
    const moved = `its authorization server moved from ${fx.issuer} to ${as2}, where its client credentials are not sent (only to where its first grant was made): if the move is expected, durable-mcp mcp logout docs; the next grant is then made at the new one and kept to it`;

    // Its token is still good here, and refused by the server: the 401 finds the move.
    const during = await turnStatus('move-2');
    const docs = serverIn(during.status, 'docs');
    assert.equal(docs.state, 'failed');
    assert.equal(docs.login, 'moved');
    assert.equal(docs.error, moved);
    await during.end({ endSession: true });

    // Its token expired here: a new one needs a grant, which the pin refuses.
    const record = (await store.read('docs'))!;
    await store.write({ ...record, tokens: { ...record.tokens, expiresAt: Date.now() - 1 } });
    const expired = await turnStatus('move-3');
    assert.equal(serverIn(expired.status, 'docs').login, 'moved');
    assert.equal(serverIn(expired.status, 'docs').error, moved);
    // The paragraph quotes 200 characters at most: the move and where come first.
    assert.ok(
      expired.serversParagraph.includes(
        `- docs: not available until its operator logs in: its authorization server moved from ${fx.issuer} to ${as2}, where its client credentials are not sent`,
      ),
      expired.serversParagraph,
    );
    await expired.end({ endSession: true });

    const refused = await cliLogin();
    assert.deepEqual(refused, { code: 1, out: [], err: [`docs: ${moved}`] });
    assert.deepEqual((await fx.stats()).as2TokenRequests, [], 'the new server got no token request, so no secret');

    // The fixture's first server does not revoke for a machine client (exit 1 says so); the pin goes all the same.
    const out: string[] = [];
    await logoutCommand({ server: 'docs', settings, store, out: (l) => out.push(l), err: () => undefined });
    assert.ok(out.includes('docs: logged out; the login is deleted for every worker.'), out.join('\n'));
    assert.equal(await store.read('docs'), undefined);
    const repinned = await cliLogin();
    assert.equal(repinned.code, 0, repinned.err.join('\n'));
    assert.equal((await store.read('docs'))?.discovery.authorizationServerMetadata?.issuer, as2);
    const again = await turnStatus('move-4');
    assert.equal(serverIn(again.status, 'docs').state, 'ready', serverIn(again.status, 'docs').error);
    assert.equal(
      textOf(
        (await again.callTool({ id: 'e2', name: 'mcp__docs__echo', arguments: { text: 'at the second' } }))
          .content?.[0],
      ),
      'at the second',
    );
    await again.end({ endSession: true });
    assert.equal((await fx.stats()).as2TokenRequests.length, 1, 'one grant at the new server, after the logout');
    for (const text of [...statusTexts, ...h.logs])
      assert.ok(!text.includes(SECRET), 'the secret appears in a status or log');
  });
});
