import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pino from 'pino';
import type { LoadedConfig, ServerEntry } from '../../config/types.js';
import type { LayerKind } from '../../contract/index.js';
import { ServerPool } from '../../mcp/pool.js';
import {
  isAlive,
  killGroups,
  lifecycleServer,
  processesInGroups,
  readLines,
  tempDir,
  waitFor,
} from '../support/harness.js';

/** Warm spares against real fixture processes, without Temporal. */
function entry(name: string, layer: LayerKind, ...args: string[]): ServerEntry {
  const trusted = layer === 'configDir' || layer === 'explicit' || layer === 'inline';
  return {
    name,
    layer,
    source: `${layer}:${name}`,
    trusted,
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

/** A pool keeping `warmSpares` per entry, refilled at once; `token` is what an `envFrom` resolves to. */
function newPool(warmSpares = 1, token = { value: 'one' }): ServerPool {
  const pool = new ServerPool({
    logger: pino({ level: 'silent' }),
    environmentFor: (e) => ({
      PATH: process.env.PATH ?? '',
      ...e.env,
      ...(Object.keys(e.envFrom).length > 0 ? { SERVER_TOKEN: token.value } : {}),
    }),
    startTimeoutMs: 10_000,
    toolPrefix: 'mcp',
    // Untrusted entries run unsandboxed here (no bwrap needed), so only trust keeps them from spares.
    untrustedStdio: { mode: 'allow', hiddenPaths: [] },
    warmSpares,
    spareDelayMs: 0,
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

async function spares(pool: ServerPool, name: string): Promise<number[]> {
  await pool.sparesSettled();
  const found = pool.sparePids()[name] ?? [];
  for (const pid of found) pids.add(pid);
  return found;
}

async function startedPids(log: string): Promise<number[]> {
  return (await readLines(log)).map((l) => (JSON.parse(l) as { pid: number }).pid);
}

after(async () => {
  await Promise.all(pools.map((p) => p.shutdown()));
  killGroups([...pids].filter(isAlive));
});

for (const layer of ['configDir', 'explicit', 'inline'] as const) {
  test(`a new session takes the warm spare of a ${layer} entry: a process started before its turn`, async () => {
    const dir = await tempDir('dmcp-spares-');
    const log = join(dir, 'starts.log');
    const pool = newPool();
    const cfg = config('v1', entry('a', layer, '--start-log', log));
    await pool.reconcile('s1', cfg, { turnId: 't' });
    const first = pidOf(pool, 's1', 'a');
    const [spare] = await spares(pool, 'a');
    assert.ok(spare && spare !== first, "a spare runs besides the session's server");
    const startedBefore = await startedPids(log);
    assert.deepEqual(startedBefore, [first, spare]);

    const status = await pool.reconcile('s2', cfg, { turnId: 't' });
    assert.equal(status.servers[0]?.state, 'ready');
    assert.equal(pidOf(pool, 's2', 'a'), spare, 'the second session got the spare');
    assert.equal(pidOf(pool, 's1', 'a'), first, 'the first session kept its own');
    const call = await pool.callTool('s2', 'a', 'whoami', {}, { timeoutMs: 10_000, turnId: 't' });
    assert.deepEqual(call.content, [{ type: 'text', text: JSON.stringify({ name: 'a', pid: spare }) }]);
    assert.ok(status.servers[0]?.tools.includes('mcp__a__whoami'), 'the spare came with its listing');

    // Handed out means gone from the spares; a new one is started in the background.
    const [next] = await spares(pool, 'a');
    assert.ok(next && next !== spare && next !== first);
    assert.deepEqual(await startedPids(log), [first, spare, next], 'the turn of s2 itself started nothing');
    await pool.reconcile('s3', cfg, { turnId: 't' });
    assert.equal(pidOf(pool, 's3', 'a'), next);
  });
}

for (const layer of ['workspace', 'plugin'] as const) {
  test(`a ${layer} entry never gets a spare, even when it runs unsandboxed`, async () => {
    const dir = await tempDir('dmcp-spares-');
    const log = join(dir, 'starts.log');
    const pool = newPool(2);
    const cfg = config('v1', entry('u', layer, '--start-log', log));
    await pool.reconcile('s1', cfg, { turnId: 't' });
    const first = pidOf(pool, 's1', 'u');
    assert.deepEqual(await spares(pool, 'u'), []);
    await pool.reconcile('s2', cfg, { turnId: 't' });
    const second = pidOf(pool, 's2', 'u');
    assert.notEqual(second, first);
    await pool.sparesSettled();
    assert.deepEqual(await startedPids(log), [first, second], "only the sessions' own servers ever started");
  });
}

test("a config change discards the old entry's spares; the new entry gets its own", async () => {
  const pool = newPool();
  await pool.reconcile('s1', config('v1', entry('a', 'configDir')), { turnId: 't' });
  const [old] = await spares(pool, 'a');
  assert.ok(old);
  await pool.reconcile('s1', config('v2', entry('a', 'configDir', '--stderr', 'v2')), { turnId: 't' });
  assert.ok(await waitFor(() => !isAlive(old), 5000), 'the spare of the old entry stopped');
  const [fresh] = await spares(pool, 'a');
  assert.ok(fresh && fresh !== old);
  await pool.reconcile('s2', config('v2', entry('a', 'configDir', '--stderr', 'v2')), { turnId: 't' });
  assert.equal(pidOf(pool, 's2', 'a'), fresh);

  // Another session still on the old entry keeps it in use: its spares stay.
  await pool.reconcile('x1', config('w1', entry('b', 'configDir')), { turnId: 't' });
  await pool.reconcile('x2', config('w1', entry('b', 'configDir')), { turnId: 't' });
  const [b] = await spares(pool, 'b');
  assert.ok(b);
  await pool.reconcile('x1', config('w2', entry('b', 'configDir', '--stderr', 'w2')), { turnId: 't' });
  await pool.sparesSettled();
  assert.ok(isAlive(b) && (pool.sparePids().b ?? []).includes(b), 'x2 still uses the old entry');
});

test('a spare started with another envFrom value is not handed out', async () => {
  const token = { value: 'one' };
  const pool = newPool(1, token);
  const cfg = config('v1', { ...entry('a', 'configDir'), envFrom: { SERVER_TOKEN: 'WORKER_TOKEN' } });
  await pool.reconcile('s1', cfg, { turnId: 't' });
  const [spare] = await spares(pool, 'a');
  assert.ok(spare);
  token.value = 'two';
  await pool.reconcile('s2', cfg, { turnId: 't' });
  assert.notEqual(pidOf(pool, 's2', 'a'), spare, 'a server of the new value was started instead');
  await pool.reconcile('s3', config('v1', entry('a', 'configDir')), { turnId: 't' });
  assert.notEqual(pidOf(pool, 's3', 'a'), spare, 'nor does an entry without envFrom match it');
});

test('a spare that died is not handed out', async () => {
  const pool = newPool();
  const cfg = config('v1', entry('a', 'explicit'));
  await pool.reconcile('s1', cfg, { turnId: 't' });
  const [spare] = await spares(pool, 'a');
  assert.ok(spare);
  process.kill(spare, 'SIGKILL');
  const status = await pool.reconcile('s2', cfg, { turnId: 't' });
  assert.equal(status.servers[0]?.state, 'ready');
  const got = pidOf(pool, 's2', 'a');
  assert.notEqual(got, spare);
  const call = await pool.callTool('s2', 'a', 'whoami', {}, { timeoutMs: 10_000, turnId: 't' });
  assert.deepEqual(call.content, [{ type: 'text', text: JSON.stringify({ name: 'a', pid: got }) }]);
});

test('spares of an entry no session uses stop after the session idle time, not before', async () => {
  const pool = newPool();
  const cfg = config('v1', entry('a', 'configDir'));
  await pool.reconcile('s1', cfg, { turnId: 't' });
  const [spare] = await spares(pool, 'a');
  assert.ok(spare);
  await pool.stopIdle(60_000);
  assert.ok(isAlive(spare), 'the session is live, so its entry is in use');
  await pool.stopSession('s1');
  await pool.stopIdle(60_000);
  assert.ok(isAlive(spare) && pool.sparePids().a?.includes(spare), 'unused for less than the idle time');
  await pool.stopIdle(60_000, Date.now() + 61_000);
  assert.deepEqual(pool.sparePids(), {});
  assert.ok(await waitFor(() => !isAlive(spare), 5000));
});

test('shutdown stops every spare, one still starting included, and leaves no process', async () => {
  const dir = await tempDir('dmcp-spares-');
  const log = join(dir, 'starts.log');
  const pool = newPool(2);
  const cfg = config('v1', entry('slow', 'inline', '--start-log', log, '--sleep-before-handshake', '1500'));
  await pool.reconcile('s1', cfg, { turnId: 't' });
  // The spares have spawned (each logs its start) but are still before their handshake.
  assert.ok(await waitFor(async () => (await readLines(log)).length === 3, 5000));
  const all = await startedPids(log);
  for (const pid of all) pids.add(pid);
  assert.deepEqual(pool.sparePids(), {}, 'none is ready yet');
  await pool.shutdown();
  assert.ok(await waitFor(() => all.every((pid) => !isAlive(pid)), 5000), 'no spare outlived the pool');
  assert.deepEqual(processesInGroups(all), []);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await readLines(log)).length, 3, 'nothing was started after shutdown');
});

test('with 0 spares nothing extra ever starts', async () => {
  const dir = await tempDir('dmcp-spares-');
  const log = join(dir, 'starts.log');
  const pool = newPool(0);
  const cfg = config('v1', entry('a', 'configDir', '--start-log', log));
  await pool.reconcile('s1', cfg, { turnId: 't' });
  await pool.reconcile('s2', cfg, { turnId: 't' });
  await pool.sparesSettled();
  assert.equal((await readLines(log)).length, 2);
  assert.deepEqual(pool.sparePids(), {});
  pidOf(pool, 's1', 'a');
  pidOf(pool, 's2', 'a');
});
