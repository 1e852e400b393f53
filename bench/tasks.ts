/**
 * What a call that runs for a while holds on the worker, side by side in one run: N concurrent
 * ordinary calls that answer after S seconds, and N concurrent calls that run as MCP tasks of S
 * seconds, on the task fixture over Streamable HTTP in both protocol eras (2025-11-25 experimental
 * tasks; 2026-07-28 tasks extension). Each row gets a fresh worker in its own process
 * (bench/tasksWorker.ts), which writes every second its main thread's heap used and its workflow
 * threads' (each after a full GC of that thread) and its RSS; the row's memory is that minus the same worker's, sampled after its turns started and before the calls
 * did. Every 500 ms the bench counts the activities the turns have started and not finished (each
 * holds one of the worker's activity slots) and the MCP requests open at the server (through a
 * counting proxy in the bench process); afterwards it reads the history bytes each task's polls add.
 *
 * Run on demand: `npm run build:bench && node dist/bench/tasks.js`. Knobs: BENCH_TASKS (N, default
 * 20), BENCH_SECONDS (S, default 20), TEMPORAL_ADDRESS (else an in-memory dev server).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { TurnClient, type Turn } from '../client/turnClient.js';
import { ActivityName } from '../contract/index.js';
import { tempDir } from '../test/support/harness.js';
import { runBench, sleep, startNode, stopProcess } from './procs.js';
import { benchQueue, connectClient, endBench, startTemporal, writeDurableBundle } from './setup.js';
import { cpuShare, machineLine, writeSection } from './support.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const SAMPLE_MS = 500;
const MEMORY_SAMPLE_MS = 1000;
/** The steady part of a row: from this share of S after the calls started until the first call ended. */
const STEADY_FROM = 0.25;
const BASELINE_MS = 5000;
const HistoryEvent = proto.temporal.api.history.v1.HistoryEvent;
const STARTED = proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const taskServer = fileURLToPath(new URL('../test/fixtures/taskServer.js', import.meta.url));
const workerScript = fileURLToPath(new URL('./tasksWorker.js', import.meta.url));
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const MiB = 2 ** 20;

interface Proxy {
  url: string;
  /** MCP requests (HTTP POSTs) the server has not answered yet. */
  open(): number;
  close(): void;
}

/**
 * The task fixture (its own process) behind a proxy in this process that counts the requests in
 * flight: an ordinary call holds one for its whole length, a task only while it is created or polled.
 */
