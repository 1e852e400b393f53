/**
 * A user's own workflow keeps a turn's crash guarantees: two worker processes run the user's
 * workflows with durable-mcp (startWorker, a user of the plugin, given the user's bundle), and the
 * one holding the session's servers is SIGKILLed while a read-only and a side-effecting call run.
 * Real Temporal; the echo fixture logs every execution.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { quietBundlerLogger } from '../../worker/parts.js';
import { DurableMcpPlugin } from '../../worker/plugin.js';
import { text } from '../support/inputs.js';
import {
  fixtureServer,
  killGroups,
  readLines,
  startWorkerProcess,
  stopWorkerProcess,
  tempDir,
  temporalAddress,
  uniqueQueue,
  waitUntil,
  writeConfigDir,
  type WorkerProcess,
} from '../support/harness.js';
import type { crashableCalls } from '../support/ownWorkflows.js';

const ownWorkflows = fileURLToPath(new URL('../support/ownWorkflows.js', import.meta.url));
const workers: WorkerProcess[] = [];
const serverPids = new Set<number>();

after(async () => {
  await Promise.all(workers.map(stopWorkerProcess));
  // Servers of the killed worker lose their parent; end them by the PIDs their log names.
  killGroups(serverPids);
});

/** The parent of a process, from /proc. */
function parentOf(pid: number): number {
  return Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

test(
  'a worker killed during calls from a user workflow: read-only runs again elsewhere, side-effecting is unknown, nothing completed reruns',
  { timeout: 180_000 },
  async () => {
    const dir = await tempDir('dmcp-own-crash-');
    const execLog = join(dir, 'executions.log');
    const configDir = join(dir, 'config');
    const configEnv = await writeConfigDir(configDir, { echo: { command: process.execPath, args: [fixtureServer] } });
    const bundleFile = join(dir, 'own-workflows.js');
    const bundler = new DurableMcpPlugin({ env: { PATH: process.env.PATH, DMCP_DATA_DIR: join(dir, 'data') } });
    await writeFile(
      bundleFile,
      (await bundleWorkflowCode({ workflowsPath: ownWorkflows, plugins: [bundler], logger: quietBundlerLogger })).code,
    );
    const taskQueue = uniqueQueue('own-crash');
    const env = {
      TEMPORAL_ADDRESS: temporalAddress(),
      FIXTURE_LOG: execLog,
      DMCP_DATA_DIR: join(dir, 'data'),
      // The regular path's failover (heartbeat timeout, then another worker), as crash.test.ts.
      DMCP_FAST_PATH: 'false',
      ...configEnv,
    };
    workers.push(
      await startWorkerProcess(taskQueue, bundleFile, env),
      await startWorkerProcess(taskQueue, bundleFile, env),
    );
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new Client({ connection });
    try {
      const handle = await client.workflow.start<typeof crashableCalls>('crashableCalls', {
        taskQueue,
        workflowId: `own-crash-${Date.now()}`,
        args: [],
      });
      const executions = async (tool: string, tag?: string) =>
        (await readLines(execLog))
          .map((l) => JSON.parse(l) as { tool: string; pid: number; args: { tag?: string; text?: string } })
          .filter((e) => e.tool === tool && (tag === undefined || e.args.tag === tag));
      await waitUntil(
        'both slow calls to start',
        async () => (await executions('read_slow', 'ro')).length === 1 && (await executions('slow', 'se')).length === 1,
      );
      const server = (await executions('slow', 'se'))[0]!.pid;
      serverPids.add(server);
      const victim = workers.find((w) => w.pid === parentOf(server));
      assert.ok(victim, 'the session is held by one of our two workers');
      process.kill(victim.pid, 'SIGKILL');

      const result = await handle.result();
      const survivor = workers.find((w) => w !== victim)!;
      assert.equal(result.heldBy.before, victim.workerQueue);
      assert.equal(result.heldBy.after, survivor.workerQueue, 'the session moved to the surviving worker');
      assert.equal(result.done.status, 'ok');
      assert.equal(result.readOnly.status, 'ok', `read-only call: ${result.readOnly.errorMessage}`);
      assert.equal(text(result.readOnly), 'read after 6000 ms');
      assert.equal((await executions('read_slow', 'ro')).length, 2, 'the read-only call ran again on the survivor');
      assert.equal(result.sideEffect.status, 'error');
      assert.equal(result.sideEffect.errorKind, 'unknown_result');
      assert.equal((await executions('slow', 'se')).length, 1, 'the side-effecting call ran at most once');
      assert.equal(result.later.status, 'ok', `a new call: ${result.later.errorMessage}`);
      const before = (await executions('echo')).filter((e) => e.args.text === 'before the crash');
      assert.equal(before.length, 1, 'the completed call never ran again');
    } finally {
      await connection.close();
    }
  },
);
