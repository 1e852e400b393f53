// A worker SIGKILLed between a call's PreToolUse hook and the call: the decision recorded in history
// (here, arguments rewritten by the dead worker's hook) is the one the call runs with on the next
// worker, whose own hook would decide differently; the hook is not run again.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { TurnClient } from '../../client/turnClient.js';
import { ActivityName, type CallToolInput } from '../../contract/index.js';
import { decodeHistoryPayloads } from '../../payloads/decodeHistory.js';
import {
  fixtureServer,
  writeConfigDir,
  killGroups,
  readLines,
  tempDir,
  temporalAddress,
  uniqueQueue,
  waitFor,
  within,
  startWorkerProcess,
  stopWorkerProcess,
  workflowBundleFile,
  type WorkerProcess,
} from '../support/harness.js';
import { textOf } from '../support/content.js';

/** A worker process whose hook script logs which worker ran it (HOOK_TAG). */
type WorkerProc = WorkerProcess & { tag: string };

async function startTaggedWorker(
  taskQueue: string,
  bundleFile: string,
  env: NodeJS.ProcessEnv,
  tag: string,
): Promise<WorkerProc> {
  return {
    ...(await startWorkerProcess(taskQueue, bundleFile, { HOME: process.env.HOME, ...env, HOOK_TAG: tag })),
    tag,
  };
}

const hookScript = fileURLToPath(new URL('../../../test/fixtures/hooks/hook.sh', import.meta.url));

