/**
 * Scope step-up against the project's OAuth fixture (`OAUTH_FIXTURE_WRITE_SCOPE=1`: its `write`
 * tool needs `mcp:write`, which the first login is not given): the refused call is a tool error
 * the model reads, naming the command, sent once; the status, the servers paragraph and the login
 * record say the login wants more access; the next login asks for the granted and the challenged
 * scopes together, and then the call goes through.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import { ShelfClient } from '../../plane/shelfClient.js';
import { callbackUrl, finishLogin, startLogin } from '../../plane/oauth.js';
import { tokenStoreFromSettings, type TokenStore } from '../../plane/tokenStore.js';
import { loadSettings } from '../../settings/index.js';
import { textOf } from '../support/content.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';
import { startOAuthFixture, serverIn } from '../support/oauthFixture.js';

interface Fixture {
  url: string;
  child: ChildProcess;
  stats(): Promise<{ scopeRefusals: number; authorizations: number }>;
}

async function startOAuthServer(env: NodeJS.ProcessEnv): Promise<Fixture> {
  return startOAuthFixture<Awaited<ReturnType<Fixture['stats']>>>(env);
}

/** A paste-back login; the scope the authorization address asked for. */
async function logIn(store: TokenStore, server: string, serverUrl: string): Promise<string | null> {
  const started = await startLogin({ store }, { server, serverUrl, redirectUrl: callbackUrl(8788) });
  const consent = await fetch(started.authorizationUrl, { redirect: 'manual' });
  assert.equal(consent.status, 302);
  await finishLogin({ store }, { server, redirectAddress: consent.headers.get('location')! });
  return new URL(started.authorizationUrl).searchParams.get('scope');
}

const WANTS = 'wants more access (scope mcp:tools mcp:write): durable-mcp mcp login docs';

describe(
  'scope step-up: a 403 insufficient_scope marks the login and widens the next one',
  { timeout: 180_000 },
  () => {
    let fx: Fixture;
    let h: Harness;
    let turns: TurnClient;
    let store: TokenStore;

    before(async () => {
      fx = await startOAuthServer({ OAUTH_FIXTURE_WRITE_SCOPE: '1' });
      const dataDir = join(await tempDir('dmcp-step-up-'), 'data');
      const env = { DMCP_DATA_DIR: dataDir };
      h = await startHarness('step-up', env);
      const turnKey = await ensureTurnKey(dataDir);
      turns = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey });
      const shelf = new ShelfClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey, by: 'test' });
      store = await tokenStoreFromSettings(loadSettings({ ...env }));
      await shelf.add('docs', { type: 'http', url: fx.url }, { agent: 'agent-a' });
    });

    after(async () => {
      await h?.stop();
      fx?.child.kill();
    });

    test('the refused call is a tool error naming the command; status, paragraph and record say so; the next login asks for both scopes', async () => {
      assert.equal(await logIn(store, 'docs', fx.url), 'mcp:tools');
      const first = await turns.startTurn({ sessionId: 'step-up', agent: 'agent-a' });
      assert.equal(serverIn(first.status, 'docs').state, 'ready');
      const refused = await first.callTool({ id: 'w1', name: 'mcp__docs__write', arguments: { text: 'x' } });
      assert.equal(refused.status, 'ok', JSON.stringify(refused));
      assert.equal(refused.isError, true);
      assert.equal(textOf(refused.content?.[0]), `docs refused this call, so it did not run: its login ${WANTS}`);
      assert.equal((await fx.stats()).scopeRefusals, 1, 'the refused call was sent again');
      // The rest of the server still works with the same login, and does not clear the mark.
      const echoed = await first.callTool({ id: 'e1', name: 'mcp__docs__echo', arguments: { text: 'still here' } });
      assert.equal(textOf(echoed.content?.[0]), 'still here');
      await first.end();
      assert.equal((await store.read('docs'))?.wantedScope, 'mcp:tools mcp:write');

      const second = await turns.startTurn({ sessionId: 'step-up', agent: 'agent-a' });
      const docs = serverIn(second.status, 'docs');
      assert.equal(docs.state, 'degraded');
      assert.equal(docs.login, 'insufficient_scope');
      assert.deepEqual(docs.warnings, [`its login ${WANTS}`]);
      assert.match(
        second.serversParagraph,
        /- docs: connected, .*warning: its login wants more access \(scope mcp:tools mcp:write\): durable-mcp mcp login docs$/,
      );
      await second.end();

      // The union of what was granted and what the server asked for.
      assert.equal(await logIn(store, 'docs', fx.url), 'mcp:tools mcp:write');
      assert.equal((await store.read('docs'))?.wantedScope, undefined);
      const third = await turns.startTurn({ sessionId: 'step-up', agent: 'agent-a' });
      const after = serverIn(third.status, 'docs');
      assert.equal(after.state, 'ready');
      assert.equal(after.login, undefined);
      const written = await third.callTool({ id: 'w2', name: 'mcp__docs__write', arguments: { text: 'y' } });
      assert.equal(written.isError, false, JSON.stringify(written));
      assert.equal(textOf(written.content?.[0]), 'wrote y');
      assert.equal((await fx.stats()).scopeRefusals, 1);
      await third.end();
    });
  },
);
