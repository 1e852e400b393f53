/**
 * Profiles the hot path: sequential echo calls (fixture server, stdio) through durable-mcp
 * and through the bare-Temporal baseline, with `node --cpu-prof` on both worker processes and the
 * inspector's profiler on this (client) process. Only the samples taken while the calls ran count
 * (start-up is cut off by time window). Writes the top self-time functions and the split by
 * component into bench/results/profile.md. Run on demand: `npm run build:bench && node dist/bench/profile.js`
 * (BENCH_PROFILE_CALLS, default 300; BENCH_PROFILE_DIR keeps the .cpuprofile files).
 * BENCH_PROFILE_FAST=1 profiles the fast path instead: a retry-safe echo (a local activity) against
 * a bare Update -> local activity, into its own section.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { TurnClient } from '../client/turnClient.js';
import { tempDir } from '../test/support/harness.js';
import { monotonicUs, summarizeDir, summarize, type CpuProfile, type ProfileSummary } from './cpuProfile.js';
import { echoFixture, killStarted, runBench, stopProcess, treeCpuMs } from './procs.js';
import {
  benchQueue,
  connectClient,
  startBareWorker,
  startDurableWorker,
  startTemporal,
  writeDurableBundle,
} from './setup.js';
import { loadLine, machineLine, writeSection } from './support.js';

const CALLS = Number(process.env.BENCH_PROFILE_CALLS ?? 300);
const FAST = process.env.BENCH_PROFILE_FAST === '1';
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

interface Measured {
  window: { fromUs: number; toUs: number };
  workerCpuMs: number;
  wallMs: number;
  client: ProfileSummary;
}

async function drive(session: Session, call: (i: number) => Promise<void>, workerPid: number): Promise<Measured> {
  for (let i = 0; i < 20; i++) await call(-1 - i);
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
  const cpu0 = treeCpuMs(workerPid).self;
  const fromUs = monotonicUs();
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) await call(i);
  const wallMs = performance.now() - t0;
  const toUs = monotonicUs();
  const workerCpuMs = treeCpuMs(workerPid).self - cpu0;
  const { profile } = await session.post('Profiler.stop');
  return { window: { fromUs, toUs }, workerCpuMs, wallMs, client: summarize(profile as unknown as CpuProfile, 12) };
}

async function main(): Promise<void> {
  const dir = await tempDir('dmcp-profile-');
  const profDir = process.env.BENCH_PROFILE_DIR ?? join(dir, 'profiles');
  await mkdir(profDir, { recursive: true });
  const temporal = await startTemporal();
  let client: Client | undefined;
  const session = new Session();
  session.connect();
  try {
    client = await connectClient(temporal.address);
    const bundle = await writeDurableBundle(dir);
    const durableQueue = benchQueue('prof-durable');
    const bareQueue = benchQueue('prof-bare');
    const durableWorker = await startDurableWorker(temporal.address, durableQueue, bundle, {
      execArgv: ['--cpu-prof', '--cpu-prof-dir', join(profDir, 'durable')],
    });
    const bareWorker = await startBareWorker(temporal.address, bareQueue, {
      execArgv: ['--cpu-prof', '--cpu-prof-dir', join(profDir, 'bare')],
    });

    const turns = new TurnClient({ client, taskQueue: durableQueue });
    const config = join(dir, 'fast.mcp.json');
    await writeFile(
      config,
      JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [echoFixture], retry: 'safe' } } }),
    );
    const servers = FAST
      ? { mcpConfigFiles: [config] }
      : { inlineSpecs: [`fixture:${process.execPath} ${echoFixture}`] };
    const turn = await turns.startTurn({ sessionId: `prof-${Date.now()}`, workspace: dir, servers });
    log(`profiling ${CALLS} durable-mcp calls`);
    const durable = await drive(
      session,
      async (i) => {
        const o = await turn.callTool({ id: `p${i}`, name: 'mcp__fixture__echo', arguments: { text: `call ${i}` } });
        if (o.status !== 'ok') throw new Error(o.errorMessage);
      },
      durableWorker.pid,
    );
    await turn.end();

    const handle = await client.workflow.start('bareTurn', {
      taskQueue: bareQueue,
      workflowId: `prof-bare-${Date.now()}`,
      args: [],
    });
    log(`profiling ${CALLS} bare Temporal calls`);
    const bare = await drive(
      session,
      async (i) => {
        await handle.executeUpdate(FAST ? 'local' : 'call', {
          args: [`p${i}`, { text: `call ${i}` }],
          updateId: `p${i}`,
        });
      },
      bareWorker.pid,
    );
    await handle.executeUpdate('end', { updateId: 'end' });

    await stopProcess(durableWorker);
    await stopProcess(bareWorker);
    for (const which of ['durable', 'bare']) {
      const files = await readdir(join(profDir, which)).catch(() => []);
      if (files.length === 0) throw new Error(`the ${which} worker wrote no profile`);
    }
    const durableWorkerProfile = await summarizeDir(join(profDir, 'durable'), 15, durable.window);
    const bareWorkerProfile = await summarizeDir(join(profDir, 'bare'), 10, bare.window);
    await writeReport({ durable, bare, durableWorkerProfile, bareWorkerProfile, kept: process.env.BENCH_PROFILE_DIR });
  } finally {
    session.disconnect();
    await client?.connection.close().catch(() => undefined);
    await temporal.stop().catch(() => undefined);
    killStarted();
    if (!process.env.BENCH_PROFILE_DIR) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

function pct(part: number, whole: number): string {
  return `${((100 * part) / whole).toFixed(1)}%`;
}

function componentTable(a: ProfileSummary, b: ProfileSummary, callsA: number, callsB: number): string[] {
  const names = [...new Set([...a.components, ...b.components].map((c) => c.component))];
  const get = (s: ProfileSummary, n: string) => s.components.find((c) => c.component === n)?.selfMs ?? 0;
  names.sort((x, y) => get(a, y) - get(a, x));
  return [
    '| component | durable-mcp worker (ms/call) | share | bare worker (ms/call) | share |',
    '|---|---|---|---|---|',
    ...names.map(
      (n) =>
        `| ${n} | ${(get(a, n) / callsA).toFixed(2)} | ${pct(get(a, n), a.busyMs)} | ${(get(b, n) / callsB).toFixed(2)} | ${pct(get(b, n), b.busyMs)} |`,
    ),
    `| **total sampled** | **${(a.busyMs / callsA).toFixed(2)}** | | **${(b.busyMs / callsB).toFixed(2)}** | |`,
  ];
}

async function writeReport(r: {
  durable: Measured;
  bare: Measured;
  durableWorkerProfile: ProfileSummary;
  bareWorkerProfile: ProfileSummary;
  kept?: string;
}): Promise<void> {
  const fn = (s: ProfileSummary, calls: number) => [
    '| self time (ms/call) | share | function | component |',
    '|---|---|---|---|',
    ...s.functions.map(
      (f) => `| ${(f.selfMs / calls).toFixed(3)} | ${pct(f.selfMs, s.busyMs)} | \`${f.name}\` | ${f.component} |`,
    ),
  ];
  const lines = [
    `Command: \`npm run build:bench && ${FAST ? 'BENCH_PROFILE_FAST=1 ' : ''}node dist/bench/profile.js\`${FAST ? '' : ' (part of `npm run bench`)'}. Machine: ${await machineLine()}; ${loadLine()}.`,
    '',
    `${CALLS} sequential ${FAST ? 'retry-safe ' : ''}echo calls (fixture server, stdio${FAST ? ', `"retry": "safe"`: the fast path' : ''}) through durable-mcp, then ${CALLS} Updates to the bare baseline (Update -> no-op ${FAST ? 'local ' : ''}activity), each worker in its own process under \`node --cpu-prof\`; this client process under the inspector's profiler. Only samples taken while the calls ran count. Aggregated by bench/cpuProfile.ts (\`node dist/bench/cpuProfile.js FILE.cpuprofile\` prints the same for any profile).`,
    '',
    `Wall time per call: durable-mcp ${(r.durable.wallMs / CALLS).toFixed(1)} ms, bare ${(r.bare.wallMs / CALLS).toFixed(1)} ms. Worker process CPU per call (all threads, from /proc): durable-mcp ${(r.durable.workerCpuMs / CALLS).toFixed(2)} ms, bare ${(r.bare.workerCpuMs / CALLS).toFixed(2)} ms; of that, JavaScript sampled by V8 (main thread + workflow worker thread): durable-mcp ${(r.durableWorkerProfile.busyMs / CALLS).toFixed(2)} ms, bare ${(r.bareWorkerProfile.busyMs / CALLS).toFixed(2)} ms. The rest is the SDK's Rust core (its own threads: gRPC, history state machines), which V8 cannot sample.`,
    '',
    '### Worker process, by component',
    '',
    ...componentTable(r.durableWorkerProfile, r.bareWorkerProfile, CALLS, CALLS),
    '',
    '### durable-mcp worker: top self time',
    '',
    ...fn(r.durableWorkerProfile, CALLS),
    '',
    '### bare worker: top self time',
    '',
    ...fn(r.bareWorkerProfile, CALLS),
    '',
    '### Client process (TurnClient / WorkflowHandle), top self time',
    '',
    `durable-mcp client: ${(r.durable.client.busyMs / CALLS).toFixed(2)} ms/call sampled; bare client: ${(r.bare.client.busyMs / CALLS).toFixed(2)} ms/call.`,
    '',
    ...fn(r.durable.client, CALLS),
  ];
  if (r.kept) lines.push('', `Profiles kept in ${r.kept}.`);
  const body = lines.join('\n');
  process.stdout.write(`${body}\n`);
  await writeSection(
    'profile',
    FAST
      ? 'Hot-path profile of the fast path (durable-mcp vs bare Update -> local activity)'
      : 'Hot-path profile (durable-mcp vs bare Temporal)',
    body,
  );
}

runBench(main);