describe('a worker SIGKILLed between a PreToolUse hook and its call', () => {
  let dir: string;
  const workers: WorkerProc[] = [];
  const serverPids = new Set<number>();

  before(async () => {
    dir = await tempDir('dmcp-hooks-crash-');
  });
  after(async () => {
    await Promise.all(workers.map(stopWorkerProcess));
    killGroups(serverPids);
  });

  test('the recorded decision stands: the call runs with it on the next worker, and no hook decides again', async () => {
    const hookLog = join(dir, 'hooks.log');
    const execLog = join(dir, 'executions.log');
    const config = await writeConfigDir(
      join(dir, 'config'),
      { s: { command: process.execPath, args: [fixtureServer], env: { FIXTURE_LOG: execLog } } },
      {
        // Each worker's hook writes its own tag into the arguments: a second decision would show.
        settings: {
          hooks: {
            PreToolUse: [
              { matcher: 'mcp__s__read_slow', hooks: [{ type: 'command', command: `bash ${hookScript} rewrite` }] },
            ],
          },
        },
      },
    );
    const taskQueue = uniqueQueue('hooks-crash');
    const bundleFile = await workflowBundleFile(dir);
    const env = { TEMPORAL_ADDRESS: temporalAddress(), ...config, HOOK_LOG: hookLog };
    workers.push(
      await startTaggedWorker(taskQueue, bundleFile, env, 'worker-a'),
      await startTaggedWorker(taskQueue, bundleFile, env, 'worker-b'),
    );
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new TurnClient({ client: new Client({ connection }), taskQueue });
    try {
      const turn = await client.startTurn({
        sessionId: `hooks-crash-${Date.now()}`,
        workspace: dir,
        limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
      });
      for (const s of turn.status.servers) if (s.pid) serverPids.add(s.pid);
      const victim = workers.find((w) => w.workerQueue === turn.workerQueue)!;
      const survivor = workers.find((w) => w !== victim)!;
      assert.ok(victim, 'the turn is pinned to one of our two workers');

      const history = async () => {
        const h = await client.client.workflow.getHandle(turn.turnId).fetchHistory();
        const converter = client.client.options.loadedDataConverter;
        await decodeHistoryPayloads(h, { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage });
        return h;
      };
      const call = turn.callTool({
        id: 'guarded',
        name: 'mcp__s__read_slow',
        arguments: { ms: 3000, tag: 'from-the-model' },
      });
      // Kill the worker as soon as its hook's decision is in history, before (or as) the call starts.
      const recorded = await waitFor(
        async () => {
          const h = await history();
          const scheduled = new Set(
            (h.events ?? [])
              .filter(
                (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === ActivityName.preToolUseHooks,
              )
              .map((e) => String(e.eventId)),
          );
          return (h.events ?? []).some((e) =>
            scheduled.has(String(e.activityTaskCompletedEventAttributes?.scheduledEventId)),
          );
        },
        30_000,
        10,
      );
      assert.ok(recorded, 'the hook decision was recorded');
      process.kill(victim.pid, 'SIGKILL');

      const outcome = await within(60_000, 'the guarded call', call);
      assert.equal(outcome.status, 'ok', `the read-only call moved to the survivor: ${outcome.errorMessage}`);
      assert.equal(textOf(outcome.content[0]), 'read after 3000 ms');
      assert.deepEqual(
        outcome.hooks?.pre?.updatedInput,
        { ms: 3000, tag: victim.tag },
        "the dead worker's decision is the one kept",
      );

      const runs = (await readLines(hookLog)).map((l) => JSON.parse(l) as { tag: string; id: string; event: string });
      assert.deepEqual(
        runs.filter((r) => r.id === 'guarded').map((r) => r.tag),
        [victim.tag],
        'the hook ran once, on the worker that was killed',
      );
      const executions = existsSync(execLog)
        ? (await readLines(execLog)).map((l) => JSON.parse(l) as { tool: string; args: { tag?: string } })
        : [];
      const tags = executions.filter((e) => e.tool === 'read_slow').map((e) => e.args.tag);
      assert.ok(
        tags.length >= 1 && tags.every((t) => t === victim.tag),
        `every execution used the recorded arguments: ${JSON.stringify(tags)}`,
      );

      const h = await history();
      const converter = client.client.options.loadedDataConverter.payloadConverter;
      const scheduled = (h.events ?? []).flatMap((e) =>
        e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : [],
      );
      assert.equal(
        scheduled.filter((a) => a.activityType?.name === ActivityName.preToolUseHooks).length,
        1,
        'one PreToolUse activity in history',
      );
      const calls = scheduled
        .filter((a) => a.activityType?.name === ActivityName.callTool)
        .map((a) => converter.fromPayload<CallToolInput>(a.input!.payloads![0]!));
      assert.ok(
        calls.length >= 1 && calls.every((c) => c.arguments.tag === victim.tag),
        JSON.stringify(calls.map((c) => c.arguments)),
      );
      const result = await turn.end();
      assert.equal(result.workerQueue, survivor.workerQueue, 'the turn finished on the surviving worker');
    } finally {
      await client.close();
    }
  });
  test('a worker lost while its hooks run: the hooks run again on the next worker, whose decision is then the one recorded', async () => {
    const hookLog = join(dir, 'hooks-slow.log');
    const execLog = join(dir, 'executions-slow.log');
    const config = await writeConfigDir(
      join(dir, 'config-slow'),
      { s: { command: process.execPath, args: [fixtureServer], env: { FIXTURE_LOG: execLog } } },
      {
        settings: {
          hooks: {
            PreToolUse: [
              {
                matcher: 'mcp__s__read_slow',
                hooks: [{ type: 'command', command: `bash ${hookScript} slow-rewrite`, timeout: 20 }],
              },
            ],
          },
        },
      },
    );
    const taskQueue = uniqueQueue('hooks-lost');
    const bundleFile = await workflowBundleFile(dir);
    const env = { TEMPORAL_ADDRESS: temporalAddress(), ...config, HOOK_LOG: hookLog };
    const pair = [
      await startTaggedWorker(taskQueue, bundleFile, env, 'worker-c'),
      await startTaggedWorker(taskQueue, bundleFile, env, 'worker-d'),
    ];
    workers.push(...pair);
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new TurnClient({ client: new Client({ connection }), taskQueue });
    try {
      const turn = await client.startTurn({
        sessionId: `hooks-lost-${Date.now()}`,
        workspace: dir,
        limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
      });
      for (const s of turn.status.servers) if (s.pid) serverPids.add(s.pid);
      const victim = pair.find((w) => w.workerQueue === turn.workerQueue)!;
      const survivor = pair.find((w) => w !== victim)!;
      const call = turn.callTool({
        id: 'slow-guard',
        name: 'mcp__s__read_slow',
        arguments: { ms: 10, tag: 'from-the-model' },
      });
      // The hook logs when it starts, then thinks for 4 s: the worker dies while it runs.
      assert.ok(
        await waitFor(async () => existsSync(hookLog) && (await readLines(hookLog)).length > 0, 30_000, 20),
        'the hook started',
      );
      process.kill(victim.pid, 'SIGKILL');

      const outcome = await within(60_000, 'the guarded call', call);
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.deepEqual(outcome.hooks?.pre?.updatedInput, { ms: 10, tag: survivor.tag });
      const runs = (await readLines(hookLog)).map((l) => JSON.parse(l) as { tag: string; id: string });
      assert.deepEqual(
        runs.filter((r) => r.id === 'slow-guard').map((r) => r.tag),
        [victim.tag, survivor.tag],
      );
      const tags = (await readLines(execLog))
        .map((l) => JSON.parse(l) as { tool: string; args: { tag?: string } })
        .filter((e) => e.tool === 'read_slow')
        .map((e) => e.args.tag);
      assert.deepEqual(tags, [survivor.tag], 'the call ran once, with the decision that was recorded');
      const h = await client.client.workflow.getHandle(turn.turnId).fetchHistory();
      const hookScheduled = (h.events ?? [])
        .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === ActivityName.preToolUseHooks)
        .map((e) => e.activityTaskScheduledEventAttributes!.taskQueue?.name);
      assert.deepEqual(hookScheduled, [victim.workerQueue, survivor.workerQueue]);
      await turn.end();
    } finally {
      await client.close();
    }
  });
});
