import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pino from 'pino';
import type { LoadedConfig, ServerEntry } from '../../config/types.js';
import { ServerPool } from '../../mcp/pool.js';
import { isAlive, killGroups, lifecycleServer, readLines, tempDir, waitFor } from '../support/harness.js';

/** The pool against real fixture processes, without Temporal. */
function entry(name: string, ...args: string[]): ServerEntry {
  return {
    name, layer: 'inline', source: `--mcp #${name}`, trusted: true, type: 'stdio', command: process.execPath,
    args: [lifecycleServer, '--name', name, ...args], env: {}, envFrom: {}, headers: {}, enabled: true,
  };
}

function config(hash: string, ...servers: ServerEntry[]): LoadedConfig {
  return { off: false, servers, refused: [], warnings: [], hash };
}

const pools: ServerPool[] = [];
const pids = new Set<number>();
function newPool(): ServerPool {
  const pool = new ServerPool({
    logger: pino({ level: 'silent' }),
    environmentFor: () => ({ PATH: process.env.PATH ?? '' }),
    startTimeoutMs: 10_000,
    toolPrefix: 'mcp',
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

after(async () => {
  await Promise.all(pools.map((p) => p.shutdown()));
  killGroups([...pids].filter(isAlive));
});

test('concurrent reconciliations of one session start each server once and both report it ready', async () => {
  const dir = await tempDir('dmcp-pool-');
  const log = join(dir, 'starts.log');
  const pool = newPool();
  const cfg = config('h1', entry('a', '--start-log', log), entry('b', '--start-log', log));
  const [s1, s2] = await Promise.all([pool.reconcile('s', cfg), pool.reconcile('s', cfg)]);
  for (const status of [s1, s2]) assert.deepEqual(status.servers.map((s) => `${s.name}:${s.state}`), ['a:ready', 'b:ready']);
  assert.equal((await readLines(log)).length, 2);
  pidOf(pool, 's', 'a');
  pidOf(pool, 's', 'b');
});

test('a config change does not cancel a call in flight: the replaced server stops when the call ends', async () => {
  const pool = newPool();
  await pool.reconcile('s', config('v1', entry('a')));
  const old = pidOf(pool, 's', 'a');
  const call = pool.callTool('s', 'a', 'sleep', { ms: 1500 }, { timeoutMs: 10_000 });
  await new Promise((r) => setTimeout(r, 200));
  const status = await pool.reconcile('s', config('v2', entry('a', '--stderr', 'v2')));
  assert.equal(status.servers[0]?.state, 'ready');
  assert.notEqual(pidOf(pool, 's', 'a'), old, 'the new config runs in a new process');
  assert.ok(isAlive(old), 'the old process still serves its call');
  const result = await call;
  assert.equal(result.isError, undefined);
  assert.deepEqual(result.content, [{ type: 'text', text: JSON.stringify({ slept: 1500 }) }]);
  assert.ok(await waitFor(() => !isAlive(old), 5000), 'the old process stopped after its call');
});

test('stopIdle skips a session with a call in flight and stops it once idle', async () => {
  const pool = newPool();
  await pool.reconcile('s', config('v1', entry('a')));
  const pid = pidOf(pool, 's', 'a');
  const call = pool.callTool('s', 'a', 'sleep', { ms: 500 }, { timeoutMs: 10_000 });
  await pool.stopIdle(0, Date.now() + 60_000);
  assert.ok(isAlive(pid));
  await call;
  await pool.stopIdle(0, Date.now() + 60_000);
  assert.deepEqual(pool.pids('s'), {});
  assert.ok(await waitFor(() => !isAlive(pid), 5000));
});

test('reconcile after shutdown is refused and starts nothing', async () => {
  const pool = newPool();
  await pool.shutdown();
  await assert.rejects(pool.reconcile('s', config('v1', entry('a'))), /shutting down/);
  assert.deepEqual(pool.pids('s'), {});
});
