/**
 * Model turns survive a worker's SIGKILL: a model step whose worker died runs again on a survivor,
 * and the turn goes on from the stored conversation; a side-effecting call whose worker died is
 * read by the model as an unknown result, never run twice.
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
import { startModelServer, writeModelsJson, type ModelServer } from '../support/models.js';
import { createPayloadCodecs } from '../../payloads/dataConverter.js';
import { FilesystemStepTextStore } from '../../payloads/streamLog.js';
import { clientDataDir } from '../../client/turnStart.js';

const KEY = `sk-crash-${randomBytes(16).toString('hex')}`;
const SCRIPT = {
  prompts: {
    'slow model': [
      { firstDelayMs: 60_000, toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'after the crash' } }] },
      { text: 'Done after the crash.' },
    ],
    'slow tool': [
      { toolCalls: [{ name: 'mcp__echo__slow', arguments: { ms: 8000, tag: 'side-effect' } }] },
      { text: 'I could not tell whether it ran.' },
    ],
  },
  steps: [{ text: 'default' }],
};

describe('a worker SIGKILLed during a model turn', () => {
  const started = new Set<number>();
  const workers: WorkerProcess[] = [];
  let dir: string;
  let bundleFile: string;
  let model: ModelServer;
  let env: NodeJS.ProcessEnv;
  let client: TurnClient;

  before(async () => {
    dir = await tempDir();
    bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
    model = await startModelServer(dir, 'model', SCRIPT, started, { MODEL_KEY: KEY });
    const configDir = join(dir, 'config');
    const configEnv = await writeConfigDir(configDir, {});
    await writeModelsJson(configDir, {
      scripted: { provider: 'openai-compatible', model: 'scripted-1', baseURL: model.baseURL, apiKeyEnv: 'MODEL_KEY' },
    });
    env = {
      ...configEnv,
      TEMPORAL_ADDRESS: temporalAddress(),
      FIXTURE_LOG: join(dir, 'executions.log'),
      MODEL_KEY: KEY,
      DMCP_FAST_PATH: 'false',
    };
    const connection = await Connection.connect({ address: temporalAddress() });
    client = new TurnClient({ client: new Client({ connection }), taskQueue: 'unused' });
  });
  after(async () => {
    await Promise.all(workers.map(stopWorkerProcess));
    await client?.close();
    killGroups(started);
  });

  const turnClient = (taskQueue: string) =>
    new TurnClient({
      client: client['client' as never] as Client,
      taskQueue,
      // The workers' step text logs (their default data dir, where the turn key is too), read with their codecs.
      stepText: new FilesystemStepTextStore(join(clientDataDir(), 'payloads'), createPayloadCodecs({})),
    });
  const executions = async (tag: string) =>
    (await readLines(join(dir, 'executions.log'))).filter((l) => l.includes(`"${tag}"`)).length;

  test('during a model step: the step runs again on a survivor, and the turn answers', async () => {
    const taskQueue = uniqueQueue('model-crash');
    const first = await startWorkerProcess(taskQueue, bundleFile, env);
    workers.push(first);
    const run = await turnClient(taskQueue).startModelTurn({
      sessionId: `model-crash-${randomBytes(4).toString('hex')}`,
      servers: { inlineSpecs: [`echo:${process.execPath} ${fixtureServer}`] },
      limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
      model: { name: 'scripted', prompt: 'a slow model' },
    });
    await waitUntil('the model to be asked', async () =>
      (await model.requests()).some((r) => r.key === 'slow model' && r.step === 0),
    );
    // The only worker is the one waiting for the model; a second one takes over once it is gone.
    workers.push(await startWorkerProcess(taskQueue, bundleFile, env));
    process.kill(first.pid, 'SIGKILL');

    const result = await run.result();
    assert.equal(result.endedBy, 'answer');
    assert.equal(result.answer, 'Done after the crash.');
    const asked = (await model.requests()).filter((r) => r.key === 'slow model');
    assert.deepEqual(
      asked.map((r) => [r.step, r.n]),
      [
        [0, 1],
        [0, 2],
        [1, 1],
      ],
      'the killed step was asked again, then the turn went on',
    );
    assert.equal(result.calls.length, 1);
    assert.equal(result.calls[0]!.outcome.status, 'ok');
    assert.equal(
      asked[2]!.messages,
      4,
      'the survivor read the conversation from the store: system, prompt, call, result',
    );
    // The turn's stream says the step was tried again, before the step itself.
    const events = [];
    for await (const e of turnClient(taskQueue).events(run.turnId)) events.push(e);
    const reset = events.findIndex((e) => e.event === 'model.reset');
    assert.ok(reset >= 0, `a reset: ${events.map((e) => e.event).join(', ')}`);
    assert.deepEqual(events[reset]!.data, { turnId: run.turnId, step: 1, attempt: 2 });
    assert.ok(reset < events.findIndex((e) => e.event === 'model.step' && e.data.step === 1));
  });

  test('during a side-effecting call: the model reads unknown_result, and the call ran once', async () => {
    const taskQueue = uniqueQueue('model-crash-call');
    const first = await startWorkerProcess(taskQueue, bundleFile, env);
    workers.push(first);
    const run = await turnClient(taskQueue).startModelTurn({
      sessionId: `model-crash-call-${randomBytes(4).toString('hex')}`,
      servers: { inlineSpecs: [`echo:${process.execPath} ${fixtureServer}`] },
      limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
      model: { name: 'scripted', prompt: 'a slow tool' },
    });
    await waitUntil('the side-effecting call to start', async () => (await executions('side-effect')) === 1);
    workers.push(await startWorkerProcess(taskQueue, bundleFile, env));
    process.kill(first.pid, 'SIGKILL');

    const result = await run.result();
    assert.equal(result.endedBy, 'answer');
    assert.equal(result.calls[0]!.outcome.errorKind, 'unknown_result');
    const last = (await model.requests()).filter((r) => r.key === 'slow tool').at(-1)!;
    assert.equal(last.step, 1);
    assert.match(last.toolResults.join('\n'), /may have had an effect/, 'the model is told the outcome is unknown');
    assert.equal(await executions('side-effect'), 1, 'never run a second time');
  });
});
