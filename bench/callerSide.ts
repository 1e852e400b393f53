/**
 * A fast call as the caller sees it, against bare Temporal doing the same MCP call: both driven
 * from one separate client process (bench/callerClient.ts), one Update per call, results decoded;
 * ours through `TurnClient` to a durable-mcp worker whose config dir marks the fixture's echo
 * retry-safe (the fast path) and which runs with `durable-mcp worker`'s data converter, bare through a `WorkflowHandle` to a bare worker whose Update runs a
 * local activity making the same echo over stdio with the MCP SDK's client; and the floor, an
 * Update that runs no activity. One embedded tuned dev server, as `dev` starts it.
 *
 * Run on demand: `npm run build:bench && node dist/bench/callerSide.js`. Knobs: BENCH_CALLER_CALLS
 * (calls per contender and round, default 40), BENCH_CALLER_ROUNDS (default 3), BENCH_CALLER_PLAIN=1
 * (the SDK's default data converter on both sides of ours, to see what the codec costs).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test/support/harness.js';
import { echoFixture, runBench, startNode, stopProcess } from './procs.js';
import {
  benchQueue,
  connectClient,
  endBench,
  startBareWorker,
  startDurableWorker,
  startTemporal,
  writeDurableBundle,
} from './setup.js';
import { cpuShare, machineLine, percentile, writeSection } from './support.js';

const CALLS = Number(process.env.BENCH_CALLER_CALLS ?? 40);
const ROUNDS = Number(process.env.BENCH_CALLER_ROUNDS ?? 3);
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

runBench(async () => {
  const dir = await tempDir('dmcp-bench-caller-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const load = cpuShare();
  try {
    const configDir = join(dir, 'config');
    await mkdir(configDir);
    await writeFile(
      join(configDir, 'mcp.json'),
      JSON.stringify({ mcpServers: { safe: { command: process.execPath, args: [echoFixture], retry: 'safe' } } }),
    );
    const dataDir = join(dir, 'data');
    const durableQueue = benchQueue('caller');
    const bareQueue = benchQueue('caller-bare');
    const env = { DMCP_CONFIG_DIR: configDir, DMCP_NO_USER_CONFIG: '0', DMCP_DATA_DIR: dataDir };
    const worker = await startDurableWorker(temporal.address, durableQueue, await writeDurableBundle(dir), {
      env,
      codec: process.env.BENCH_CALLER_PLAIN !== '1',
    });
    const bare = await startBareWorker(temporal.address, bareQueue);
    log(`workers up; ${CALLS} calls x ${ROUNDS} rounds per contender from a client process`);
    const caller = await startNode<Record<string, number[][]>>(
      fileURLToPath(new URL('./callerClient.js', import.meta.url)),
      [temporal.address, durableQueue, bareQueue, String(CALLS), String(ROUNDS)],
      {
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          ...env,
          ...(process.env.BENCH_CALLER_PLAIN ? { BENCH_CALLER_PLAIN: process.env.BENCH_CALLER_PLAIN } : {}),
        },
        timeoutMs: 900_000,
      },
    );
    const times = caller.info;
    await stopProcess(caller);
    await stopProcess(worker);
    await stopProcess(bare);
    const p50 = (name: string) => percentile(times[name]!.flat(), 50);
    const rounds = times.ours!.map((_, r) => ({
      ours: percentile(times.ours![r]!, 50),
      bare: percentile(times.bare![r]!, 50),
      floor: percentile(times.floor![r]!, 50),
    }));
    const rows = rounds.map(
      (r, i) =>
        `| ${i + 1} | ${r.ours.toFixed(1)} | ${r.bare.toFixed(1)} | ${r.floor.toFixed(1)} | ${(r.ours / r.bare).toFixed(2)} | ${(r.ours / r.floor).toFixed(2)} |`,
    );
    const all = { ours: p50('ours'), bare: p50('bare'), floor: p50('floor') };
    const body = [
      `${await machineLine()}; \`node dist/bench/callerSide.js\` (${CALLS} calls x ${ROUNDS} rounds per contender).`,
      '',
      '| round | ours p50 (ms) | bare + same MCP call (ms) | floor (ms) | ours / bare | ours / floor |',
      '|---|---|---|---|---|---|',
      ...rows,
      `| all | ${all.ours.toFixed(1)} | ${all.bare.toFixed(1)} | ${all.floor.toFixed(1)} | **${(all.ours / all.bare).toFixed(2)}** | ${(all.ours / all.floor).toFixed(2)} |`,
      '',
      load(),
    ].join('\n');
    process.stdout.write(`${body}\n`);
    const variant = process.env.BENCH_CALLER_PLAIN === '1' ? ", the SDK's default converter on both sides" : '';
    await writeSection(
      'callerSide',
      `Run of ${new Date().toISOString().slice(0, 19).replace('T', ' ')} UTC${variant}`,
      body,
    );
  } finally {
    await endBench({ client, temporal, dir });
  }
});
