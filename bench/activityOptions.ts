/**
 * What the options of a durable-mcp side-effecting call cost on the server, and what eager dispatch
 * saves, on bare Temporal (bench/bareWorkflow.ts) side by side in one run on the tuned dev server:
 * an Update answered with no activity (the floor), and an Update running a no-op activity on a
 * worker's own queue or on the workflow's queue (dispatched eagerly), each with plain options and
 * with the call's (heartbeat and schedule-to-start timeouts, the UI label, one attempt).
 *
 * Run on demand: `npm run build:bench && node dist/bench/activityOptions.js`. Knobs:
 * BENCH_OPTS_CALLS (sequential calls per variant and round, default 60), BENCH_OPTS_ROUNDS (default 3).
 */
import type { WorkflowHandle } from '@temporalio/client';
import { tempDir } from '../test/support/harness.js';
import { runBench, stopProcess } from './procs.js';
import { benchQueue, connectClient, endBench, startBareWorker, startTemporal } from './setup.js';
import { cpuShare, machineLine, percentile, writeSection } from './support.js';

const CALLS = Number(process.env.BENCH_OPTS_CALLS ?? 60);
const ROUNDS = Number(process.env.BENCH_OPTS_ROUNDS ?? 3);
let seq = 0;

async function main(): Promise<void> {
  const share = cpuShare();
  const dir = await tempDir('dmcp-bench-opts-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const queue = benchQueue('opts');
  const worker = await startBareWorker(temporal.address, queue);
  const handles: WorkflowHandle[] = [];
  try {
    const start = async (args: unknown[]) => {
      const h = await client.workflow.start('bareTurn', {
        taskQueue: queue,
        workflowId: `opts-${Date.now().toString(36)}-${seq++}`,
        args,
      });
      handles.push(h);
      return h;
    };
    const pinned = worker.info.pinnedQueue;
    const call = (h: WorkflowHandle) => async () => {
      const id = `c${seq++}`;
      await h.executeUpdate('call', { args: [id, { text: id }], updateId: id });
    };
    const floor = await start([pinned]);
    const variants: { label: string; run: () => Promise<void> }[] = [
      {
        label: 'floor: bare Update, no activity',
        run: async () => {
          const id = `f${seq++}`;
          await floor.executeUpdate('floor', { args: [id], updateId: id });
        },
      },
      { label: "activity on the worker's queue, plain options", run: call(await start([pinned])) },
      {
        label: "activity on the worker's queue, a side-effecting call's options",
        run: call(await start([pinned, true])),
      },
      { label: "activity on the workflow's queue (eager), plain options", run: call(await start([undefined])) },
      {
        label: "activity on the workflow's queue (eager), a side-effecting call's options",
        run: call(await start([undefined, true])),
      },
    ];
    for (const v of variants) for (let i = 0; i < 5; i += 1) await v.run();
    const rounds: number[][] = variants.map(() => []);
    for (let r = 0; r < ROUNDS; r += 1) {
      const got: number[][] = variants.map(() => []);
      for (let i = 0; i < CALLS; i += 1) {
        for (let k = 0; k < variants.length; k += 1) {
          const at = (k + r) % variants.length;
          const t0 = performance.now();
          await variants[at]!.run();
          got[at]!.push(performance.now() - t0);
        }
      }
      got.forEach((g, k) => rounds[k]!.push(percentile(g, 50)));
    }
    const ratio = (k: number) =>
      rounds[k]!.map((v, r) => v / rounds[0]![r]!).sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
    const body = `Machine: ${await machineLine()}; ${share()}.
Command: \`npm run build:bench && node dist/bench/activityOptions.js\` (${ROUNDS} rounds of ${CALLS} sequential Updates per variant, interleaved call by call, order rotated each round; embedded tuned dev server as \`dev\` starts it; the bare worker of bench/bareWorker.ts).

A side-effecting call's options: heartbeat timeout 10 s, schedule-to-start timeout 10 s, the tool's name as summary, one attempt with non-retryable types.

| variant | p50 per round (ms) | p50 / floor (median of rounds) |
|---|---|---|
${variants.map((v, k) => `| ${v.label} | ${rounds[k]!.map((x) => x.toFixed(1)).join(' / ')} | ${k === 0 ? '1.00' : ratio(k).toFixed(2)} |`).join('\n')}
`;
    process.stdout.write(`${body}\n`);
    await writeSection('activityOptions', "Bare Temporal: a call's activity options and eager dispatch", body);
  } finally {
    for (const h of handles) await h.executeUpdate('end', { updateId: 'end' }).catch(() => undefined);
    await stopProcess(worker).catch(() => undefined);
    await endBench({ client, temporal, dir });
  }
}

runBench(main);
