/**
 * Side by side: one echo call through the HTTP API (`fetch` -> `durable-mcp api` -> TurnClient)
 * versus the same call through `TurnClient` directly, against the same worker (its own process),
 * the same Temporal server and the fixture echo server over stdio. Each variant drives its own
 * interactive turn; rounds alternate the order. The API serves from this process, on loopback.
 *
 * Run on demand: `npm run build:bench && node dist/bench/api.js`.
 * Knobs: BENCH_CALLS (sequential calls per variant per round, default 100), BENCH_ROUNDS (default 5),
 * TEMPORAL_ADDRESS (else an in-memory dev server of this run).
 */
import { loadavg } from 'node:os';
import pino from 'pino';
import { TurnClient } from '../client/turnClient.js';
import { startApiServer } from '../api/server.js';
import { hashToken, parseTokens } from '../api/auth.js';
import { createCallRecords } from '../api/recorded.js';
import { DEFAULT_SHAPE_LIMITS } from '../shaping/index.js';
import { tempDir } from '../test/support/harness.js';
import { echoFixture, runBench, stopProcess } from './procs.js';
import { benchQueue, connectClient, startDurableWorker, startTemporal, writeDurableBundle } from './setup.js';
import { machineLine, percentile, writeSection } from './support.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP = 10;
const TOKEN = 'bench-api-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

