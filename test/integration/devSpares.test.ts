/**
 * `durable-mcp dev` keeps one warm spare per trusted stdio server by default: after a session
 * started a server, a started spare of it waits, and the next new session gets that process
 * instead of spawning one. With DMCP_WARM_SPARES=0 it keeps none.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { TurnClient } from '../../client/turnClient.js';
import { fixtureServer, killGroups, startDevProcess, waitFor, waitUntil, type DevProcess } from '../support/harness.js';

const started: ChildProcess[] = [];

after(async () => {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  }
  await Promise.all(
    started.map((c) =>
      c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : undefined,
    ),
  );
  killGroups(started.map((c) => c.pid!));
});

/** PIDs of the fixture server processes under `root` (its descendants), from /proc. */
function fixtureProcessesUnder(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone while listing.
    }
  }
  const under = (pid: number): boolean => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === root) return true;
    return false;
  };
  return [...parent.keys()].filter((pid) => {
    try {
      return under(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(fixtureServer);
    } catch {
      return false;
    }
  });
}

function startDev(env: NodeJS.ProcessEnv): Promise<DevProcess> {
  return startDevProcess(
    'dmcp-dev-spares-',
    () => env,
    (child) => started.push(child),
  );
}

/** Starts and ends a one-call turn of a new session; the PID of its fixture server. */
async function sessionServerPid(client: TurnClient, dataDir: string, name: string): Promise<number> {
  const turn = await client.startTurn({ sessionId: `${name}-${Date.now()}`, workspace: dataDir });
  const pid = turn.status.servers.find((s) => s.name === 'fixture')?.pid;
  assert.ok(pid, JSON.stringify(turn.status.servers));
  assert.equal((await turn.callTool({ id: 'c1', name: 'mcp__fixture__echo', arguments: { text: 'hi' } })).status, 'ok');
  await turn.end();
  return pid;
}

describe('dev keeps a warm spare per trusted stdio server by default', { timeout: 180_000 }, () => {
  test('the next new session takes the spare started after the first one', async () => {
    const dev = await startDev({});
    const client = await TurnClient.connect({ address: dev.address, dataDir: dev.dataDir });
    try {
      const first = await sessionServerPid(client, dev.dataDir, 'spares-a');
      let spare: number | undefined;
      await waitUntil('a warm spare to start', async () => {
        spare = fixtureProcessesUnder(dev.child.pid!).find((pid) => pid !== first);
        return spare !== undefined;
      });
      const second = await sessionServerPid(client, dev.dataDir, 'spares-b');
      assert.equal(second, spare, 'the second session was handed the spare');
    } finally {
      await client.close();
    }
  });

  test('DMCP_WARM_SPARES=0 keeps none', async () => {
    const dev = await startDev({ DMCP_WARM_SPARES: '0' });
    const client = await TurnClient.connect({ address: dev.address, dataDir: dev.dataDir });
    try {
      const first = await sessionServerPid(client, dev.dataDir, 'nospares-a');
      // A spare starts 1 s after its entry is used; give it several times that.
      const extra = await waitFor(() => fixtureProcessesUnder(dev.child.pid!).some((pid) => pid !== first), 5000, 200);
      assert.equal(extra, false, "no process besides the session's server");
      const second = await sessionServerPid(client, dev.dataDir, 'nospares-b');
      assert.notEqual(second, first);
    } finally {
      await client.close();
    }
  });
});
