/**
 * An approval that waits survives the loss of its worker: the question stays open on the turn, the
 * answer sent after the SIGKILL reaches it, and the approved call runs once, on the survivor.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { TurnClient } from '../../client/turnClient.js';
import { bundleWorkflows } from '../../worker/index.js';
import {
  fixtureServer,
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

describe('a worker SIGKILLed while an approval waits', () => {
  const workers: WorkerProcess[] = [];
  let dir: string;
  let bundleFile: string;
  let client: TurnClient | undefined;

  before(async () => {
    dir = await tempDir();
    bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
  });
  after(async () => {
    await Promise.all(workers.map(stopWorkerProcess));
    await client?.close();
  });

  test('the question outlives the worker, and the approved call runs once on the survivor', async () => {
    const configDir = join(dir, 'config');
    const fixtureLog = join(dir, 'executions.log');
    const env = {
      ...(await writeConfigDir(
        configDir,
        { s: { command: process.execPath, args: [fixtureServer], env: { FIXTURE_LOG: fixtureLog } } },
        { settings: { permissions: { ask: ['mcp__s__echo'] } } },
      )),
      TEMPORAL_ADDRESS: temporalAddress(),
    };
    const taskQueue = uniqueQueue('approval-crash');
    const first = await startWorkerProcess(taskQueue, bundleFile, env);
    workers.push(first);
    const connection = await Connection.connect({ address: temporalAddress() });
    client = new TurnClient({ client: new Client({ connection }), taskQueue });
    const turn = await client.startTurn({
      sessionId: `approval-crash-${randomBytes(4).toString('hex')}`,
      limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
    });
    try {
      const call = turn.callTool({ id: 'a1', name: 'mcp__s__echo', arguments: { text: 'after the crash' } });
      await waitUntil('the approval question', async () => (await turn.pendingInputs()).length === 1);
      workers.push(await startWorkerProcess(taskQueue, bundleFile, env));
      process.kill(first.pid, 'SIGKILL');

      const [question] = await turn.pendingInputs();
      assert.ok(question?.approval, 'the question is still open after the SIGKILL');
      await turn.answerInput(question.requestId, { action: 'accept', content: { decision: 'approve' } });
      const outcome = await call;
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      const runs = (await readLines(fixtureLog)).filter((l) => l.includes('after the crash'));
      assert.equal(runs.length, 1, 'the approved call ran once');
    } finally {
      await turn.end();
    }
    assert.notEqual((await client.transcript(turn.turnId)).workerQueue, first.workerQueue, 'it ran on the survivor');
  });
});
