/**
 * Rolling deploys with Temporal worker versioning: a turn waiting for a person's answer while a
 * changed build becomes current finishes on the build that started it, and the next turn starts on
 * the new build. The later build schedules every activity after a timer (test/fixtures/laterBuild.ts),
 * so the waiting turn could not replay on it: finishing proves the turn never moved.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import proto from '@temporalio/proto';
import pino from 'pino';
import { TurnClient } from '../../client/turnClient.js';
import type { InputAnswer } from '../../contract/index.js';
import { shelfWorkflowId } from '../../plane/shelf.js';
import { bundleWorkflows, startWorker, workflowsPath, type RunningWorker } from '../../worker/index.js';
import { shelfChangeUpdate } from '../../contract/definitions.js';
import { killStartedServers, modernHttpServer, text } from '../support/inputs.js';
import { tempDir, temporalAddress, uniqueQueue, within } from '../support/harness.js';

const laterBuildInterceptors = fileURLToPath(new URL('../fixtures/laterBuild.js', import.meta.url));
const { EventType, VersioningBehavior } = proto.temporal.api.enums.v1;
const quiet = () => undefined;
const forget = { op: 'forget', server: 'nothing', by: 'test' } as const;
const quietBundler = { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet };

describe('worker versioning: a rolling deploy', { timeout: 240_000 }, () => {
  const deploymentName = `dmcp-test-${randomBytes(4).toString('hex')}`;
  const taskQueue = uniqueQueue('versioning');
  const logs: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
  const workers: RunningWorker[] = [];
  let connection: NativeConnection;
  let clientConnection: Connection;
  let turns: TurnClient;
  let dir: string;
  let url: string;

  before(async () => {
    dir = await tempDir('dmcp-versioning-');
    url = await modernHttpServer(join(dir, 'server.log'));
    connection = await NativeConnection.connect({ address: temporalAddress() });
    clientConnection = await Connection.connect({ address: temporalAddress() });
    turns = new TurnClient({ client: new Client({ connection: clientConnection }), taskQueue });
  });
  after(async () => {
    killStartedServers();
    await Promise.allSettled(workers.map((w) => w.shutdown()));
    await connection?.close();
    await turns?.close();
  });

  const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_NO_USER_CONFIG: '1' };

  /** A worker of `buildId` in a deployment (the test's), as an operator starts one: through its settings. */
  async function startBuild(
    buildId: string,
    workflowBundle: WorkflowBundleWithSourceMap,
    at = { queue: taskQueue, deployment: deploymentName },
  ): Promise<void> {
    const env = { ...baseEnv, DMCP_DEPLOYMENT_NAME: at.deployment, DMCP_BUILD_ID: buildId };
    workers.push(await startWorker({ connection, logger, taskQueue: at.queue, workflowBundle, env }));
  }

  /** What an operator runs with `temporal worker deployment set-current-version`, once the version has polled. */
  async function setCurrent(buildId: string, deployment = deploymentName): Promise<void> {
    const service = turns.client.workflowService;
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await service.setWorkerDeploymentCurrentVersion({ namespace: 'default', deploymentName: deployment, buildId });
        return;
      } catch (err) {
        // The version exists once its worker has polled the server.
        if (Date.now() > deadline) throw new Error(`build ${buildId} could not become current`, { cause: err });
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  async function eventsOf(turnId: string) {
    return (await turns.client.workflow.getHandle(turnId).fetchHistory()).events ?? [];
  }

  /**
   * The build of each completed workflow task of a turn (of those after the first `skip` events
   * in `afterBuilds`), and how many 1 ms timers (build B's) it started.
   */
  async function buildsOf(turnId: string, skip = 0) {
    const events = await eventsOf(turnId);
    const completed = events.flatMap((e, i) =>
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        ? [{ index: i, task: e.workflowTaskCompletedEventAttributes! }]
        : [],
    );
    const build = ({ task }: (typeof completed)[number]) =>
      `${task.deploymentVersion?.deploymentName}/${task.deploymentVersion?.buildId}`;
    return {
      builds: completed.map(build),
      afterBuilds: completed.filter((c) => c.index >= skip).map(build),
      behaviours: completed.map(({ task }) => VersioningBehavior[task.versioningBehavior ?? 0]),
      timers: events.filter((e) => {
        const fire = e.timerStartedEventAttributes?.startToFireTimeout;
        return fire != null && Number(fire.seconds ?? 0) === 0 && fire.nanos === 1_000_000;
      }).length,
    };
  }

  async function startTurn(name: string) {
    const file = join(dir, `${name}.json`);
    await writeFile(file, JSON.stringify({ mcpServers: { db: { url } } }));
    return turns.startTurn({
      sessionId: `${name}-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
  }

  test('a turn waiting for an answer finishes on the build that started it; the next turn starts on the new build', async () => {
    const [buildA, buildB] = await Promise.all([
      bundleWorkflows(),
      bundleWorkflowCode({
        workflowsPath,
        workflowInterceptorModules: [laterBuildInterceptors],
        logger: quietBundler,
      }),
    ]);
    await startBuild('build-a', buildA);
    await setCurrent('build-a');
    // The shelf never ends: it follows the current build instead of staying on build A.
    const shelf = await turns.client.workflow.start('dmcpShelf', {
      workflowId: shelfWorkflowId(taskQueue),
      taskQueue,
      args: [{}],
    });
    await shelf.executeUpdate(shelfChangeUpdate, { args: [forget] });

    const waiting = await startTurn('waiting');
    let asked!: () => void;
    const questionAsked = new Promise<void>((resolve) => (asked = resolve));
    let answer!: () => void;
    const deployed = new Promise<void>((resolve) => (answer = resolve));
    const call = waiting.callTool(
      { id: 'p1', name: 'mcp__db__provision', arguments: {} },
      {
        inputPollMs: 200,
        onInput: async (request): Promise<InputAnswer> => {
          asked();
          await deployed;
          return request.key === 'name'
            ? { action: 'accept', content: { name: 'analytics', region: 'us' } }
            : { action: 'accept', content: { confirm: true } };
        },
      },
    );
    await within(30_000, 'the first question', questionAsked);

    await startBuild('build-b', buildB);
    await setCurrent('build-b');
    const eventsBeforeAnswer = (await eventsOf(waiting.turnId)).length;
    answer();
    const outcome = await within(60_000, 'the answered call', call);
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(text(outcome), 'Provisioned analytics');
    await waiting.end();

    const old = await buildsOf(waiting.turnId, eventsBeforeAnswer);
    assert.ok(old.afterBuilds.length > 0, 'the turn ran workflow tasks after build B became current');
    assert.deepEqual(new Set(old.builds), new Set([`${deploymentName}/build-a`]), 'every workflow task ran on build A');
    assert.deepEqual(new Set(old.behaviours), new Set(['VERSIONING_BEHAVIOR_PINNED']));
    assert.equal(old.timers, 0, "no task ran build B's code");

    await shelf.executeUpdate(shelfChangeUpdate, { args: [forget] });
    const shelfRun = await buildsOf(shelf.workflowId);
    assert.deepEqual(
      [...new Set(shelfRun.builds)],
      [`${deploymentName}/build-a`, `${deploymentName}/build-b`],
      'the shelf moved to build B in the same run',
    );
    assert.deepEqual(new Set(shelfRun.behaviours), new Set(['VERSIONING_BEHAVIOR_AUTO_UPGRADE']));
    assert.equal((await shelf.describe()).runId, shelf.firstExecutionRunId, 'the shelf did not continue as new');
    await shelf.terminate('the test is over');

    const next = await startTurn('next');
    const echoed = await next.callTool({ id: 'e1', name: 'mcp__db__echo', arguments: { text: 'hi' } });
    assert.equal(echoed.status, 'ok', echoed.errorMessage);
    await next.end();
    const fresh = await buildsOf(next.turnId);
    assert.deepEqual(new Set(fresh.builds), new Set([`${deploymentName}/build-b`]), 'the next turn ran on build B');
    assert.ok(fresh.timers > 0, "build B's changed code scheduled its activities");
  });
  test('a shelf started on unversioned workers continues as new on the first versioned build, and auto-upgrades from then on', async () => {
    const queue = uniqueQueue('versioning-switch');
    const deployment = `${deploymentName}-switch`;
    const workflowBundle = await bundleWorkflows();
    const unversioned = await startWorker({ connection, logger, taskQueue: queue, workflowBundle, env: baseEnv });
    const workflowId = shelfWorkflowId(queue);
    let firstRun: string;
    try {
      firstRun = (await turns.client.workflow.start('dmcpShelf', { workflowId, taskQueue: queue, args: [{}] }))
        .firstExecutionRunId;
      await turns.client.workflow.getHandle(workflowId).executeUpdate(shelfChangeUpdate, { args: [forget] });
    } finally {
      await unversioned.shutdown();
    }

    await startBuild('build-a', workflowBundle, { queue, deployment });
    await setCurrent('build-a', deployment);
    const shelf = turns.client.workflow.getHandle(workflowId);
    await shelf.executeUpdate(shelfChangeUpdate, { args: [forget] });
    const deadline = Date.now() + 30_000;
    while ((await shelf.describe()).runId === firstRun) {
      assert.ok(Date.now() < deadline, 'the shelf continued as new on the versioned build');
      await new Promise((r) => setTimeout(r, 200));
    }
    await shelf.executeUpdate(shelfChangeUpdate, { args: [forget] });
    const behaviour = (await shelf.describe()).raw.workflowExecutionInfo?.versioningInfo?.behavior;
    assert.equal(VersioningBehavior[behaviour ?? 0], 'VERSIONING_BEHAVIOR_AUTO_UPGRADE');
    await shelf.terminate('the test is over');
  });
});