async function startFixture(mode?: 'modern'): Promise<Proxy> {
  const fixture = await startNode<{ port: number }>(taskServer, mode ? [mode] : [], {
    env: { PATH: process.env.PATH },
    ready: /^\{"port":\d+\}$/m,
  });
  const upstream = fixture.info.port;
  const agent = new Agent({ keepAlive: true });
  let open = 0;
  const proxy = createServer((req, res) => {
    if (req.method === 'POST') {
      open += 1;
      res.once('close', () => (open -= 1));
    }
    const up = request(
      {
        host: '127.0.0.1',
        port: upstream,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, host: `127.0.0.1:${upstream}` },
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`,
    open: () => open,
    close: () => {
      proxy.closeAllConnections();
      proxy.close();
      agent.destroy();
    },
  };
}

interface RowSpec {
  label: string;
  task: boolean;
  tool: string;
  args: (tag: string, seconds: number) => Record<string, unknown>;
  configFile: string;
  fixture: Proxy;
}

interface Sample {
  t: number;
  slots: number;
  requests: number;
}

/** A line of the worker's memory log: the main thread's (with `rss`) or a workflow thread's (with `thread`). */
interface MemorySample {
  t: number;
  heapUsed: number;
  rss?: number;
  thread?: number;
}

interface Held {
  mean: number;
  max: number;
}

interface RowResult {
  spec: RowSpec;
  slots: Held;
  steadySlots: number;
  requests: Held;
  heap: Held;
  workflowHeap: Held;
  rss: Held;
  baseline: { heapUsed: number; workflowHeapUsed: number; rss: number };
  memorySamples: number;
  wallMs: number;
  polls?: { min: number; max: number; bytesPerPoll: number };
}

const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
const held = (v: number[]): Held => ({ mean: mean(v), max: Math.max(...v) });

/** Runs one call per turn, all at once, sampling the turns' started activities and the server's open requests until all end. */
async function concurrently(
  client: TurnClient,
  turns: Turn[],
  fixture: Proxy,
  call: (turn: Turn, i: number) => Promise<void>,
): Promise<{ samples: Sample[]; t0: number; firstEnd: number; wallMs: number }> {
  const samples: Sample[] = [];
  let running = true;
  const sampler = (async () => {
    while (running) {
      const t = Date.now();
      const requests = fixture.open();
      const described = await Promise.all(
        turns.map((turn) => client.client.workflow.getHandle(turn.turnId).describe()),
      );
      samples.push({
        t,
        requests,
        slots: described.reduce(
          (n, d) => n + (d.raw.pendingActivities ?? []).filter((a) => a.state === STARTED).length,
          0,
        ),
      });
      await sleep(SAMPLE_MS);
    }
  })();
  const t0 = Date.now();
  let firstEnd = Infinity;
  const settled = await Promise.allSettled(
    turns.map(async (turn, i) => {
      await call(turn, i);
      firstEnd = Math.min(firstEnd, Date.now());
    }),
  );
  const wallMs = Date.now() - t0;
  running = false;
  await sampler;
  const failed = settled.filter((r) => r.status === 'rejected');
  if (failed.length > 0)
    throw new Error(
      `${failed.length} of ${turns.length} calls failed; the first: ${String((failed[0] as PromiseRejectedResult).reason)}`,
    );
  return { samples, t0, firstEnd, wallMs };
}

/** The history bytes each task's polls added: from after `createTask` completed to the `taskResult` activity. */
async function pollCosts(client: TurnClient, turns: Turn[]): Promise<RowResult['polls']> {
  const polls: number[] = [];
  const perPoll: number[] = [];
  for (const turn of turns) {
    const events = (await client.client.workflow.getHandle(turn.turnId).fetchHistory()).events ?? [];
    const type = (i: number) => events[i]?.activityTaskScheduledEventAttributes?.activityType?.name;
    const created = events.findIndex((_, i) => type(i) === ActivityName.createTask);
    const result = events.findIndex((_, i) => type(i) === ActivityName.taskResult);
    const createdDone = events.findIndex(
      (e, i) =>
        i > created &&
        Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === Number(events[created]!.eventId),
    );
    const n = events.filter((_, i) => type(i) === ActivityName.pollTask).length;
    let bytes = 0;
    for (let i = createdDone + 1; i < result; i++) bytes += HistoryEvent.encode(events[i]!).finish().byteLength;
    polls.push(n);
    perPoll.push(bytes / n);
  }
  return { min: Math.min(...polls), max: Math.max(...polls), bytesPerPoll: mean(perPoll) };
}

async function runRow(
  spec: RowSpec,
  k: number,
  parts: { address: string; temporal: Client; bundle: string; dir: string },
): Promise<RowResult> {
  const memoryLog = join(parts.dir, `memory-${k}.jsonl`);
  const taskQueue = benchQueue('tasks');
  const worker = await startNode(
    workerScript,
    [
      '--task-queue',
      taskQueue,
      '--bundle',
      parts.bundle,
      '--memory-log',
      memoryLog,
      '--sample-ms',
      String(MEMORY_SAMPLE_MS),
    ],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TEMPORAL_ADDRESS: parts.address,
        DMCP_NO_USER_CONFIG: '1',
        DMCP_LOG_LEVEL: 'warn',
      },
      execArgv: ['--expose-gc'],
    },
  );
  const client = new TurnClient({ client: parts.temporal, taskQueue });
  const startTurn = (name: string) =>
    client.startTurn({
      sessionId: `bench-tasks-${name}-${Date.now()}`,
      workspace: parts.dir,
      servers: { mcpConfigFiles: [spec.configFile] },
      limits: { toolTimeoutMs: (SECONDS + 30) * 1000 },
    });
  const callOk = async (turn: Turn, id: string, seconds: number) => {
    const outcome = await turn.callTool({ id, name: spec.tool, arguments: spec.args(id, seconds) });
    if (outcome.status !== 'ok') throw new Error(`${spec.tool}: ${outcome.errorMessage}`);
  };
  let run: Awaited<ReturnType<typeof concurrently>>;
  let baseFrom: number;
  let baseTo: number;
  let polls: RowResult['polls'];
  try {
    // The worker loads and compiles the code of this kind of call before anything is measured.
    const warm = await startTurn(`warm${k}`);
    for (const id of ['w1', 'w2']) await callOk(warm, id, 2);
    await warm.end();
    const turns = await Promise.all(Array.from({ length: TASKS }, (_, i) => startTurn(`${k}-${i}`)));
    await sleep(3000);
    baseFrom = Date.now();
    await sleep(BASELINE_MS);
    baseTo = Date.now();
    run = await concurrently(client, turns, spec.fixture, (turn, i) => callOk(turn, `c${i}`, SECONDS));
    await Promise.all(turns.map((t) => t.end()));
    if (spec.task) polls = await pollCosts(client, turns);
  } finally {
    await stopProcess(worker);
  }
  log(`${spec.label}: done in ${(run.wallMs / 1000).toFixed(1)} s`);

  const lines = (await readFile(memoryLog, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as MemorySample);
  const memory = lines.filter((m) => m.thread === undefined);
  const threadIds = [...new Set(lines.flatMap((m) => (m.thread === undefined ? [] : [m.thread])))];
  if (threadIds.length === 0) throw new Error(`${spec.label}: no workflow thread wrote its heap`);
  const base = memory.filter((m) => m.t >= baseFrom && m.t <= baseTo);
  const steadyFrom = run.t0 + STEADY_FROM * SECONDS * 1000;
  const steadyTo = Math.min(run.t0 + SECONDS * 1000, run.firstEnd);
  const steady = memory.filter((m) => m.t >= steadyFrom && m.t <= steadyTo);
  if (base.length === 0 || steady.length === 0)
    throw new Error(`${spec.label}: ${base.length} baseline and ${steady.length} steady memory samples (S too short?)`);
  const series = (pick: (m: MemorySample) => number) =>
    memory.map((m) => `${((m.t - run.t0) / 1000).toFixed(0)}:${(pick(m) / MiB).toFixed(0)}`).join(' ');
  log(`${spec.label}: RSS MiB by s from the calls' start ${series((m) => m.rss!)}`);
  log(`${spec.label}: heap MiB by s from the calls' start ${series((m) => m.heapUsed)}`);
  // Workflow threads (one unless the SDK is told otherwise): each against its own baseline, summed.
  const perThread = threadIds.map((id) => {
    const own = lines.filter((m) => m.thread === id);
    const b = mean(own.filter((m) => m.t >= baseFrom && m.t <= baseTo).map((m) => m.heapUsed));
    return {
      base: b,
      steady: held(own.filter((m) => m.t >= steadyFrom && m.t <= steadyTo).map((m) => m.heapUsed - b)),
    };
  });
  const baseline = {
    heapUsed: mean(base.map((m) => m.heapUsed)),
    workflowHeapUsed: perThread.reduce((n, p) => n + p.base, 0),
    rss: mean(base.map((m) => m.rss!)),
  };
  if (!Number.isFinite(baseline.workflowHeapUsed))
    throw new Error(`${spec.label}: a workflow thread wrote no baseline sample`);
  return {
    spec,
    slots: held(run.samples.map((s) => s.slots)),
    steadySlots: mean(run.samples.filter((s) => s.t >= steadyFrom && s.t <= steadyTo).map((s) => s.slots)),
    requests: held(run.samples.map((s) => s.requests)),
    heap: held(steady.map((m) => m.heapUsed - baseline.heapUsed)),
    workflowHeap: {
      mean: perThread.reduce((n, p) => n + p.steady.mean, 0),
      max: perThread.reduce((n, p) => n + p.steady.max, 0),
    },
    rss: held(steady.map((m) => m.rss! - baseline.rss)),
    baseline,
    memorySamples: steady.length,
    wallMs: run.wallMs,
    ...(polls ? { polls } : {}),
  };
}

async function main(): Promise<void> {
  const share = cpuShare();
  const dir = await tempDir('dmcp-bench-tasks-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const fixtures: Proxy[] = [];
  const results: RowResult[] = [];
  try {
    const bundle = await writeDurableBundle(dir);
    const legacy = await startFixture();
    const modern = await startFixture('modern');
    fixtures.push(legacy, modern);
    const config = async (name: string, entry: Record<string, unknown>) => {
      const file = join(dir, `${name}.json`);
      await writeFile(file, JSON.stringify({ mcpServers: { jobs: { type: 'http', ...entry } } }));
      return file;
    };
    const legacyFile = await config('legacy', { url: legacy.url });
    // Without "tasks": "prefer" an ordinary call stays one: the 2026-07-28 server could answer any call with a task.
    const modernPlainFile = await config('modern-plain', { url: modern.url, protocol: '2026-07-28' });
    const modernTaskFile = await config('modern-tasks', { url: modern.url, protocol: '2026-07-28', tasks: 'prefer' });
    const longCall = (_tag: string, seconds: number) => ({ seconds });
    const longJob = (tag: string, seconds: number) => ({ seconds, tag });
    const specs: RowSpec[] = [
      {
        label: `2025-11-25: ${TASKS} ordinary calls answering after ${SECONDS} s`,
        task: false,
        tool: 'mcp__jobs__long_call',
        args: longCall,
        configFile: legacyFile,
        fixture: legacy,
      },
      {
        label: `2025-11-25: ${TASKS} calls as MCP tasks of ${SECONDS} s`,
        task: true,
        tool: 'mcp__jobs__long_job',
        args: longJob,
        configFile: legacyFile,
        fixture: legacy,
      },
      {
        label: `2026-07-28: ${TASKS} ordinary calls answering after ${SECONDS} s`,
        task: false,
        tool: 'mcp__jobs__long_call',
        args: longCall,
        configFile: modernPlainFile,
        fixture: modern,
      },
      {
        label: `2026-07-28: ${TASKS} calls as MCP tasks of ${SECONDS} s`,
        task: true,
        tool: 'mcp__jobs__long_job',
        args: longJob,
        configFile: modernTaskFile,
        fixture: modern,
      },
    ];
    for (const [k, spec] of specs.entries())
      results.push(await runRow(spec, k, { address: temporal.address, temporal: client, bundle, dir }));
  } finally {
    for (const f of fixtures) f.close();
    await endBench({ client, temporal, dir });
  }

  const mib = (bytes: number) => (bytes / MiB).toFixed(1);
  const kib = (bytes: number) => (bytes / 1024).toFixed(0);
  const slotRow = (r: RowResult) =>
    `| ${r.spec.label} | ${r.slots.mean.toFixed(2)} | ${r.slots.max} | ${(r.slots.mean / TASKS).toFixed(2)} | ${r.steadySlots.toFixed(2)} | ${r.requests.mean.toFixed(2)} | ${r.requests.max} | ${(r.wallMs / 1000).toFixed(1)} |`;
  const memoryRow = (r: RowResult) =>
    `| ${r.spec.label} | ${mib(r.heap.mean)} | ${kib(r.heap.mean / TASKS)} | ${mib(r.workflowHeap.mean)} | ${kib(r.workflowHeap.mean / TASKS)} | ${mib(r.rss.mean)} | ${mib(r.rss.max)} | ${kib(r.rss.mean / TASKS)} | ${mib(r.baseline.heapUsed)} / ${mib(r.baseline.workflowHeapUsed)} / ${mib(r.baseline.rss)} | ${r.memorySamples} |`;
  const taskRows = results.filter((r) => r.polls);
  const body = [
    `Command: \`npm run build:bench && node dist/bench/tasks.js\` (BENCH_TASKS=${TASKS}, BENCH_SECONDS=${SECONDS}). Machine: ${await machineLine()}; ${share()}. The machine was shared with other work while it ran: read the ratios, not the seconds.`,
    '',
    `Each row: a fresh durable-mcp worker in its own process (bench/tasksWorker.ts: nothing else runs there), the task fixture in its own process over Streamable HTTP (2025-11-25 experimental tasks, or the 2026-07-28 tasks extension with \`"tasks": "prefer"\`), ${TASKS} turns with one call each, all at once, after two warm-up calls of the same kind. ` +
      `Every ${SAMPLE_MS} ms the bench counted the turns' started activities (each holds one of the worker's activity slots) and the MCP requests (HTTP POSTs) the server had not answered yet, through a counting proxy in the bench process (which also holds the Temporal client; neither counts in the worker's memory).`,
    '',
    '| calls | activity slots held, mean | max | per call, mean | mean in the steady part | MCP requests open, mean | max | wall s |',
    '|---|---|---|---|---|---|---|---|',
    ...results.map(slotRow),
    '',
    `Memory held by the waiting calls: every ${MEMORY_SAMPLE_MS} ms the worker sampled the heap used of its main thread (activities, MCP clients and their open requests) and of the SDK's workflow thread (the turns' workflows, their timers and state), each after a full GC of that thread, so only what is still reachable, ` +
      `and the process's RSS (every thread, and the SDK's native core). The table gives those minus the same worker's baseline (the mean over ${BASELINE_MS / 1000} s after its ${TASKS} turns had started and before any call did), over the steady part of the row (from ${STEADY_FROM * SECONDS} s after the calls started until the first call ended: every call in flight, none ending).`,
    '',
    '| calls | main-thread heap held, mean MiB | per call, KiB | workflow-thread heap held, mean MiB | per call, KiB | RSS held, mean MiB | max MiB | per call, KiB | baseline main heap / workflow heap / RSS, MiB | samples |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(memoryRow),
    '',
    ...taskRows.map(
      (r) =>
        `${r.spec.label}: each task was polled ${r.polls!.min === r.polls!.max ? r.polls!.min : `${r.polls!.min}-${r.polls!.max}`} times; its polls added ${r.polls!.bytesPerPoll.toFixed(0)} bytes of history per poll on average (protobuf events as Temporal stores them: timer, \`pollTask\` activity, workflow tasks).`,
    ),
    '',
    'A task holds a slot and a server request only while one of its short activities (create, poll, result) runs; an ordinary call holds one of each for its whole length.',
  ].join('\n');
  process.stdout.write(`${body}\n`);
  await writeSection('tasks', 'Calls that run as MCP tasks: worker slots and memory held, history per poll', body);
}

runBench(main);
