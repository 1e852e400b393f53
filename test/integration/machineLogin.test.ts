/**
 * Machine logins end to end: shelf servers whose entries name a client with the client-credentials
 * grant, against a real OAuth-protected MCP server (`test/fixtures/oauthServer.ts`) and a real
 * worker. A turn calls their tools with no login step (the worker makes the grant, with a secret
 * over HTTP Basic or with a `private_key_jwt` assertion), gets new tokens after expiry and after a
 * 401, and a wrong secret or a variable the worker may not read is a status saying what to fix.
 * The secrets and tokens never reach history, status or logs.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import { ShelfClient } from '../../plane/shelfClient.js';
import { createTokenStore, tokenStoreFromSettings, type TokenStore } from '../../plane/tokenStore.js';
import { machineLoginCommand } from '../../cli/machineLogin.js';
import { randomBytes } from 'node:crypto';
import { loadSettings } from '../../settings/index.js';
import { textOf } from '../support/content.js';
import { runtimeLogs, startHarness, tempDir, type Harness } from '../support/harness.js';
import { startOAuthFixture, serverIn, decodedData } from '../support/oauthFixture.js';

interface Stats {
  clientCredentials: { method: string; scope: string | null; resource: string | null }[];
  refusedClientCredentials: number;
  refreshes: number;
  registrations: number;
  authorizations: number;
}

async function startOAuthServer(
  env: NodeJS.ProcessEnv,
): Promise<{ url: string; issuer: string; child: ChildProcess; stats(): Promise<Stats> }> {
  return startOAuthFixture<Stats>(env);
}

const SECRET = 'fleet-secret-4711-abcdef';
const WRONG = 'not-the-fleet-secret-9f8e';
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
/** A line of the key's body: what would show if the key leaked anywhere. */
const KEY_LINE = PRIVATE_PEM.split('\n')[1]!;

