/**
 * Shared calls: a remote server of the stateless 2026-07-28 revision is called from any worker, so
 * the turn is not pinned for it. Two worker processes, the modern fixture over HTTP and a stdio
 * server in the same turn; the worker holding the session's servers is SIGKILLed, and the modern
 * server's calls go on at once on the survivor, with no reconcile. Real Temporal, real servers.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { TurnClient } from '../../client/turnClient.js';
import { ActivityName, type CallToolInput } from '../../contract/index.js';
import { decodeHistoryPayloads } from '../../payloads/decodeHistory.js';
import { bundleWorkflows } from '../../worker/index.js';
import {
  fixtureServer,
  killGroups,
  readLines,
  startListening,
  startWorkerProcess,
  stopWorkerProcess,
  tempDir,
  temporalAddress,
  uniqueQueue,
  type WorkerProcess,
} from '../support/harness.js';
import { textOf } from '../support/content.js';

const modernFixture = fileURLToPath(new URL('../fixtures/modernServer.js', import.meta.url));
const workers: WorkerProcess[] = [];
const started = new Set<number>();

after(async () => {
  await Promise.all(workers.map(stopWorkerProcess));
  killGroups(started);
});

/** Each `callTool` activity of the turn, from its history: the call, the queue and the worker that ran it. */
async function callTraces(client: TurnClient, turnId: string) {
  const converter = client.client.options.loadedDataConverter;
  const history = await client.client.workflow.getHandle(turnId).fetchHistory();
  await decodeHistoryPayloads(history, { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage });
  const calls = new Map<number, { callId: string; queue: string; shared: boolean; identity?: string }>();
  let reconciles = 0;
  const failures: string[] = [];
  for (const e of history.events ?? []) {
    const failure = e.activityTaskFailedEventAttributes?.failure ?? e.activityTaskTimedOutEventAttributes?.failure;
    if (failure) failures.push(failure.message ?? '');
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === ActivityName.reconcileServers) reconciles += 1;
    if (scheduled?.activityType?.name === ActivityName.callTool) {
      const input = converter.payloadConverter.fromPayload<CallToolInput>(scheduled.input!.payloads![0]!);
      calls.set(Number(e.eventId), {
        callId: input.callId,
        queue: scheduled.taskQueue?.name ?? '',
        shared: input.shared !== undefined,
      });
    }
    const startedAttrs = e.activityTaskStartedEventAttributes;
    const call = startedAttrs && calls.get(Number(startedAttrs.scheduledEventId));
    if (call) call.identity = startedAttrs.identity ?? undefined;
  }
  return { calls: [...calls.values()], reconciles, failures };
}

test(
  'a modern remote server is called from any worker: its calls go on after the holder is killed, with no reconcile; stdio stays pinned',
  { timeout: 180_000 },
  async () => {
    const dir = await tempDir('dmcp-shared-');
    const modernLog = join(dir, 'modern.log');
    const stdioLog = join(dir, 'stdio.log');
    const url = await startListening([modernFixture, 'http'], /\{"url":"([^"]+)"\}/, started, {
      FIXTURE_LOG: modernLog,
    });
    const config = join(dir, 'mcp.json');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: {
          modern: { type: 'http', url, protocol: '2026-07-28' },
          local: { command: process.execPath, args: [fixtureServer] },
        },
      }),
    );
    const bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
    const taskQueue = uniqueQueue('shared');
    // Regular activities only: where each call ran is then in history.
    const env = { TEMPORAL_ADDRESS: temporalAddress(), FIXTURE_LOG: stdioLog, DMCP_FAST_PATH: 'false' };
    workers.push(
      ...(await Promise.all([
        startWorkerProcess(taskQueue, bundleFile, env),
        startWorkerProcess(taskQueue, bundleFile, env),
      ])),
    );
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new TurnClient({ client: new Client({ connection }), taskQueue });
    try {
      const turn = await client.startTurn({
        sessionId: `shared-${Date.now()}`,
        workspace: dir,
        servers: { mcpConfigFiles: [config] },
        limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
      });
      for (const s of turn.status.servers) if (s.pid) started.add(s.pid);
      assert.deepEqual(
        turn.status.servers.map((s) => [s.name, s.state, s.era]),
        [
          ['local', 'ready', 'legacy'],
          ['modern', 'ready', 'modern'],
        ],
      );
      const holder = workers.find((w) => w.workerQueue === turn.workerQueue)!;
      const survivor = workers.find((w) => w.workerQueue !== turn.workerQueue)!;
      assert.ok(holder && survivor, 'the turn is held by one of our two workers');

      const echo = (id: string) => turn.callTool({ id, name: 'mcp__modern__echo', arguments: { text: id } });
      const before = await echo('before');
      assert.equal(before.status, 'ok', before.errorMessage);
      const pinned = await turn.callTool({ id: 'pinned', name: 'mcp__local__echo', arguments: { text: 'pinned' } });
      assert.equal(pinned.status, 'ok', pinned.errorMessage);

      const reconcilesBefore = (await callTraces(client, turn.turnId)).reconciles;
      process.kill(holder.pid, 'SIGKILL');
      const afterKill = [];
      for (const id of ['after-1', 'after-2', 'after-3']) afterKill.push(await echo(id));
      for (const outcome of afterKill) assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.deepEqual(
        afterKill.map((o) => textOf(o.content[0])),
        ['after-1', 'after-2', 'after-3'],
      );
      // Three calls on the survivor, with nothing to wait out: no heartbeat or schedule-to-start timeout.

      const { calls, reconciles, failures } = await callTraces(client, turn.turnId);
      assert.equal(
        reconciles,
        reconcilesBefore,
        `no reconcile after the kill: the modern server needed no holder (failures: ${JSON.stringify(failures)})`,
      );
      const byId = Object.fromEntries(calls.map((c) => [c.callId, c]));
      assert.equal(byId.pinned?.shared, false, "the stdio server's call carried no grant");
      assert.equal(byId.pinned?.identity, holder.workerQueue, "the stdio server's call ran on the holder");
      for (const id of ['before', 'after-1', 'after-2', 'after-3']) {
        assert.equal(byId[id]?.queue, taskQueue, `${id} was sent to the shared queue`);
        assert.equal(byId[id]?.shared, true, `${id} carried the grant`);
      }
      for (const id of ['after-1', 'after-2', 'after-3'])
        assert.equal(byId[id]?.identity, survivor.workerQueue, `${id} ran on the survivor`);

      const echoed = (await readLines(modernLog))
        .map((l) => JSON.parse(l) as { tool?: string; era?: string })
        .filter((l) => l.tool === 'echo');
      assert.equal(echoed.length, 4, 'each modern call ran once');
      assert.ok(echoed.every((l) => l.era === 'modern'));
      await turn.end();
    } finally {
      await client.close();
    }
  },
);
