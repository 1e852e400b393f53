/**
 * What a question to a person costs a call, side by side in one run on one worker and one server
 * (the 2026-era fixture over Streamable HTTP): the plain `echo` call, and `provision`, which asks
 * twice (a form for a name, then a confirmation) before it completes. For `provision` it times the
 * answer to the next question (answer sent until `pendingInputs` lists the next one) and the last
 * answer to the outcome; and it reads the history bytes each question and its answer add. The
 * 2025-era shape runs alongside: server-everything's `trigger-elicitation-request` over stdio, whose
 * question waits inside the call (answer to outcome: Update, delivery activity, the server's reply).
 *
 * Run on demand: `npm run build:bench && node dist/bench/inputs.js`. Knobs: BENCH_CALLS (calls of
 * each kind, default 20), TEMPORAL_ADDRESS (else an in-memory dev server).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { TurnClient, type Turn } from '../client/turnClient.js';
import type { InputRequest } from '../contract/index.js';
import { startDevServer } from '../dev/devServer.js';
import { createDataConverter } from '../payloads/dataConverter.js';
import { bundleWorkflows, startWorker } from '../worker/index.js';
import { everythingServer, tempDir, uniqueQueue } from '../test/support/harness.js';
import { killStartedServers, modernHttpServer } from '../test/support/inputs.js';
import { machineLine, percentile, writeSection } from './support.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 20);
const WARMUP = 3;
const POLL_MS = 5;
const History = proto.temporal.api.history.v1.History;
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

/** Polls the turn until a request with this ID is open. */
async function waitFor(turn: Turn, requestId: string): Promise<InputRequest> {
  for (;;) {
    const open = (await turn.pendingInputs()).find((r) => r.requestId === requestId);
    if (open) return open;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const server = process.env.TEMPORAL_ADDRESS ? undefined : await startDevServer({ headless: true });
  const address = process.env.TEMPORAL_ADDRESS ?? server!.address;
  const dir = await tempDir('dmcp-bench-inputs-');
  const url = await modernHttpServer(join(dir, 'server.log'));
  const configFile = join(dir, 'mcp.json');
  await writeFile(
    configFile,
    JSON.stringify({
      mcpServers: { db: { url }, everything: { command: process.execPath, args: [everythingServer, 'stdio'] } },
    }),
  );
  const converter = createDataConverter({ payloadDir: join(dir, 'payloads') });
  const taskQueue = uniqueQueue('bench-inputs');
  const connection = await NativeConnection.connect({ address });
  const worker = await startWorker({
    connection,
    taskQueue,
    workflowBundle: await bundleWorkflows(),
    dataConverter: converter,
    logger: pino({ level: 'silent' }),
    env: { PATH: process.env.PATH, DMCP_NO_USER_CONFIG: '1' },
  });
  const client = new TurnClient({
    client: new Client({ connection: await Connection.connect({ address }), dataConverter: converter }),
    taskQueue,
  });
  const startTurn = () =>
    client.startTurn({
      sessionId: `bench-inputs-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`,
      workspace: dir,
      servers: { mcpConfigFiles: [configFile] },
    });
  const echoMs: number[] = [];
  const toNextQuestionMs: number[] = [];
  const toOutcomeMs: number[] = [];
  const wholeMs: number[] = [];
  const legacyToOutcomeMs: number[] = [];
  const legacyWholeMs: number[] = [];
  let bytes: { base: number; echo: number; provision: number; legacy: number } | undefined;
  try {
    let n = 0;
    const historyBytes = async (turn: Turn) =>
      History.encode(await client.client.workflow.getHandle(turn.turnId).fetchHistory()).finish().byteLength;
    const provision = async (turn: Turn) => {
      const id = `p${++n}`;
      const started = performance.now();
      const running = turn.callTool({ id, name: 'mcp__db__provision', arguments: {} });
      await waitFor(turn, `${id}:1:name`);
      const answered = performance.now();
      await turn.answerInput(`${id}:1:name`, { action: 'accept', content: { name: `bench-${n}` } });
      await waitFor(turn, `${id}:2:confirm`);
      const asked = performance.now();
      await turn.answerInput(`${id}:2:confirm`, { action: 'accept', content: { confirm: true } });
      const outcome = await running;
      const done = performance.now();
      if (outcome.status !== 'ok') throw new Error(`provision: ${outcome.errorMessage}`);
      return { toNext: asked - answered, toOutcome: done - asked, whole: done - started };
    };
    const legacy = async (turn: Turn) => {
      const id = `l${++n}`;
      const started = performance.now();
      const running = turn.callTool({ id, name: 'mcp__everything__trigger-elicitation-request', arguments: {} });
      await waitFor(turn, `${id}:1:elicitation`);
      const answered = performance.now();
      await turn.answerInput(`${id}:1:elicitation`, { action: 'accept', content: { name: `bench-${n}` } });
      const outcome = await running;
      const done = performance.now();
      if (outcome.status !== 'ok') throw new Error(`legacy: ${outcome.errorMessage}`);
      return { toOutcome: done - answered, whole: done - started };
    };
    const turn = await startTurn();
    for (let i = 0; i < WARMUP + CALLS; i++) {
      // Interleaved, so a noisy machine hits both kinds alike.
      const t0 = performance.now();
      const echo = await turn.callTool({ id: `e${++n}`, name: 'mcp__db__echo', arguments: { text: `call ${i}` } });
      const t1 = performance.now();
      if (echo.status !== 'ok') throw new Error(`echo: ${echo.errorMessage}`);
      const p = await provision(turn);
      const l = await legacy(turn);
      if (i < WARMUP) continue;
      legacyToOutcomeMs.push(l.toOutcome);
      legacyWholeMs.push(l.whole);
      echoMs.push(t1 - t0);
      toNextQuestionMs.push(p.toNext);
      toOutcomeMs.push(p.toOutcome);
      wholeMs.push(p.whole);
    }
    await turn.end();
    log(`${CALLS} calls of each kind done`);

    const sized = async (extra: 'none' | 'echo' | 'provision' | 'legacy') => {
      const t = await startTurn();
      await t.callTool({ id: `e${++n}`, name: 'mcp__db__echo', arguments: { text: 'base' } });
      if (extra === 'echo') await t.callTool({ id: `e${++n}`, name: 'mcp__db__echo', arguments: { text: 'more' } });
      if (extra === 'provision') await provision(t);
      if (extra === 'legacy') await legacy(t);
      await t.end();
      return historyBytes(t);
    };
    bytes = {
      base: await sized('none'),
      echo: await sized('echo'),
      provision: await sized('provision'),
      legacy: await sized('legacy'),
    };
  } finally {
    await worker.shutdown();
    await connection.close();
    await client.close();
    killStartedServers();
    await server?.stop();
  }

  const row = (label: string, v: number[]) =>
    `| ${label} | ${v.length} | ${percentile(v, 50).toFixed(1)} | ${percentile(v, 95).toFixed(1)} | ${(percentile(v, 50) / percentile(echoMs, 50)).toFixed(2)} |`;
  const perEcho = bytes.echo - bytes.base;
  const perProvision = bytes.provision - bytes.base;
  const body = [
    `Command: \`npm run build:bench && node dist/bench/inputs.js\` (BENCH_CALLS=${CALLS}). Machine: ${await machineLine()}.`,
    '',
    "One turn, one worker in the bench process, the 2026-era fixture over Streamable HTTP and server-everything (2025-era) over stdio, the project's data converter; `echo`, `provision` and `trigger-elicitation-request` calls interleaved. " +
      `Questions are found by polling \`pendingInputs\` every ${POLL_MS} ms, so up to that much of each "answer to" time is the poll. ` +
      'The machine was shared with other work while it ran: read the ratios, not the milliseconds.',
    '',
    '| what | samples | p50 ms | p95 ms | p50 vs a plain echo call |',
    '|---|---|---|---|---|',
    row('plain `echo` call (no question)', echoMs),
    row('2026-era: first answer sent until the next question is open', toNextQuestionMs),
    row('2026-era: last answer sent until the outcome', toOutcomeMs),
    row('2026-era: whole `provision` call (2 questions, answered at once)', wholeMs),
    row('2025-era: answer sent until the outcome (the call waited holding its connection)', legacyToOutcomeMs),
    row('2025-era: whole `trigger-elicitation-request` call (1 question, answered at once)', legacyWholeMs),
    '',
    '| history (bytes, protobuf as Temporal stores it) | bytes |',
    '|---|---|',
    `| turn with one echo call | ${bytes.base} |`,
    `| + one more echo call | ${perEcho} |`,
    `| + one \`provision\` call (2 questions, 2 answers) | ${perProvision} |`,
    `| per question and its answer (the provision call less an echo call, halved) | ${((perProvision - perEcho) / 2).toFixed(0)} |`,
    `| + one 2025-era \`trigger-elicitation-request\` call (1 question, 1 answer; its result echoes the whole answer) | ${bytes.legacy - bytes.base} |`,
    '',
    "Each answer to a 2026-era question is one Update and one more `callTool` activity (the retry carries the answers and the server's `requestState`), so an answer costs about a plain call. " +
      'A 2025-era answer is one Update and one short `deliverInputAnswer` activity on the worker holding the call, which then hands the reply to the server over the open connection.',
  ].join('\n');
  process.stdout.write(`${body}\n`);
  await writeSection('inputs', 'Calls that ask a person: answer to outcome, history per question', body);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  },
);