describe('machine logins (client credentials) in turns', { timeout: 180_000 }, () => {
  let fx: Awaited<ReturnType<typeof startOAuthServer>>;
  let h: Harness;
  let turns: TurnClient;
  let store: TokenStore;
  const tokensSeen = new Set<string>();
  const historyTexts: string[] = [];
  const statusTexts: string[] = [];

  async function noteTokens(): Promise<void> {
    for (const server of ['basic', 'jwt']) {
      const t = (await store.read(server))?.tokens.access_token;
      if (t) tokensSeen.add(t);
    }
  }

  async function keepHistory(turnId: string): Promise<void> {
    const json = JSON.stringify(historyToJSON(await turns.client.workflow.getHandle(turnId).fetchHistory()));
    historyTexts.push(json, ...decodedData(JSON.parse(json)));
  }

  before(async () => {
    fx = await startOAuthServer({
      OAUTH_FIXTURE_TOKEN_TTL: '3',
      OAUTH_FIXTURE_CC_CLIENT: `fleet:${SECRET}`,
      OAUTH_FIXTURE_CC_KEY_CLIENT: 'fleet-key',
      OAUTH_FIXTURE_CC_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    const dataDir = join(await tempDir('dmcp-machine-login-'), 'data');
    const env = {
      DMCP_DATA_DIR: dataDir,
      FLEET_SECRET: SECRET,
      FLEET_KEY: PRIVATE_PEM,
      WRONG_SECRET: WRONG,
      DMCP_MCP_ENV: 'FLEET_SECRET,FLEET_KEY,WRONG_SECRET',
    };
    h = await startHarness('machine-login', env);
    const turnKey = await ensureTurnKey(dataDir);
    turns = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey });
    const shelf = new ShelfClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey, by: 'test' });
    store = await tokenStoreFromSettings(loadSettings({ DMCP_DATA_DIR: dataDir }));
    const agent = { agent: 'fleet' };
    await shelf.add(
      'basic',
      {
        type: 'http',
        url: fx.url,
        oauth: { clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', grant: 'client_credentials' },
      },
      agent,
    );
    await shelf.add(
      'jwt',
      {
        type: 'http',
        url: fx.url,
        oauth: { clientId: 'fleet-key', privateKeyEnv: 'FLEET_KEY', grant: 'client_credentials' },
      },
      agent,
    );
    await shelf.add(
      'wrong',
      {
        type: 'http',
        url: fx.url,
        oauth: { clientId: 'fleet', clientSecretEnv: 'WRONG_SECRET', grant: 'client_credentials' },
      },
      agent,
    );
    await shelf.add(
      'unlisted',
      {
        type: 'http',
        url: fx.url,
        oauth: { clientId: 'fleet', clientSecretEnv: 'NOT_LISTED', grant: 'client_credentials' },
      },
      agent,
    );
  });

  after(async () => {
    await h?.stop();
    fx?.child.kill();
  });

  test('a turn calls the tools with no login step: a grant with the secret (Basic) and one with a signed JWT, each asking for the resource and scope', async () => {
    const turn = await turns.startTurn({ sessionId: 'machine-1', agent: 'fleet' });
    statusTexts.push(JSON.stringify(turn.status), turn.serversParagraph);
    for (const name of ['basic', 'jwt']) {
      const s = serverIn(turn.status, name);
      assert.equal(s.state, 'ready', s.error);
      assert.equal(s.login, undefined);
      const outcome = await turn.callTool({
        id: `${name}-1`,
        name: `mcp__${name}__echo`,
        arguments: { text: `from ${name}` },
      });
      assert.equal(outcome.status, 'ok', JSON.stringify(outcome));
      assert.equal(textOf(outcome.content?.[0]), `from ${name}`);
    }
    const stats = await fx.stats();
    assert.deepEqual([...new Set(stats.clientCredentials.map((c) => c.method))].sort(), [
      'client_secret_basic',
      'private_key_jwt',
    ]);
    for (const grant of stats.clientCredentials) {
      assert.equal(grant.resource, fx.url);
      assert.equal(grant.scope, 'mcp:tools');
    }
    assert.equal(
      stats.registrations + stats.authorizations + stats.refreshes,
      0,
      'no registration, browser step or refresh',
    );
    assert.equal((await store.read('basic'))?.grant, 'client_credentials', 'the token is kept in the token store');
    await noteTokens();
    await turn.end();
    await keepHistory(turn.turnId);
  });

  test('after expiry, and after a 401, a new grant (no refresh token): the calls go on', async () => {
    const turn = await turns.startTurn({ sessionId: 'machine-1', agent: 'fleet' });
    const before = (await fx.stats()).clientCredentials.length;
    await sleep(3_500); // the fixture's access tokens live 3 s
    const expired = await turn.callTool({ id: 'e1', name: 'mcp__basic__echo', arguments: { text: 'after expiry' } });
    assert.equal(expired.status, 'ok', JSON.stringify(expired));
    assert.ok((await fx.stats()).clientCredentials.length > before, 'no new grant after expiry');
    await noteTokens();
    assert.equal((await fetch(new URL('/admin/revoke-all', fx.issuer), { method: 'POST' })).status, 200);
    const afterRevoke = (await fx.stats()).clientCredentials.length;
    const refused = await turn.callTool({ id: 'r1', name: 'mcp__jwt__echo', arguments: { text: 'after a 401' } });
    assert.equal(refused.status, 'ok', JSON.stringify(refused));
    assert.equal(textOf(refused.content?.[0]), 'after a 401');
    assert.ok((await fx.stats()).clientCredentials.length > afterRevoke, 'no new grant after the 401');
    assert.equal((await fx.stats()).refreshes, 0);
    await noteTokens();
    statusTexts.push(JSON.stringify(turn.status), turn.serversParagraph, JSON.stringify([expired, refused]));
    await turn.end();
    await keepHistory(turn.turnId);
  });

  test('a wrong secret and a variable the worker may not read: the status says what to fix', async () => {
    const turn = await turns.startTurn({ sessionId: 'machine-2', agent: 'fleet' });
    const wrong = serverIn(turn.status, 'wrong');
    assert.equal(wrong.state, 'failed');
    assert.equal(wrong.login, 'refresh_failed');
    assert.match(
      wrong.error ?? '',
      /^the authorization server refused its client credentials \(the token endpoint answered HTTP 401 invalid_client\): check WRONG_SECRET on the workers, or put the server back with the right client: durable-mcp mcp forget wrong, then durable-mcp mcp add wrong <url> --client-credentials --client-id fleet --client-secret-env WRONG_SECRET; tried again next turn$/,
    );
    const unlisted = serverIn(turn.status, 'unlisted');
    assert.equal(unlisted.state, 'failed');
    assert.equal(
      unlisted.error,
      'could not get a token by the client-credentials grant (its client secret is read from NOT_LISTED, which this worker may not read: list it in DMCP_MCP_ENV); tried again next turn',
    );
    assert.match(turn.serversParagraph, /- wrong: not available this turn: .*refused its client credentials/);
    assert.ok((await fx.stats()).refusedClientCredentials >= 1);
    statusTexts.push(JSON.stringify(turn.status), turn.serversParagraph);
    await turn.end();
    await keepHistory(turn.turnId);
  });

  test('no secret, key or token reached history, status or logs', () => {
    assert.ok(tokensSeen.size >= 3, `expected several tokens, saw ${tokensSeen.size}`);
    const places: Record<string, string[]> = {
      history: historyTexts,
      status: statusTexts,
      logs: h.logs,
      sdkLogs: runtimeLogs,
    };
    for (const secret of [SECRET, WRONG, KEY_LINE, ...tokensSeen]) {
      for (const [where, texts] of Object.entries(places)) {
        assert.ok(!texts.some((t) => t.includes(secret)), `a secret (${secret.slice(0, 6)}...) appears in ${where}`);
      }
    }
  });
});

