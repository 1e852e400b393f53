/**
 * Promises created by workflow code per call: the SDK captures a stack trace for each promise a
 * workflow creates, so this count is a deterministic measure of the turn's workflow cost per call,
 * where CPU time on a shared 2-core machine moves by +-10% from round to round. One interactive turn
 * with the fixture echo server over stdio, 20 calls to warm up, then BENCH_PROMISE_CALLS (default 100)
 * sequential calls; the worker process is started with bench/promiseCounter.ts preloaded. With
 * BENCH_ALT_WORKER=<other build>/dist/test/fixtures/workerProcess.js (BENCH_ALT_LABEL) that build's
 * worker is counted the same way, side by side; and the bare baseline (bench/bareWorkflow.ts: an
 * Update that runs one no-op activity) as the floor.
 * Run on demand: `npm run build:bench && node dist/bench/promises.js` (part of `npm run bench`).
 * BENCH_PROMISE_FAST=1 counts the fast path instead: the echo server's entry marked `"retry": "safe"`
 * (a local activity per call), against a bare Update that runs one no-op local activity.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TurnClient } from '../client/turnClient.js';
import { tempDir } from '../test/support/harness.js';
import { echoFixture, runBench, sleep, stopProcess, type Started } from './procs.js';
import {
  benchQueue,
  connectClient,
  endBench,
  startBareWorker,
  startDurableWorker,
  startTemporal,
  writeDurableBundle,
} from './setup.js';
import { machineLine, writeSection } from './support.js';

const CALLS = Number(process.env.BENCH_PROMISE_CALLS ?? 100);
const FAST = process.env.BENCH_PROMISE_FAST === '1';
const counter = fileURLToPath(new URL('./promiseCounter.js', import.meta.url));
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

/** A lane to count on: one call, and how to end what it opened. */
interface Lane {
  call: () => Promise<void>;
  close: () => Promise<void>;
}

/**
 * Starts a worker (`start`, given the counter's preload and environment), opens a lane on it, and
 * returns the workflow promises per call over CALLS calls after 20 to warm up.
 */
async function promisesPerCall(
  label: string,
  start: (execArgv: string[], env: NodeJS.ProcessEnv) => Promise<Started>,
  open: () => Promise<Lane>,
): Promise<number> {
  const counts = await tempDir('dmcp-promise-counts-');
  const worker = await start(['--import', counter], { BENCH_PROMISE_DIR: counts });
  // Every workflow thread of the worker writes its own count.
  const created = () =>
    readdirSync(counts)
      .filter((f) => !f.endsWith('.part'))
      .reduce((sum, f) => sum + Number(readFileSync(`${counts}/${f}`, 'utf8')), 0);
  try {
    const lane = await open();
    for (let i = 0; i < 20; i++) await lane.call();
    await sleep(400);
    const before = created();
    if (before === 0) throw new Error(`${label}: the counter saw no workflow promise (was it preloaded?)`);
    for (let i = 0; i < CALLS; i++) await lane.call();
    await sleep(400);
    const perCall = (created() - before) / CALLS;
    log(`${label}: ${perCall.toFixed(2)} workflow promises per call`);
    await lane.close();
    return perCall;
  } finally {
    await stopProcess(worker);
    await rm(counts, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const dir = await tempDir('dmcp-promises-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const bundle = await writeDurableBundle(dir);
  const builds: [string, string | undefined][] = [['this build', undefined]];
  if (process.env.BENCH_ALT_WORKER)
    builds.push([process.env.BENCH_ALT_LABEL ?? process.env.BENCH_ALT_WORKER, process.env.BENCH_ALT_WORKER]);
  const rows: string[] = [];
  let n = 0;
  try {
    for (const [label, script] of builds) {
      const turns = new TurnClient({ client, taskQueue: benchQueue('promises') });
      const perCall = await promisesPerCall(
        label,
        (execArgv, env) =>
          startDurableWorker(temporal.address, turns.taskQueue, bundle, {
            execArgv,
            env,
            ...(script ? { script } : {}),
          }),
        async () => {
          const config = join(dir, 'fast.mcp.json');
          await writeFile(
            config,
            JSON.stringify({
              mcpServers: { fixture: { command: process.execPath, args: [echoFixture], retry: 'safe' } },
            }),
          );
          const servers = FAST
            ? { mcpConfigFiles: [config] }
            : { inlineSpecs: [`fixture:${process.execPath} ${echoFixture}`] };
          const turn = await turns.startTurn({ sessionId: `promises-${Date.now()}-${n}`, workspace: dir, servers });
          return {
            call: async () => {
              const outcome = await turn.callTool({
                id: `c${(n += 1)}`,
                name: 'mcp__fixture__echo',
                arguments: { text: 'count' },
              });
              if (outcome.status !== 'ok') throw new Error(`${label}: ${outcome.errorMessage}`);
            },
            close: () => turn.end().then(() => undefined),
          };
        },
      );
      rows.push(`| ${label} | ${perCall.toFixed(2)} |`);
    }
    const queue = benchQueue('promises-bare');
    const bare = await promisesPerCall(
      'bare',
      (execArgv, env) => startBareWorker(temporal.address, queue, { execArgv, env }),
      async () => {
        const handle = await client.workflow.start('bareTurn', {
          taskQueue: queue,
          workflowId: `promises-bare-${Date.now()}`,
          args: [],
        });
        return {
          call: async () => {
            const id = `b${(n += 1)}`;
            await handle.executeUpdate(FAST ? 'local' : 'call', { args: [id, { text: 'count' }], updateId: id });
          },
          close: () => handle.executeUpdate('end', { updateId: 'end' }).then(() => undefined),
        };
      },
    );
    rows.push(`| bare Temporal (Update -> no-op ${FAST ? 'local ' : ''}activity), the floor | ${bare.toFixed(2)} |`);
    const body = [
      `Command: \`npm run build:bench && ${FAST ? 'BENCH_PROMISE_FAST=1 ' : ''}node dist/bench/promises.js\`${FAST ? '' : ' (part of `npm run bench`)'}${builds.length > 1 ? `; here with \`BENCH_ALT_WORKER\` for the "${builds[1]![0]}" row` : ''}. Machine: ${await machineLine()}.`,
      '',
      `Promises created by workflow code (the turn's workflow and the SDK's workflow runtime, in the workflow's vm context) per sequential \`callTool\` of the fixture echo server over stdio${FAST ? ' (its entry marked `"retry": "safe"`: the fast path, a local activity)' : ''}, over ${CALLS} calls after 20 to warm up, counted by a promise hook preloaded into the worker (bench/promiseCounter.ts). The SDK's own hook captures and source-maps a stack trace for each of them: the count is the part of the worker's CPU per call that the workflow code decides, measured without the noise of CPU time.`,
      '',
      '| worker | workflow promises per call |',
      '|---|---|',
      ...rows,
    ].join('\n');
    process.stdout.write(`${body}\n`);
    await writeSection(
      'promises',
      FAST ? 'Workflow promises per call on the fast path' : 'Workflow promises per call',
      body,
    );
  } finally {
    await endBench({ client, temporal, dir });
  }
}

runBench(main);
