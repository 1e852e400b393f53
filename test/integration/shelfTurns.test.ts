/**
 * The shelf end to end: servers put on the shelf and granted to agents reach the agents' turns
 * through a real worker, and a remote shelf server's OAuth login (against a real OAuth-protected MCP
 * server, `test/fixtures/oauthServer.ts`) is used, refreshed and lost the way the operator expects:
 * a turn before login says "wants an account", after login its tools work, after expiry the token is
 * refreshed without a word to the model, another worker uses the same login, after logout it wants
 * an account again. The tokens never reach history, status, results or logs.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import { ShelfClient } from '../../plane/shelfClient.js';
import { logout } from '../../plane/logout.js';
import { callbackUrl, finishLogin, startLogin } from '../../plane/oauth.js';
import { tokenStoreFromSettings, type TokenStore } from '../../plane/tokenStore.js';
import { loadSettings } from '../../settings/index.js';
import { textOf } from '../support/content.js';
import { startOAuthFixture, serverIn, decodedData } from '../support/oauthFixture.js';
import {
  lifecycleEntry,
  runtimeLogs,
  startHarness,
  temporalAddress,
  startWorkerProcess,
  stopWorkerProcess,
  tempDir,
  workflowBundleFile,
  type Harness,
  type WorkerProcess,
} from '../support/harness.js';

interface Fixture {
  url: string;
  issuer: string;
  child: ChildProcess;
  stats(): Promise<{ refreshes: number; spentRefreshReuse: number; revocations: unknown[]; echoCalls: number }>;
}

async function startOAuthServer(env: NodeJS.ProcessEnv): Promise<Fixture> {
  return startOAuthFixture<Awaited<ReturnType<Fixture['stats']>>>(env);
}

/** A login as the operator makes it without a browser: start, follow the consent address, paste back where it ended. */
async function logIn(store: TokenStore, server: string, serverUrl: string): Promise<void> {
  const started = await startLogin({ store }, { server, serverUrl, redirectUrl: callbackUrl(8788) });
  const consent = await fetch(started.authorizationUrl, { redirect: 'manual' });
  assert.equal(consent.status, 302);
  await finishLogin({ store }, { server, redirectAddress: consent.headers.get('location')! });
}