runBench(async () => {
  const began = Date.now();
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
  const dir = await tempDir('dmcp-bench-api-');
  const temporal = await startTemporal();
  const taskQueue = benchQueue('api');
  const worker = await startDurableWorker(temporal.address, taskQueue, await writeDurableBundle(dir));
  const client = await connectClient(temporal.address);
  const turns = new TurnClient({ client, taskQueue });
  const api = await startApiServer({
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'warn' }),
    turns,
    tokens: parseTokens(`${hashToken(TOKEN)} *`, 'DMCP_API_TOKENS'),
    boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [dir] },
    maxBodyBytes: 2 * 1024 * 1024,
    callWaitMs: 30_000,
    shapeLimits: DEFAULT_SHAPE_LIMITS,
  });
  const servers = { inlineSpecs: [`echo:${process.execPath} ${echoFixture}`] };
  try {
    const direct = await turns.startTurn({ sessionId: `bench-direct-${Date.now()}`, workspace: dir, servers });
    const split = await turns.startTurn({ sessionId: `bench-split-${Date.now()}`, workspace: dir, servers });
    const checked = await turns.startTurn({ sessionId: `bench-checked-${Date.now()}`, workspace: dir, servers });
    const started = (await (
      await fetch(`${api.url}/api/v1/sessions/bench-api-${Date.now()}/turns`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...AUTH },
        body: JSON.stringify({ workspace: dir, servers }),
      })
    ).json()) as { links: { calls: string; end: string } };
    const callsUrl = `${api.url}${started.links.calls}`;
    let n = 0;
    const records = createCallRecords(client);
    const variants: Record<string, () => Promise<void>> = {
      'TurnClient directly (`turn.callTool`)': async () => {
        const outcome = await direct.callTool({ id: `d-${n++}`, name: 'mcp__echo__echo', arguments: { text: 'hi' } });
        if (outcome.status !== 'ok') throw new Error(`direct call failed: ${outcome.errorMessage}`);
      },
      'TurnClient, accepted then polled (`startCall` + `result()`)': async () => {
        const outcome = await (
          await turns.startCall(split.turnId, { id: `s-${n++}`, name: 'mcp__echo__echo', arguments: { text: 'hi' } })
        ).result();
        if (outcome.status !== 'ok') throw new Error(`split call failed: ${outcome.errorMessage}`);
      },
      'the same, plus the call-ID check read alongside (what the API does, without HTTP)': async () => {
        const request = { id: `k-${n++}`, name: 'mcp__echo__echo', arguments: { text: 'hi' } };
        const handle = await turns.startCall(checked.turnId, request);
        const [recorded, outcome] = await Promise.all([
          records.recorded(checked.turnId, request.id, handle.workflowRunId),
          handle.result(),
        ]);
        if (outcome.status !== 'ok' || !recorded) throw new Error('checked call failed');
      },
      'HTTP API (`POST .../calls`, fetch, keep-alive)': async () => {
        const res = await fetch(callsUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...AUTH },
          body: JSON.stringify({ id: `a-${n++}`, name: 'mcp__echo__echo', arguments: { text: 'hi' } }),
        });
        if (res.status !== 200) throw new Error(`API call answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      },
    };
    const names = Object.keys(variants);
    const API = names[names.length - 1]!;
    for (const name of names) for (let i = 0; i < WARMUP; i += 1) await variants[name]!();
    const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
    const roundRatios: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = [...names.slice(round % names.length), ...names.slice(0, round % names.length)];
      const roundP50: Record<string, number> = {};
      for (const name of order) {
        const times: number[] = [];
        for (let i = 0; i < CALLS; i += 1) {
          const t0 = performance.now();
          await variants[name]!();
          times.push(performance.now() - t0);
        }
        samples[name]!.push(...times);
        roundP50[name] = percentile(times, 50);
      }
      roundRatios.push(roundP50[API]! / roundP50[names[0]!]!);
      log(`round ${round + 1}: ${names.map((k) => `${k} p50 ${roundP50[k]!.toFixed(2)} ms`).join(', ')}`);
    }
    await Promise.all([direct.end(), split.end(), checked.end()]);
    await fetch(`${api.url}${started.links.end}`, { method: 'POST', headers: AUTH });
    const base = percentile(samples[names[0]!]!, 50);
    const rows = names.map(
      (k) =>
        `| ${k} | ${samples[k]!.length} | ${percentile(samples[k]!, 50).toFixed(2)} | ${(percentile(samples[k]!, 50) / base).toFixed(2)}x | ${percentile(samples[k]!, 95).toFixed(2)} | ${percentile(samples[k]!, 99).toFixed(2)} |`,
    );
    const ratio = percentile(samples[API]!, 50) / percentile(samples[names[0]!]!, 50);
    const medianRound = percentile(roundRatios, 50);
    const body = [
      `Command: \`npm run build:bench && node dist/bench/api.js\`. Machine: ${await machineLine()}. Took ${Math.round((Date.now() - began) / 1000)} s. Load average (1/5/15 min) at the start: ${load}.`,
      '',
      `One durable-mcp worker in its own process, the fixture echo server over stdio, one Temporal dev server (${process.env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : 'in memory, tuned as `dev` starts it'}). One interactive turn per variant, each sending ${CALLS} sequential \`mcp__echo__echo\` calls per round after ${WARMUP} warm-up calls; ${ROUNDS} rounds, order rotated every round. The API runs in the benchmark's process (with one token, as every API has) over the same Temporal client. The two middle rows take the API's Temporal side apart: it sends a call as an Update that answers once accepted and then polls for the outcome, and reads what the call ID was first sent with (the end of the turn's history; the run's first event once per run) while the tool runs.`,
      '',
      '| variant | calls | p50 (ms) | p50 vs direct | p95 (ms) | p99 (ms) |',
      '|---|---|---|---|---|---|',
      ...rows,
      '',
      `| goal | measured | status |`,
      '|---|---|---|',
      `| API p50 <= 1.15x TurnClient p50 | ${ratio.toFixed(2)}x over all calls (median of per-round ratios ${medianRound.toFixed(2)}x; rounds ${roundRatios.map((r) => r.toFixed(2)).join(', ')}) | ${ratio <= 1.15 ? 'met' : '**missed**'} |`,
    ].join('\n');
    await writeSection('api', 'One call through the HTTP API vs TurnClient directly', body);
    process.stdout.write(`${body}\n`);
  } finally {
    await api.close();
    await client.connection.close();
    await stopProcess(worker);
    await temporal.stop();
  }
});
