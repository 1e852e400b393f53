import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { TurnClient, type Turn } from '../../client/turnClient.js';
import {
  isAlive,
  killGroups,
  lifecycleEntry,
  temporalAddress,
  tempDir,
  uniqueQueue,
  waitFor,
  workerProcessScript,
  workflowBundleFile,
  writeMcpJson,
} from '../support/harness.js';

interface WorkerProc {
  child: ChildProcess;
  pid: number;
  workerQueue: string;
  stderr: string[];
}

/** Starts test/fixtures/workerProcess.js and waits for the line that names its worker queue. */
async function startWorkerProcess(taskQueue: string, bundle: string): Promise<WorkerProc> {
  const child = spawn(process.execPath, [workerProcessScript, '--task-queue', taskQueue, '--bundle', bundle], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_NO_USER_CONFIG: '1',
      DMCP_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const lines = createInterface({ input: child.stdout! });
  const timeout = setTimeout(() => child.kill('SIGKILL'), 30_000);
  try {
    const [first] = (await Promise.race([
      once(lines, 'line'),
      once(child, 'exit').then(() => {
        throw new Error(`worker process exited before it was ready: ${stderr.join('')}`);
      }),
    ])) as [string];
    const ready = JSON.parse(first) as { workerQueue: string; pid: number };
    return { child, pid: ready.pid, workerQueue: ready.workerQueue, stderr };
  } finally {
    clearTimeout(timeout);
  }
}

async function stopWorkerProcess(w: WorkerProc): Promise<void> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return;
  const exited = once(w.child, 'exit');
  w.child.kill('SIGTERM');
  const timer = setTimeout(() => w.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

describe('session affinity and failover between two worker processes', () => {
  const workers: WorkerProc[] = [];
  const seenPids = new Set<number>();
  let client: TurnClient;
  let dir: string;
  let config: string;

  before(async () => {
    dir = await tempDir('dmcp-affinity-');
    const taskQueue = uniqueQueue('affinity');
    const bundle = await workflowBundleFile(dir);
    workers.push(
      ...(await Promise.all([startWorkerProcess(taskQueue, bundle), startWorkerProcess(taskQueue, bundle)])),
    );
    const connection = await Connection.connect({ address: temporalAddress() });
    client = new TurnClient({ client: new Client({ connection }), taskQueue });
    config = join(dir, 'mcp.json');
    await writeMcpJson(config, { one: lifecycleEntry('one'), two: lifecycleEntry('two') });
  });
  after(async () => {
    await client?.close();
    await Promise.all(workers.map(stopWorkerProcess));
    killGroups([...seenPids].filter(isAlive));
  });

  function pids(turn: Turn): number[] {
    const found = turn.status.servers.map((s) => s.pid);
    assert.ok(
      found.every((p): p is number => typeof p === 'number' && p > 0),
      JSON.stringify(turn.status.servers),
    );
    for (const p of found) seenPids.add(p);
    return found;
  }

  async function turnOf(session: string): Promise<Turn> {
    const turn = await client.startTurn({ sessionId: session, workspace: dir, servers: { mcpConfigFiles: [config] } });
    const outcome = await turn.callTool({ id: `whoami-${turn.turnId}`, name: 'mcp__one__whoami', arguments: {} });
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    await turn.end();
    return turn;
  }

  test('turns of a session stay on the live worker (same PIDs); after that worker is SIGKILLed, the next turn runs on the other one with fresh servers', async (t) => {
    const session = `affinity-${process.pid}-${Date.now()}`;
    const t1 = await turnOf(session);
    const holder = workers.find((w) => w.workerQueue === t1.workerQueue);
    const other = workers.find((w) => w.workerQueue !== t1.workerQueue);
    assert.ok(holder && other, `turn 1 ran on one of our workers (${t1.workerQueue})`);
    const firstPids = pids(t1);

    // Both workers poll the shared queue; the session still lands on its worker each turn.
    for (let i = 0; i < 3; i += 1) {
      const again = await turnOf(session);
      assert.equal(again.workerQueue, holder.workerQueue);
      assert.deepEqual(pids(again), firstPids);
    }

    holder.child.kill('SIGKILL');
    await once(holder.child, 'exit');

    const started = Date.now();
    const t3 = await turnOf(session);
    const failoverMs = Date.now() - started;
    assert.equal(t3.workerQueue, other.workerQueue);
    const freshPids = pids(t3);
    for (const p of freshPids) assert.ok(!firstPids.includes(p), 'fresh server processes');
    assert.ok(failoverMs < 30_000, `failover turn took ${failoverMs} ms`);
    t.diagnostic(`failover turn took ${failoverMs} ms`);

    // Orphans: the dead worker's stdio servers see EOF on stdin and exit on their own (an SDK
    // server has nothing else keeping it alive). A server that ignored EOF would be left behind;
    // after() kills any by PID.
    assert.ok(
      await waitFor(() => firstPids.every((p) => !isAlive(p)), 5000),
      `servers of the killed worker exited: ${firstPids.filter(isAlive).join(' ')}`,
    );
  });
});