describe('the shelf in turns: grants, logins, refresh, logout, forget', { timeout: 240_000 }, () => {
  let fx: Fixture;
  let h: Harness;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let turns: TurnClient;
  let shelf: ShelfClient;
  let store: TokenStore;
  let second: WorkerProcess | undefined;
  const tokensSeen = new Set<string>();
  const historyTexts: string[] = [];
  const statusTexts: string[] = [];

  async function noteTokens(): Promise<void> {
    const record = await store.read('docs');
    for (const t of [record?.tokens.access_token, record?.tokens.refresh_token]) if (t) tokensSeen.add(t);
  }

  async function keepHistory(turnId: string): Promise<void> {
    const history = await turns.client.workflow.getHandle(turnId).fetchHistory();
    const json = JSON.stringify(historyToJSON(history));
    historyTexts.push(json, ...decodedData(JSON.parse(json)));
  }

  before(async () => {
    fx = await startOAuthServer({ OAUTH_FIXTURE_TOKEN_TTL: '3' });
    dataDir = join(await tempDir('dmcp-shelf-turns-'), 'data');
    env = { DMCP_DATA_DIR: dataDir };
    h = await startHarness('shelf-turns', env);
    const turnKey = await ensureTurnKey(dataDir);
    turns = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey });
    shelf = new ShelfClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey, by: 'test' });
    store = await tokenStoreFromSettings(loadSettings({ ...env }));
    await shelf.add('docs', { type: 'http', url: fx.url }, { agent: 'agent-a' });
    await shelf.add('files', { type: 'stdio', ...lifecycleEntry('files') }, { agent: 'agent-a' });
  });

  after(async () => {
    await stopWorkerProcess(second);
    await h?.stop();
    fx?.child.kill();
  });

  test('agent A gets its shelf servers, agent B none; before login the remote one wants an account', async () => {
    const b = await turns.startTurn({ sessionId: 'shelf-b', agent: 'agent-b' });
    assert.deepEqual(
      b.status.servers.map((s) => s.name),
      [],
    );
    assert.deepEqual(b.tools, []);
    await b.end();

    const a = await turns.startTurn({ sessionId: 'shelf-a', agent: 'agent-a' });
    const docs = serverIn(a.status, 'docs');
    assert.equal(docs.layer, 'shelf');
    assert.equal(docs.state, 'failed');
    assert.equal(docs.login, 'wanted');
    assert.equal(docs.error, 'wants an account first: durable-mcp mcp login docs');
    assert.match(
      a.serversParagraph,
      /- docs: not available until its operator logs in: wants an account first: durable-mcp mcp login docs/,
    );
    assert.equal(serverIn(a.status, 'files').state, 'ready');
    assert.ok(a.tools.some((t) => t.name === 'mcp__files__whoami'));
    assert.ok(!a.tools.some((t) => t.name.startsWith('mcp__docs__')));
    statusTexts.push(JSON.stringify(a.status), a.serversParagraph);
    await a.end();
    await keepHistory(a.turnId);
  });

  test('after login the tools are listed and a call works; after expiry the token is refreshed without a word to the model', async () => {
    await logIn(store, 'docs', fx.url);
    await noteTokens();
    const turn = await turns.startTurn({ sessionId: 'shelf-a', agent: 'agent-a' });
    const docs = serverIn(turn.status, 'docs');
    assert.equal(docs.state, 'ready', docs.error);
    assert.equal(docs.login, undefined);
    assert.ok(turn.tools.some((t) => t.name === 'mcp__docs__echo'));
    const first = await turn.callTool({ id: 'c1', name: 'mcp__docs__echo', arguments: { text: 'before expiry' } });
    assert.equal(first.status, 'ok');
    assert.equal(textOf(first.content?.[0]), 'before expiry');

    const refreshesBefore = (await fx.stats()).refreshes;
    await sleep(3_500); // the fixture's access tokens live 3 s
    const second = await turn.callTool({ id: 'c2', name: 'mcp__docs__echo', arguments: { text: 'after expiry' } });
    assert.equal(second.status, 'ok', JSON.stringify(second));
    assert.equal(textOf(second.content?.[0]), 'after expiry');
    assert.ok((await fx.stats()).refreshes > refreshesBefore, 'the expired token was not refreshed');
    // A server that sends its caller's token back gets it scrubbed before it reaches history, also
    // a token refreshed during the call itself (the access token expired again before it).
    await sleep(3_500);
    const echoed = await turn.callTool({ id: 'c3', name: 'mcp__docs__whoami', arguments: {} });
    assert.equal(echoed.status, 'ok', JSON.stringify(echoed));
    assert.equal(textOf(echoed.content?.[0]), 'you are [redacted]');
    await noteTokens();
    statusTexts.push(JSON.stringify(turn.status), turn.serversParagraph, JSON.stringify([first, second, echoed]));
    await turn.end();
    await keepHistory(turn.turnId);
  });

  test('another worker process uses the same login (and refreshes it) once the first is gone', async () => {
    second = await startWorkerProcess(h.taskQueue, await workflowBundleFile(dataDir), {
      ...env,
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_NO_USER_CONFIG: '1',
      HOME: process.env.HOME,
    });
    await h.worker.shutdown();
    await sleep(3_500); // let the access token expire again: the new worker must refresh it
    const turn = await turns.startTurn({ sessionId: 'shelf-a2', agent: 'agent-a' });
    assert.equal(turn.workerQueue, second.workerQueue);
    assert.equal(serverIn(turn.status, 'docs').state, 'ready', serverIn(turn.status, 'docs').error);
    const outcome = await turn.callTool({
      id: 'w2',
      name: 'mcp__docs__echo',
      arguments: { text: 'from the second worker' },
    });
    assert.equal(outcome.status, 'ok', JSON.stringify(outcome));
    assert.equal((await fx.stats()).spentRefreshReuse, 0, 'a rotated refresh token was spent twice');
    await noteTokens();
    await turn.end();
    await keepHistory(turn.turnId);
  });

  test("forget takes a server off A's next turn without cancelling its call in flight", async () => {
    const turn = await turns.startTurn({ sessionId: 'shelf-a2', agent: 'agent-a' });
    const slow = turn.callTool({ id: 's1', name: 'mcp__files__sleep', arguments: { ms: 2500 } });
    await sleep(500);
    const forgot = await shelf.forget('files');
    assert.deepEqual(forgot.agents, ['agent-a']);
    const outcome = await slow;
    assert.equal(outcome.status, 'ok', JSON.stringify(outcome));
    await turn.end();
    const next = await turns.startTurn({ sessionId: 'shelf-a2', agent: 'agent-a' });
    assert.ok(!next.status.servers.some((s) => s.name === 'files'));
    assert.ok(!next.tools.some((t) => t.name.startsWith('mcp__files__')));
    await next.end();
  });

  test('after logout the server wants an account again, and the tokens were revoked', async () => {
    const result = await logout({ store }, 'docs');
    assert.equal(result.deleted, true);
    assert.ok(result.revoked.length > 0, JSON.stringify(result));
    assert.ok((await fx.stats()).revocations.length > 0, 'the authorization server saw no revocation');
    const turn = await turns.startTurn({ sessionId: 'shelf-a2', agent: 'agent-a' });
    const docs = serverIn(turn.status, 'docs');
    assert.equal(docs.state, 'failed');
    assert.equal(docs.login, 'wanted');
    statusTexts.push(JSON.stringify(turn.status), turn.serversParagraph);
    await turn.end();
    await keepHistory(turn.turnId);
  });

  test('a login the authorization server revoked is named as such, with what to do', async () => {
    await logIn(store, 'docs', fx.url);
    await noteTokens();
    assert.equal((await fetch(new URL('/admin/revoke-all', fx.issuer), { method: 'POST' })).status, 200);
    await sleep(3_500); // past the access token's life: the worker must refresh, and the refresh is refused
    const turn = await turns.startTurn({ sessionId: 'shelf-revoked', agent: 'agent-a' });
    const docs = serverIn(turn.status, 'docs');
    assert.equal(docs.state, 'failed');
    assert.equal(docs.login, 'expired');
    assert.equal(docs.error, 'its login expired or was revoked: durable-mcp mcp login docs');
    statusTexts.push(JSON.stringify(turn.status), turn.serversParagraph);
    await turn.end();
    await keepHistory(turn.turnId);
  });

  test('no token reached history, status, results or logs', () => {
    assert.ok(tokensSeen.size >= 3, `expected the first tokens and refreshed ones, saw ${tokensSeen.size}`);
    const places: Record<string, string[]> = {
      history: historyTexts,
      status: statusTexts,
      logs: h.logs,
      sdkLogs: runtimeLogs,
    };
    for (const token of tokensSeen) {
      for (const [where, texts] of Object.entries(places)) {
        assert.ok(!texts.some((t) => t.includes(token)), `a token (${token.slice(0, 6)}...) appears in ${where}`);
      }
    }
  });
});
