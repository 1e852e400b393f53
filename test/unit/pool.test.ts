import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pino from 'pino';
import type { LoadedConfig, ServerEntry } from '../../config/types.js';
import { ServerPool } from '../../mcp/pool.js';
import { isAlive, killGroups, lifecycleServer, readLines, tempDir, waitFor } from '../support/harness.js';
import { InMemoryServers, type InMemoryServer } from '../support/inMemoryServers.js';

/**
 * The pool without Temporal. Its logic (starts, retiring, idle stops, holds, listings) runs against
 * servers in this process ({@link InMemoryServers}); what is about processes (a crash) runs the
 * lifecycle fixture as a real process.
 */
function entry(name: string, ...args: string[]): ServerEntry {
  return {
    name,
    layer: 'inline',
    source: `--mcp #${name}`,
    trusted: true,
    type: 'stdio',
    command: process.execPath,
    args: [lifecycleServer, '--name', name, ...args],
    env: {},
    envFrom: {},
    headers: {},
    enabled: true,
  };
}

function config(hash: string, ...servers: ServerEntry[]): LoadedConfig {
  return { off: false, servers, refused: [], warnings: [], hash };
}

const pools: ServerPool[] = [];
const pids = new Set<number>();
/** A pool whose servers are real processes, or, given `servers`, servers in this process. */
function newPool(servers?: InMemoryServers): ServerPool {
  const pool = new ServerPool({
    logger: pino({ level: 'silent' }),
    environmentFor: () => ({ PATH: process.env.PATH ?? '' }),
    startTimeoutMs: 10_000,
    toolPrefix: 'mcp',
    ...(servers ? { connect: servers.connect } : {}),
  });
  pools.push(pool);
  return pool;
}
function pidOf(pool: ServerPool, session: string, name: string): number {
  const pid = pool.pids(session)[name];
  assert.ok(pid, `${name} has a PID`);
  pids.add(pid);
  return pid;
}

/**
 * The in-memory server serving `name` in the session now (what a PID says of a process): the newest
 * one started for it, still open, while the session has the server.
 */
function serving(
  pool: ServerPool,
  servers: InMemoryServers,
  session: string,
  name: string,
): InMemoryServer | undefined {
  if (!(name in pool.pids(session))) return undefined;
  const latest = servers.of(name).at(-1);
  return latest && !latest.closed ? latest : undefined;
}
function servingOf(pool: ServerPool, servers: InMemoryServers, session: string, name: string): InMemoryServer {
  const server = serving(pool, servers, session, name);
  assert.ok(server, `${name} is served`);
  return server;
}

after(async () => {
  await Promise.all(pools.map((p) => p.shutdown()));
  killGroups([...pids].filter(isAlive));
});

test('concurrent reconciliations of one session start each server once and both report it ready', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  const cfg = config('h1', entry('a'), entry('b'));
  const [s1, s2] = await Promise.all([
    pool.reconcile('s', cfg, { turnId: 't' }),
    pool.reconcile('s', cfg, { turnId: 't' }),
  ]);
  for (const status of [s1, s2])
    assert.deepEqual(
      status.servers.map((s) => `${s.name}:${s.state}`),
      ['a:ready', 'b:ready'],
    );
  assert.equal(servers.started.length, 2);
  servingOf(pool, servers, 's', 'a');
  servingOf(pool, servers, 's', 'b');
});

test('a config change does not cancel a call in flight: the replaced server stops when the call ends', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  await pool.reconcile('s', config('v1', entry('a')), { turnId: 't' });
  const old = servingOf(pool, servers, 's', 'a');
  const call = pool.callTool('s', 'a', 'sleep', { ms: 1500 }, { timeoutMs: 10_000, turnId: 't' });
  await new Promise((r) => setTimeout(r, 200));
  const status = await pool.reconcile('s', config('v2', entry('a', '--stderr', 'v2')), { turnId: 't' });
  assert.equal(status.servers[0]?.state, 'ready');
  assert.notEqual(servingOf(pool, servers, 's', 'a'), old, 'the new config runs in a new server');
  assert.ok(!old.closed, 'the old server still serves its call');
  const result = await call;
  assert.equal(result.isError, undefined);
  assert.deepEqual(result.content, [{ type: 'text', text: JSON.stringify({ slept: 1500 }) }]);
  assert.ok(await waitFor(() => old.closed, 5000), 'the old server stopped after its call');
});

