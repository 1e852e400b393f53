/**
 * A server that moves to another authorization server (SEP-2352), against the project's OAuth
 * fixture with a second authorization server (`OAUTH_FIXTURE_SECOND_AS=1`), through the commands an
 * operator runs: after the move the old login's token, still valid, gets 401 "authorization server
 * has changed"; the next turn's status, its servers paragraph and `mcp list` say where the server
 * moved and what to run, with no refresh tried at the old server; the next `mcp login` registers at
 * the new server and never presents the old server's client there; then the turn works.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { tokenStoreFromSettings, type TokenStore } from '../../plane/tokenStore.js';
import { loadSettings } from '../../settings/index.js';
import { textOf } from '../support/content.js';
import { runCli, startHarness, temporalAddress, tempDir, type Harness } from '../support/harness.js';
import { startOAuthFixture, serverIn } from '../support/oauthFixture.js';

interface Stats {
  registrations: number;
  refreshes: number;
  refusedRefresh: number;
  as2Registrations: number;
  as2Authorizations: number;
  foreignClientAtAs2: number;
}

interface Fixture {
  url: string;
  issuer: string;
  as2: string;
  child: ChildProcess;
  stats(): Promise<Stats>;
  moveToSecond(): Promise<void>;
}

async function startOAuthServer(): Promise<Fixture> {
  const fx = await startOAuthFixture<Stats>({ OAUTH_FIXTURE_SECOND_AS: '1' });
  return {
    ...fx,
    as2: fx.printed.as2!,
    moveToSecond: async () => {
      const res = await fetch(new URL('/admin/move-as', fx.issuer), { method: 'POST' });
      assert.deepEqual(await res.json(), { moved: true });
    },
  };
}

describe('a server that moves to another authorization server', { timeout: 240_000 }, () => {
  let fx: Fixture;
  let h: Harness;
  let turns: TurnClient;
  let store: TokenStore;
  let env: NodeJS.ProcessEnv;
  const mcp = (...args: string[]) => runCli(['mcp', ...args], env);

  /** `mcp login --no-wait`, the authorization address opened (the fixture consents at once), the address it ends on pasted back; the authorization address. */
  async function logIn(): Promise<URL> {
    const started = await mcp('login', 'docs', '--no-wait', '--no-browser');
    assert.equal(started.code, 0, started.stderr);
    const address = /^\s+(https?:\/\/\S+)$/m.exec(started.stdout)?.[1];
    assert.ok(address, started.stdout);
    const consent = await fetch(address, { redirect: 'manual' });
    assert.equal(consent.status, 302);
    const finished = await mcp('login', 'docs', consent.headers.get('location')!);
    assert.equal(finished.code, 0, finished.stderr);
    return new URL(address);
  }

  async function listRow(): Promise<string> {
    const list = await mcp('list');
    assert.equal(list.code, 0, list.stderr);
    return list.stdout.split('\n').find((l) => l.startsWith('docs ')) ?? '';
  }

  before(async () => {
    fx = await startOAuthServer();
    const dataDir = await tempDir('dmcp-as-move-');
    const settings = loadSettings({ DMCP_DATA_DIR: dataDir });
    h = await startHarness('as-move', { DMCP_DATA_DIR: dataDir }, { dataConverter: dataConverterFor(settings) });
    const turnKey = await ensureTurnKey(dataDir);
    turns = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey });
    store = await tokenStoreFromSettings(settings);
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_TASK_QUEUE: h.taskQueue,
      DMCP_DATA_DIR: dataDir,
      DMCP_NO_USER_CONFIG: '1',
    };
    const added = await mcp('add', 'docs', fx.url, '--agent', 'agent-a');
    assert.equal(added.code, 0, added.stderr);
  });

  after(async () => {
    await h?.stop();
    fx?.child.kill();
  });

  test('the status and mcp list say where it moved; the next login registers there, presenting nothing of the old one; then the turn works', async () => {
    const first = await logIn();
    assert.equal(first.origin, new URL(fx.issuer).origin);
    const as1Client = (await store.read('docs'))!.client.client_id;
    const before = await turns.startTurn({ sessionId: 'as-move', agent: 'agent-a' });
    assert.equal(serverIn(before.status, 'docs').state, 'ready');
    assert.equal(
      textOf(
        (await before.callTool({ id: 'e1', name: 'mcp__docs__echo', arguments: { text: 'at the first' } }))
          .content?.[0],
      ),
      'at the first',
    );
    await before.end({ endSession: true });

    await fx.moveToSecond();
    const moved = `its authorization server moved to ${fx.as2}: durable-mcp mcp login docs`;
    const during = await turns.startTurn({ sessionId: 'as-move-2', agent: 'agent-a' });
    const docs = serverIn(during.status, 'docs');
    assert.equal(docs.state, 'failed');
    assert.equal(docs.login, 'moved');
    assert.equal(docs.error, moved);
    assert.ok(during.serversParagraph.includes(moved), during.serversParagraph);
    await during.end({ endSession: true });
    assert.equal((await store.read('docs'))?.movedTo, fx.as2);
    const stats = await fx.stats();
    assert.equal(stats.refreshes + stats.refusedRefresh, 0, 'no refresh was tried at the old server');
    assert.match(await listRow(), new RegExp(`\\s${moved.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+agent-a$`));

    const second = await logIn();
    assert.equal(second.origin, new URL(fx.as2).origin, 'the login went to the new server');
    assert.notEqual(second.searchParams.get('client_id'), as1Client);
    const record = (await store.read('docs'))!;
    assert.equal(record.movedTo, undefined);
    assert.equal(record.discovery.authorizationServerUrl, fx.as2);
    const after = await turns.startTurn({ sessionId: 'as-move-3', agent: 'agent-a' });
    assert.equal(serverIn(after.status, 'docs').state, 'ready');
    assert.equal(
      textOf(
        (await after.callTool({ id: 'e2', name: 'mcp__docs__echo', arguments: { text: 'at the second' } }))
          .content?.[0],
      ),
      'at the second',
    );
    await after.end({ endSession: true });
    assert.match(await listRow(), /\slogged in\s+agent-a$/);

    const end = await fx.stats();
    assert.equal(end.as2Registrations, 1, 'registered at the new server');
    assert.equal(end.as2Authorizations, 1);
    assert.equal(end.foreignClientAtAs2, 0, "the old server's client was never presented at the new one");
    assert.equal(end.registrations, 1, 'registered once at the old server, and not again');
  });
});
