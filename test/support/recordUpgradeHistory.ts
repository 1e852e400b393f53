/**
 * Records a turn that starts on another build's worker and ends on this build's, into
 * test/histories/<name>.json, for the replay test: a turn in flight while its workers are upgraded
 * must replay, the part the old code ran and the part the new code ran. Run after a workflow change
 * (after the first release, when a rolling deploy must keep running turns safe), with the build
 * before it checked out and built elsewhere:
 * `npm run build && node dist/test/support/recordUpgradeHistory.js <other checkout>/dist <name>`
 * (starts a dev server unless TEMPORAL_ADDRESS is set).
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { TurnClient } from '../../client/turnClient.js';
import { startDevServer } from '../../dev/devServer.js';
import { projectRoot } from '../../dev/temporalCli.js';
import { fixtureServer, startWorkerProcess, stopWorkerProcess, tempDir, type WorkerProcess } from './harness.js';
import { neutralizePaths } from './historyFiles.js';

const outDir = fileURLToPath(new URL('../../../test/histories/', import.meta.url));

async function main(): Promise<void> {
  const [otherDist, name] = process.argv.slice(2);
  const otherWorker = otherDist ? join(otherDist, 'test/fixtures/workerProcess.js') : '';
  if (!otherDist || !name || !/^[a-z0-9-]+$/.test(name) || !existsSync(otherWorker)) {
    throw new Error(
      'usage: recordUpgradeHistory.js <other checkout>/dist <name: lower-case letters, digits, dashes> (the other checkout built)',
    );
  }
  const server = process.env.TEMPORAL_ADDRESS ? undefined : await startDevServer({ headless: true });
  const address = server?.address ?? process.env.TEMPORAL_ADDRESS!;
  const connection = await Connection.connect({ address });
  const taskQueue = `upgrade-${Date.now().toString(36)}`;
  const env = { TEMPORAL_ADDRESS: address, DMCP_NO_USER_CONFIG: '1' };
  let before: WorkerProcess | undefined;
  let after: WorkerProcess | undefined;
  try {
    const turns = new TurnClient({ client: new Client({ connection }), taskQueue });
    const workspace = await tempDir();
    before = await startWorkerProcess(taskQueue, undefined, env, otherWorker);
    // A short schedule-to-start: the calls after the upgrade find the old worker's queue unpolled.
    const turn = await turns.startTurn({
      sessionId: 'replay-upgrade',
      workspace,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
      limits: { scheduleToStartMs: 2000 },
    });
    const outcomes = [
      await turn.callTool({ id: 'toolu_01', name: 'mcp__fixture__echo', arguments: { text: 'on the old worker' } }),
    ];
    // Accepted by the old code, finished while the new code runs the turn.
    const spanning = turn.callTool({
      id: 'toolu_02',
      name: 'mcp__fixture__read_slow',
      arguments: { ms: 2000, tag: 'upgrade' },
    });
    await new Promise((r) => setTimeout(r, 500));
    after = await startWorkerProcess(taskQueue, undefined, env);
    await stopWorkerProcess(before);
    outcomes.push(await spanning);
    outcomes.push(
      await turn.callTool({ id: 'toolu_03', name: 'mcp__fixture__echo', arguments: { text: 'on the new worker' } }),
    );
    outcomes.push(
      await turn.callTool({ id: 'toolu_04', name: 'mcp__fixture__fail', arguments: { reason: 'recorded' } }),
    );
    const result = await turn.end();
    const kinds = outcomes.map((o) => (o.status === 'ok' ? (o.isError ? 'isError' : 'ok') : o.errorKind));
    if (kinds.join() !== 'ok,ok,ok,isError' || result.workerQueue !== after.workerQueue) {
      throw new Error(`unexpected outcomes ${kinds.join()} (ended on ${result.workerQueue}): not recording`);
    }
    const history = await turns.client.workflow.getHandle(turn.turnId).fetchHistory();
    await writeFile(
      join(outDir, `${name}.json`),
      `${neutralizePaths(historyToJSON(history), [
        [process.execPath, 'node'],
        [workspace, '/workspace'],
        [projectRoot, '/project/'],
      ])}\n`,
    );
    process.stderr.write(`recorded ${turn.turnId} -> test/histories/${name}.json\n`);
  } finally {
    await stopWorkerProcess(after);
    await stopWorkerProcess(before);
    await connection.close();
    await server?.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
