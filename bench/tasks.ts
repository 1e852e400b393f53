/**
 * What a call that runs for a while holds on the worker, side by side in one run on one worker and
 * one server (the task fixture over Streamable HTTP): N concurrent ordinary calls that answer after
 * S seconds, then N concurrent calls that run as MCP tasks of S seconds. Every 500 ms it counts the
 * activities the turns have started and not finished (each holds one of the worker's activity
 * slots, and an ordinary call a server request too), and it reads the history bytes each task's
 * polls add.
 *
 * Run on demand: `npm run build:bench && node dist/bench/tasks.js`. Knobs: BENCH_TASKS (N, default
 * 20), BENCH_SECONDS (S, default 20), TEMPORAL_ADDRESS (else an in-memory dev server).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { TurnClient, type Turn } from '../client/turnClient.js';
import { ActivityName } from '../contract/index.js';
import { startDevServer } from '../dev/devServer.js';
import { bundleWorkflows, startWorker } from '../worker/index.js';
import { tempDir, uniqueQueue } from '../test/support/harness.js';
import { machineLine, writeSection } from './support.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const SAMPLE_MS = 500;
const HistoryEvent = proto.temporal.api.history.v1.HistoryEvent;
const STARTED = proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const taskServer = fileURLToPath(new URL('../test/fixtures/taskServer.js', import.meta.url));
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

/** The task fixture on a free port; returns its URL and a way to stop it. */
async function startTaskServer(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [taskServer], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const match = /^\{"port":(\d+)\}$/m.exec((buffered += chunk));
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the task fixture exited with ${code}`)));
  });
  child.stdout.resume();
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill('SIGKILL') };
}

interface Held {
  mean: number;
  max: number;
  samples: number;
  wallMs: number;
}

/** Runs one call per turn, all at once, sampling the started activities of the turns until all end. */
async function concurrently(client: TurnClient, turns: Turn[], call: (turn: Turn, i: number) => Promise<void>): Promise<Held> {
  const counts: number[] = [];
  let running = true;
  const sampler = (async () => {
    while (running) {
      const described = await Promise.all(turns.map((t) => client.client.workflow.getHandle(t.turnId).describe()));
      counts.push(described.reduce((n, d) => n + (d.raw.pendingActivities ?? []).filter((a) => a.state === STARTED).length, 0));
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
  })();
  const t0 = performance.now();
  const settled = await Promise.allSettled(turns.map(call));
  const wallMs = performance.now() - t0;
  running = false;
  await sampler;
  const failed = settled.filter((r) => r.status === 'rejected');
  if (failed.length > 0) throw new Error(`${failed.length} of ${turns.length} calls failed; the first: ${String((failed[0] as PromiseRejectedResult).reason)}`);
  return { mean: counts.reduce((a, b) => a + b, 0) / counts.length, max: Math.max(...counts), samples: counts.length, wallMs };
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const server = process.env.TEMPORAL_ADDRESS ? undefined : await startDevServer({ headless: true });
  const address = process.env.TEMPORAL_ADDRESS ?? server!.address;
  const dir = await tempDir('dmcp-bench-tasks-');
  const fixture = await startTaskServer();
  const configFile = join(dir, 'mcp.json');
  await writeFile(configFile, JSON.stringify({ mcpServers: { jobs: { type: 'http', url: fixture.url } } }));
  const taskQueue = uniqueQueue('bench-tasks');
  const connection = await NativeConnection.connect({ address });
  const worker = await startWorker({ connection, taskQueue, workflowBundle: await bundleWorkflows(), logger: pino({ level: 'silent' }), env: { PATH: process.env.PATH, DMCP_NO_USER_CONFIG: '1' } });
  const client = new TurnClient({ client: new Client({ connection: await Connection.connect({ address }) }), taskQueue });
  const startTurns = () =>
    Promise.all(Array.from({ length: TASKS }, (_, i) => client.startTurn({ sessionId: `bench-tasks-${Date.now()}-${i}`, workspace: dir, servers: { mcpConfigFiles: [configFile] }, limits: { toolTimeoutMs: (SECONDS + 30) * 1000 } })));
  let plain: Held;
  let tasks: Held;
  const perPoll: number[] = [];
  const polls: number[] = [];
  try {
    const plainTurns = await startTurns();
    plain = await concurrently(client, plainTurns, async (turn, i) => {
      const outcome = await turn.callTool({ id: `p${i}`, name: 'mcp__jobs__long_call', arguments: { seconds: SECONDS } });
      if (outcome.status !== 'ok') throw new Error(`long_call: ${outcome.errorMessage}`);
    });
    await Promise.all(plainTurns.map((t) => t.end()));
    log(`${TASKS} ordinary calls of ${SECONDS} s done`);

    const taskTurns = await startTurns();
    tasks = await concurrently(client, taskTurns, async (turn, i) => {
      const outcome = await turn.callTool({ id: `t${i}`, name: 'mcp__jobs__long_job', arguments: { seconds: SECONDS, tag: `t${i}` } });
      if (outcome.status !== 'ok') throw new Error(`long_job: ${outcome.errorMessage}`);
    });
    await Promise.all(taskTurns.map((t) => t.end()));
    log(`${TASKS} tasks of ${SECONDS} s done`);

    for (const turn of taskTurns) {
      const events = (await client.client.workflow.getHandle(turn.turnId).fetchHistory()).events ?? [];
      const type = (i: number) => events[i]?.activityTaskScheduledEventAttributes?.activityType?.name;
      const created = events.findIndex((_, i) => type(i) === ActivityName.createTask);
      const result = events.findIndex((_, i) => type(i) === ActivityName.taskResult);
      // From the event after createTask's completion to the taskResult activity: the polls and their timers.
      const createdDone = events.findIndex((e, i) => i > created && Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === Number(events[created]!.eventId));
      const n = events.filter((_, i) => type(i) === ActivityName.pollTask).length;
      let bytes = 0;
      for (let i = createdDone + 1; i < result; i++) bytes += HistoryEvent.encode(events[i]!).finish().byteLength;
      polls.push(n);
      perPoll.push(bytes / n);
    }
  } finally {
    await worker.shutdown();
    await connection.close();
    await client.close();
    fixture.stop();
    await server?.stop();
  }

  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  const row = (label: string, h: Held) => `| ${label} | ${h.mean.toFixed(2)} | ${h.max} | ${(h.mean / TASKS).toFixed(2)} | ${(h.wallMs / 1000).toFixed(1)} |`;
  const body = [
    `Command: \`npm run build:bench && node dist/bench/tasks.js\` (BENCH_TASKS=${TASKS}, BENCH_SECONDS=${SECONDS}). Machine: ${await machineLine()}.`,
    '',
    `One worker in the bench process, the task fixture over Streamable HTTP, ${TASKS} turns with one call each, all at once; ` +
      `the turns' started activities counted every ${SAMPLE_MS} ms. The machine was shared with other work while it ran: read the ratios, not the seconds.`,
    '',
    '| calls | activity slots held, mean | max | per call, mean | wall s |',
    '|---|---|---|---|---|',
    row(`${TASKS} ordinary calls answering after ${SECONDS} s`, plain),
    row(`${TASKS} calls as MCP tasks of ${SECONDS} s`, tasks),
    '',
    `Each task was polled ${Math.min(...polls)}-${Math.max(...polls)} times; its polls added ${mean(perPoll).toFixed(0)} bytes of history per poll on average (protobuf events as Temporal stores them: timer, \`pollTask\` activity, workflow tasks). ` +
      'A task holds a slot only while one of its short activities (create, poll, result) runs; an ordinary call holds one, and a server request, for its whole length.',
  ].join('\n');
  process.stdout.write(`${body}\n`);
  await writeSection('Calls that run as MCP tasks: worker slots held, history per poll', body);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  },
);