describe('mcp login on a machine login', { timeout: 60_000 }, () => {
  test('without the variable here: no login needed; with it: a test grant (client_secret_post where only that is offered), kept for the workers; refused: what to fix', async () => {
    const fx = await startOAuthServer({
      OAUTH_FIXTURE_CC_CLIENT: `fleet:${SECRET}`,
      OAUTH_FIXTURE_CC_METHODS: 'client_secret_post',
    });
    try {
      const dir = join(await tempDir('dmcp-machine-cli-'), 'oauth');
      const store = createTokenStore({ dir, key: randomBytes(32) });
      const settings = loadSettings({ DMCP_DATA_DIR: join(dir, '..', 'data') });
      const client = { clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', grant: 'client_credentials' as const };
      const run = async (env: NodeJS.ProcessEnv) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await machineLoginCommand({
          server: 'docs',
          serverUrl: fx.url,
          client,
          settings,
          env,
          store,
          out: (l) => out.push(l),
          err: (l) => err.push(l),
        });
        return { code, out, err };
      };
      const unset = await run({});
      assert.deepEqual(unset, {
        code: 0,
        err: [],
        out: [
          'docs needs no login: the workers get its tokens by the client-credentials grant, as client fleet with the client secret in FLEET_SECRET (listed in their DMCP_MCP_ENV).',
          'To test the grant from here, set FLEET_SECRET and run durable-mcp mcp login docs again.',
        ],
      });
      assert.equal(await store.read('docs'), undefined);

      const granted = await run({ FLEET_SECRET: SECRET });
      assert.equal(granted.code, 0, granted.err.join('\n'));
      assert.match(
        granted.out[0]!,
        /^docs: the authorization server granted a token to client fleet \(scope mcp:tools\), expires \d{4}-.*Z; kept for the workers until then\.$/,
      );
      const record = (await store.read('docs'))!;
      assert.equal(record.grant, 'client_credentials');
      assert.equal(record.tokens.refresh_token, undefined);
      assert.ok(!JSON.stringify(record).includes(SECRET), 'the login file holds no client secret');
      assert.deepEqual((await fx.stats()).clientCredentials, [
        { method: 'client_secret_post', scope: 'mcp:tools', resource: fx.url },
      ]);

      const wrong = await run({ FLEET_SECRET: WRONG });
      assert.equal(wrong.code, 1);
      assert.deepEqual(wrong.err, [
        `docs: the authorization server refused its client credentials (the token endpoint answered HTTP 401 invalid_client): check FLEET_SECRET here and on the workers, or put the server back with the right client: durable-mcp mcp forget docs, then durable-mcp mcp add docs ${fx.url} --client-credentials --client-id fleet --client-secret-env FLEET_SECRET`,
      ]);
      assert.ok(
        ![...granted.out, ...wrong.err].some(
          (l) => l.includes(SECRET) || l.includes(WRONG) || l.includes(record.tokens.access_token),
        ),
      );
    } finally {
      fx.child.kill();
    }
  });
});