test('stopIdle skips a session with a call in flight and stops it once idle', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  await pool.reconcile('s', config('v1', entry('a')), { turnId: 't' });
  const server = servingOf(pool, servers, 's', 'a');
  const call = pool.callTool('s', 'a', 'sleep', { ms: 500 }, { timeoutMs: 10_000, turnId: 't' });
  await pool.stopIdle(0, Date.now() + 60_000);
  assert.ok(!server.closed);
  await call;
  await pool.stopIdle(0, Date.now() + 60_000);
  assert.deepEqual(pool.pids('s'), {});
  assert.ok(await waitFor(() => server.closed, 5000));
});

test('a running server is listed again only when it said its tools changed, or when it restarted', async () => {
  const dir = await tempDir('dmcp-pool-');
  const lists = join(dir, 'lists.log');
  const pool = newPool();
  const cfg = config('v1', entry('a', '--list-log', lists));
  await pool.reconcile('s', cfg, { turnId: 't' });
  const pid = pidOf(pool, 's', 'a');
  await pool.reconcile('s', cfg, { turnId: 't' });
  await pool.reconcile('s', cfg, { turnId: 't' });
  assert.equal(
    (await readLines(lists)).length,
    1,
    'listed once, when it started; later reconciliations reuse that listing',
  );
  assert.ok(!pool.tools('s').some((t) => t.tool === 'added_1'));

  // add_tool sends notifications/tools/list_changed before it answers.
  await pool.callTool('s', 'a', 'add_tool', {}, { timeoutMs: 10_000, turnId: 't' });
  const status = await pool.reconcile('s', cfg, { turnId: 't' });
  assert.equal((await readLines(lists)).length, 2, 'listed again after list_changed');
  assert.ok(
    pool.tools('s').some((t) => t.name === 'mcp__a__added_1'),
    pool
      .tools('s')
      .map((t) => t.name)
      .join(', '),
  );
  assert.ok(status.servers[0]?.tools.includes('mcp__a__added_1'));
  assert.equal(pidOf(pool, 's', 'a'), pid, 'same process');
  await pool.reconcile('s', cfg, { turnId: 't' });
  assert.equal((await readLines(lists)).length, 2, 'the change was consumed by one listing');

  // A crashed server restarts, and the fresh process is listed.
  process.kill(pid, 'SIGKILL');
  assert.ok(await waitFor(() => pool.status('s').servers[0]?.state === 'failed', 5000), 'the crash was noticed');
  await pool.reconcile('s', cfg, { turnId: 't' });
  assert.notEqual(pidOf(pool, 's', 'a'), pid);
  assert.equal((await readLines(lists)).length, 3, 'the restarted server was listed');
  assert.ok(!pool.tools('s').some((t) => t.tool === 'added_1'), 'the new process has its own tools');
});

test('a reconcile with holdMs keeps an idle session for the hold; each call renews it; then it stops', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  const cfg = config('v1', entry('a'));
  await pool.reconcile('s', cfg, { holdMs: 2000, turnId: 't' });
  const server = servingOf(pool, servers, 's', 'a');
  const reconciled = Date.now();
  // Past the session idle time (300 ms), inside the hold.
  await pool.stopIdle(300, reconciled + 1000);
  assert.equal(serving(pool, servers, 's', 'a'), server, 'held past the session idle time');
  assert.ok(!server.closed);

  // A reconcile without a hold (another turn of the session) does not cut the hold short.
  await new Promise((r) => setTimeout(r, 400));
  await pool.reconcile('s', cfg, { turnId: 't' });
  await pool.stopIdle(300, reconciled + 1500);
  assert.equal(serving(pool, servers, 's', 'a'), server);

  // A call renews the hold from when it ends.
  await new Promise((r) => setTimeout(r, 400));
  await pool.callTool('s', 'a', 'whoami', {}, { timeoutMs: 10_000, turnId: 't' });
  const called = Date.now();
  await pool.stopIdle(300, called + 1700);
  assert.equal(serving(pool, servers, 's', 'a'), server, 'the call renewed the hold');

  await pool.stopIdle(300, called + 2100);
  assert.deepEqual(pool.pids('s'), {}, 'stopped once both the hold and the idle time are over');
  assert.ok(await waitFor(() => server.closed, 5000));
});

test('with the worker idle check running (session idle 300 ms), a 2 s hold keeps the servers, then they stop', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  await pool.reconcile('s', config('v1', entry('a')), { holdMs: 2000, turnId: 't' });
  const reconciled = Date.now();
  const server = servingOf(pool, servers, 's', 'a');
  const idleCheck = setInterval(() => void pool.stopIdle(300), 100);
  try {
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(serving(pool, servers, 's', 'a'), server, 'still held 1.2 s after the reconcile');
    const call = await pool.callTool('s', 'a', 'whoami', {}, { timeoutMs: 10_000, turnId: 't' });
    assert.deepEqual(
      call.content,
      [{ type: 'text', text: JSON.stringify({ name: 'a', id: server.id }) }],
      'the server kept its connection',
    );
    assert.ok(await waitFor(() => !('a' in pool.pids('s')), 5000), 'stopped after the hold');
    const stoppedAfter = Date.now() - reconciled;
    assert.ok(stoppedAfter >= 3100, `the call renewed the hold: stopped ${stoppedAfter} ms after the reconcile`);
    assert.ok(await waitFor(() => server.closed, 5000));
  } finally {
    clearInterval(idleCheck);
  }
});

test('a held session still stops by the session idle time when that ends later than the hold', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  await pool.reconcile('s', config('v1', entry('a')), { holdMs: 100, turnId: 't' });
  const server = servingOf(pool, servers, 's', 'a');
  await pool.stopIdle(5000, Date.now() + 1000);
  assert.equal(serving(pool, servers, 's', 'a'), server, 'the hold is over but the session idle time is not');
  await pool.stopIdle(5000, Date.now() + 6000);
  assert.deepEqual(pool.pids('s'), {});
});

test('without a hold, a session stops after the session idle time (real clock)', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  await pool.reconcile('s', config('v1', entry('a')), { turnId: 't' });
  const server = servingOf(pool, servers, 's', 'a');
  await new Promise((r) => setTimeout(r, 400));
  await pool.stopIdle(300);
  assert.deepEqual(pool.pids('s'), {});
  assert.ok(await waitFor(() => server.closed, 5000));
});

test('a tool carries the retry rule of its server entry when that is "safe" or "never"', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  await pool.reconcile(
    's',
    config(
      'v1',
      { ...entry('n'), retry: 'never' },
      { ...entry('y'), retry: 'safe' },
      { ...entry('u'), retry: 'auto' },
      entry('d'),
    ),
    { turnId: 't' },
  );
  const retryOf = (server: string) =>
    pool
      .tools('s')
      .filter((t) => t.server === server)
      .map((t) => t.retry);
  assert.deepEqual(new Set(retryOf('n')), new Set(['never']));
  assert.deepEqual(new Set(retryOf('y')), new Set(['safe']));
  for (const server of ['u', 'd']) {
    const tools = pool.tools('s').filter((t) => t.server === server);
    assert.ok(tools.length > 0);
    assert.ok(
      tools.every((t) => !('retry' in t)),
      `${server}: no retry field`,
    );
  }
  for (const name of ['n', 'y', 'u', 'd']) servingOf(pool, servers, 's', name);
});

test('reconcile after shutdown is refused and starts nothing', async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  await pool.shutdown();
  await assert.rejects(pool.reconcile('s', config('v1', entry('a')), { turnId: 't' }), /shutting down/);
  assert.deepEqual(pool.pids('s'), {});
  assert.equal(servers.started.length, 0);
});

test("a call is checked against the public name of a tool listed after the session's earlier calls", async () => {
  const servers = new InMemoryServers();
  const pool = newPool(servers);
  const cfg = config('v1', entry('a'));
  await pool.reconcile('s', cfg, { turnId: 't' });
  await pool.callTool('s', 'a', 'whoami', {}, { timeoutMs: 10_000, turnId: 't', publicName: 'mcp__a__whoami' });
  await assert.rejects(
    pool.callTool('s', 'a', 'whoami', {}, { timeoutMs: 10_000, turnId: 't', publicName: 'mcp__a__add_tool' }),
    /is not the name of tool "whoami" of server "a" \(that is mcp__a__whoami\)/,
  );
  await pool.callTool('s', 'a', 'add_tool', {}, { timeoutMs: 10_000, turnId: 't', publicName: 'mcp__a__add_tool' });
  await pool.reconcile('s', cfg, { turnId: 't' });
  assert.ok(
    pool.tools('s').some((t) => t.name === 'mcp__a__added_1'),
    'listed again',
  );
  // The names of the first listing would not know added_1, and let any name through for it.
  await assert.rejects(
    pool.callTool('s', 'a', 'added_1', {}, { timeoutMs: 10_000, turnId: 't', publicName: 'mcp__a__whoami' }),
    /that is mcp__a__added_1/,
  );
  const result = await pool.callTool(
    's',
    'a',
    'added_1',
    {},
    { timeoutMs: 10_000, turnId: 't', publicName: 'mcp__a__added_1' },
  );
  assert.match(JSON.stringify(result.content), /added_1/);
});
