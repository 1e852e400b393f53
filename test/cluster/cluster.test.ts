/**
 * The cluster, as processes on this machine, with the compose file's topology and `.env`'s
 * settings: PostgreSQL (a private initdb cluster), the multi-service Temporal server on it (schema
 * by Temporal's SQL tool, namespace and search attribute by `durable-mcp setup`), versitygw as the
 * payload store, the codec service, three `durable-mcp worker` processes, and a client driving 50
 * sessions x 3 turns against server-memory. One worker is SIGKILLed during the second turns.
 *
 * Proves: every turn completes; no side-effecting call runs twice (a ledger server records every
 * execution); the dead worker's sessions fail over to live workers and find their memory there;
 * sessions on live workers keep their server processes; large payloads cross processes through S3
 * and the codec service decodes them. Prints wall time and turns/s.
 *
 *   npm run test:cluster
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { S3Client } from '@aws-sdk/client-s3';
import type { Payload } from '@temporalio/common';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import { createDataConverter } from '../../payloads/dataConverter.js';
import { isStoredReference } from '../../payloads/decodePayload.js';
import { S3StorageDriver } from '../../payloads/s3Storage.js';
import { loadSettings } from '../../settings/index.js';
import type { CallOutcome, TurnResult } from '../../contract/index.js';
import { tempDir } from '../support/harness.js';
import { textOf } from '../support/content.js';
import {
  clusterSettings,
  dmcpEnvFromDotEnv,
  setupSchema,
  startPostgres,
  startProcess,
  startTemporalServer,
  startVersity,
  type Postgres,
  type Proc,
  type TemporalCluster,
  type Versity,
} from './processes.js';

const cli = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const echoServer = fileURLToPath(new URL('../fixtures/echoServer.js', import.meta.url));
const memoryServer = fileURLToPath(
  new URL('../../../node_modules/@modelcontextprotocol/server-memory/dist/index.js', import.meta.url),
);

const SESSIONS = Number(process.env.DMCP_CLUSTER_SESSIONS ?? 50);
const TURNS = 3;
const WORKERS = 3;
/** Turns in flight at once: enough to keep three workers busy on two shared cores. */
const CONCURRENCY = Number(process.env.DMCP_CLUSTER_CONCURRENCY ?? 10);
/** Bigger than the 16 KiB external-storage threshold after compression: arguments and results go through S3. */
const BIG = randomBytes(30_000).toString('base64');

interface Worker {
  index: number;
  proc: Proc;
  dir: string;
  ledger: string;
  queue?: string;
}

interface TurnRecord {
  session: number;
  turn: number;
  workerQueue: string;
  pids: Record<string, number | undefined>;
  outcomes: Record<string, CallOutcome>;
  result: TurnResult;
  seconds: number;
}

let dir: string;
let versity: Versity;
let postgres: Postgres;
let temporal: TemporalCluster;
let codec: Proc;
let codecUrl: string;
const workers: Worker[] = [];
let client: TurnClient;
let baseEnv: Record<string, string>;
const timings: Record<string, number> = {};

const since = (t: number) => Number(((Date.now() - t) / 1000).toFixed(1));

/** A `durable-mcp` process: resolves with its output once `ready` appears in it. */
async function startCli(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ proc: Proc; output: () => Promise<string> }> {
  const proc = startProcess(name, process.execPath, [cli, ...args], { logDir: dir, env });
  const output = () => readFile(proc.logFile, 'utf8').catch(() => '');
  const deadline = Date.now() + 120_000;
  for (;;) {
    const text = await output();
    if (ready.test(text)) return { proc, output };
    let exited = false;
    await Promise.race([proc.exited.then(() => (exited = true)), new Promise((r) => setTimeout(r, 200))]);
    if (exited && ready.test(await output())) return { proc, output };
    if (exited || Date.now() > deadline)
      throw new Error(`${name} ${exited ? 'exited' : 'did not start'}:\n${(await output()).slice(-3000)}`);
  }
}

before(async () => {
  const t0 = Date.now();
  dir = await tempDir('dmcp-cluster-');
  const s = await clusterSettings();
  versity = await startVersity({ dir, logDir: dir, access: s.s3.access, secret: s.s3.secret, buckets: [s.s3.bucket] });
  postgres = await startPostgres({ dir, logDir: dir, user: s.postgres.user, password: s.postgres.password });
  timings.postgresUpSeconds = since(t0);
  let t = Date.now();
  await setupSchema({ port: postgres.port, ...s.postgres, logDir: dir });
  timings.schemaSeconds = since(t);
  t = Date.now();
  temporal = await startTemporalServer({ dir, logDir: dir, postgresPort: postgres.port });
  timings.temporalUpSeconds = since(t);

  baseEnv = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    ...dmcpEnvFromDotEnv(s.env),
    TEMPORAL_ADDRESS: temporal.address,
    DMCP_S3_ENDPOINT: versity.endpoint,
    DMCP_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    DMCP_NO_USER_CONFIG: '1',
    DMCP_LOG_LEVEL: 'info',
  };
  t = Date.now();
  const setup = await startCli(
    'setup',
    ['setup', '--retention', s.retention],
    baseEnv,
    /search attribute DmcpSessionId \(keyword\): (added|registered)/,
  );
  await setup.proc.exited;
  timings.setupSeconds = since(t);

  const started = await startCli(
    'codec',
    ['payloads', 'codec-server', '--port', '0'],
    baseEnv,
    /codec server: http:\/\/127\.0\.0\.1:\d+/,
  );
  codec = started.proc;
  codecUrl = /codec server: (http:\/\/127\.0\.0\.1:\d+)/.exec(await started.output())![1]!;

  // Workers in their own folders (as on separate machines), sharing only the turn key and S3.
  const keyDir = join(dir, 'key');
  const turnKey = await ensureTurnKey(keyDir);
  const configs = join(dir, 'sessions');
  await mkdir(configs, { recursive: true });
  t = Date.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, i) => {
      const wdir = join(dir, `worker-${i}`);
      await mkdir(join(wdir, 'data'), { recursive: true, mode: 0o700 });
      await copyFile(join(keyDir, 'turn.key'), join(wdir, 'data', 'turn.key'));
      const ledger = join(wdir, 'ledger.jsonl');
      const env = {
        ...baseEnv,
        DMCP_DATA_DIR: join(wdir, 'data'),
        DMCP_ALLOWED_CONFIG_DIRS: configs,
        FIXTURE_LOG: ledger,
      };
      const w = await startCli(`worker-${i}`, ['worker'], env, /worker started/);
      const queue = /"workerQueue":"([^"]+)"/.exec(await w.output())?.[1];
      workers[i] = { index: i, proc: w.proc, dir: wdir, ledger, queue };
    }),
  );
  timings.workersUpSeconds = since(t);

  const clientDir = join(dir, 'client');
  const settings = loadSettings({ ...baseEnv, DMCP_DATA_DIR: join(clientDir, 'data') });
  const s3 = new S3StorageDriver({
    ...settings.payloads.s3!,
    client: new S3Client({
      region: settings.payloads.s3!.region,
      endpoint: versity.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s.s3.access, secretAccessKey: s.s3.secret },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }),
  });
  client = await TurnClient.connect({
    address: temporal.address,
    namespace: settings.temporal.namespace,
    taskQueue: settings.taskQueue,
    dataConverter: createDataConverter({
      payloadDir: join(clientDir, 'payloads'),
      encryptionKey: settings.payloads.encryptionKey,
      s3,
    }),
    turnKey,
  });
  for (let i = 0; i < SESSIONS; i++) {
    await mkdir(join(configs, `s${i}`), { recursive: true });
    const config = {
      mcpServers: {
        memory: {
          command: process.execPath,
          args: [memoryServer],
          env: { MEMORY_FILE_PATH: join(configs, `s${i}`, 'memory.jsonl') },
        },
        ledger: { command: process.execPath, args: [echoServer] },
      },
    };
    await writeFile(join(configs, `s${i}`, 'mcp.json'), JSON.stringify(config));
  }
  timings.clusterUpSeconds = since(t0);
  process.stderr.write(`cluster up in ${timings.clusterUpSeconds}s (${JSON.stringify(timings)}); logs in ${dir}\n`);
});

after(async () => {
  await client?.close().catch(() => undefined);
  for (const w of workers) await w.proc.stop(15_000);
  for (const p of [codec, temporal?.proc, postgres?.proc, versity?.proc]) await p?.stop(15_000);
});

const sessionId = (i: number) => `cluster-${i}`;
const marker = (i: number, j: number) => `s${i}-t${j}`;

/** One interactive turn: write to memory (big observation), record in the ledger, read the graph back. */
async function runTurn(i: number, j: number, configs: string): Promise<TurnRecord> {
  const t = Date.now();
  const turn = await client.startTurn({
    sessionId: sessionId(i),
    turn: j,
    workspace: dir,
    servers: { mcpConfigFiles: [join(configs, `s${i}`, 'mcp.json')] },
  });
  const pids = Object.fromEntries(turn.status.servers.map((s) => [s.name, s.pid]));
  const outcomes: Record<string, CallOutcome> = {};
  outcomes.write = await turn.callTool({
    id: 'write',
    name: 'mcp__memory__create_entities',
    arguments: { entities: [{ name: marker(i, j), entityType: 'turn', observations: [`${marker(i, j)} ${BIG}`] }] },
  });
  outcomes.ledger = await turn.callTool({ id: 'ledger', name: 'mcp__ledger__echo', arguments: { text: marker(i, j) } });
  outcomes.read = await turn.callTool({ id: 'read', name: 'mcp__memory__read_graph', arguments: {} });
  const result = await turn.end();
  return { session: i, turn: j, workerQueue: turn.workerQueue, pids, outcomes, result, seconds: since(t) };
}

/** Runs `jobs` with at most `limit` in flight; `onStart(n)` sees how many have started. */
async function pool<T>(jobs: (() => Promise<T>)[], limit: number, onStart?: (n: number) => void): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  const lanes = Array.from({ length: limit }, async () => {
    while (next < jobs.length) {
      const k = next++;
      onStart?.(k + 1);
      out[k] = await jobs[k]!();
    }
  });
  await Promise.all(lanes);
  return out;
}

test(
  `${SESSIONS} sessions x ${TURNS} turns on ${WORKERS} workers; one worker SIGKILLed mid-run`,
  { timeout: 20 * 60_000 },
  async () => {
    const configs = join(dir, 'sessions');
    const records: TurnRecord[][] = Array.from({ length: SESSIONS }, () => []);
    const started = Date.now();
    let victim: Worker | undefined;
    let killedAt = 0;
    for (let j = 1; j <= TURNS; j++) {
      const phase = Date.now();
      const jobs = Array.from({ length: SESSIONS }, (_, i) => async () => {
        const r = await runTurn(i, j, configs);
        records[i]!.push(r);
        return r;
      });
      await pool(jobs, CONCURRENCY, (n) => {
        // Mid-run: a third of the way into the second turns, the worker holding the most sessions dies.
        if (j === 2 && n === Math.ceil(SESSIONS / 3) && !victim) {
          const load = workers.map((w) => records.filter((rs) => rs[0]?.workerQueue === w.queue).length);
          victim = workers[load.indexOf(Math.max(...load))]!;
          killedAt = Date.now();
          victim.proc.kill();
          process.stderr.write(
            `SIGKILL worker-${victim.index} (${load[victim.index]} sessions) after ${since(started)}s\n`,
          );
        }
      });
      timings[`turn${j}Seconds`] = since(phase);
    }
    const wallSeconds = (Date.now() - started) / 1000;
    assert.ok(victim, 'a worker was killed');
    const dead = victim.queue!;

    // Every turn completed, and ran its three calls.
    const all = records.flat();
    assert.equal(all.length, SESSIONS * TURNS);
    let unknown = 0;
    for (const r of all) {
      assert.equal(r.result.calls.length, 3, `${marker(r.session, r.turn)} ran its calls`);
      for (const [id, o] of Object.entries(r.outcomes)) {
        // A side-effecting call the dead worker was running may have had its effect: it is reported,
        // never run again. Everything else succeeded.
        if (o.status === 'error' && o.errorKind === 'unknown_result' && id !== 'read') {
          unknown++;
          continue;
        }
        assert.equal(
          o.status,
          'ok',
          `${marker(r.session, r.turn)} ${id}: ${JSON.stringify(o.errorMessage ?? o.errorKind)}`,
        );
      }
    }
    assert.ok(unknown <= CONCURRENCY, `at most the calls in flight on the dead worker end unknown_result (${unknown})`);

    // No side-effecting call ran twice: the ledger holds each turn's marker at most once, and exactly
    // once for every ledger call that reported ok.
    const executions = new Map<string, number>();
    for (const w of workers) {
      for (const line of (await readFile(w.ledger, 'utf8').catch(() => '')).split('\n').filter(Boolean)) {
        const { args } = JSON.parse(line) as { args: { text: string } };
        executions.set(args.text, (executions.get(args.text) ?? 0) + 1);
      }
    }
    for (const r of all) {
      const n = executions.get(marker(r.session, r.turn)) ?? 0;
      assert.ok(n <= 1, `${marker(r.session, r.turn)} ran ${n} times`);
      if (r.outcomes.ledger!.status === 'ok')
        assert.equal(n, 1, `${marker(r.session, r.turn)} reported ok but ran ${n} times`);
    }

    // Sessions of the dead worker failed over: their last turn ran on a live worker, which started
    // their servers anew and read the memory the dead worker's server wrote (through its file).
    const victims = records.filter((rs) => rs.some((r) => r.turn === 1 && r.workerQueue === dead));
    assert.ok(victims.length > 0, 'the killed worker held sessions');
    for (const rs of victims) {
      const last = rs.find((r) => r.turn === TURNS)!;
      assert.notEqual(last.workerQueue, dead, `session ${last.session} moved off the dead worker`);
      const graph = textOf(last.outcomes.read!.content[0]) ?? '';
      for (let j = 1; j <= TURNS; j++) {
        if (rs.find((r) => r.turn === j)!.outcomes.write!.status === 'ok')
          assert.ok(
            graph.includes(marker(last.session, j)),
            `session ${last.session} sees turn ${j}'s memory after failover`,
          );
      }
    }

    // Sessions whose worker lived stayed on it and kept their server processes across all turns.
    const stayed = records.filter((rs) => rs[0]!.workerQueue !== dead);
    assert.ok(stayed.length > 0, 'some sessions started on live workers');
    for (const rs of stayed) {
      for (const r of rs)
        assert.equal(
          r.workerQueue,
          rs[0]!.workerQueue,
          `session ${r.session} turn ${r.turn} stayed on its live worker`,
        );
      for (const r of rs)
        assert.deepEqual(r.pids, rs[0]!.pids, `session ${r.session} turn ${r.turn} kept its server PIDs`);
      assert.ok(
        Object.values(rs[0]!.pids).every((p) => typeof p === 'number'),
        'stdio servers report their PIDs',
      );
    }

    // A big payload of history decodes through the codec service (which reads S3 with the key).
    const raw = await client.client.workflow.getHandle(`${sessionId(0)}/turn-1`).fetchHistory();
    const references: Payload[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object' && !(node instanceof Uint8Array)) {
        const p = node as Payload;
        if (p.data instanceof Uint8Array && p.metadata && isStoredReference(p)) references.push(p);
        else Object.values(node).forEach(walk);
      }
    };
    walk(raw);
    assert.ok(references.length > 0, 'the 40 KB observation went to external storage');
    const toJson = (p: Payload) => ({
      metadata: Object.fromEntries(
        Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
      ),
      data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
    });
    const res = await fetch(`${codecUrl}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: references.map(toJson) }),
    });
    assert.equal(res.status, 200);
    const decoded = ((await res.json()) as { payloads: { data: string }[] }).payloads.map((p) =>
      Buffer.from(p.data, 'base64').toString('utf8'),
    );
    assert.ok(
      decoded.some((d) => d.includes(`${marker(0, 1)} ${BIG.slice(0, 100)}`)),
      'the codec service decoded the stored observation',
    );

    const failoverTurn = victims.map((rs) => rs.find((r) => r.turn === 2)!);
    const summary = {
      sessions: SESSIONS,
      turns: all.length,
      workers: WORKERS,
      concurrency: CONCURRENCY,
      wallSeconds: Number(wallSeconds.toFixed(1)),
      turnsPerSecond: Number((all.length / wallSeconds).toFixed(2)),
      killedWorkerSessions: victims.length,
      unknownResults: unknown,
      sessionsKeptPids: stayed.length,
      killedAfterSeconds: Number(((killedAt - started) / 1000).toFixed(1)),
      failedOverTurn2: failoverTurn.filter((r) => r.workerQueue !== dead).length,
      // How long the slowest turn of each round took: the failover's wait shows in round 2.
      slowestTurnSeconds: [1, 2, 3].map((j) => Math.max(...all.filter((r) => r.turn === j).map((r) => r.seconds))),
      medianTurnSeconds: [1, 2, 3].map(
        (j) =>
          all
            .filter((r) => r.turn === j)
            .map((r) => r.seconds)
            .sort((a, b) => a - b)[Math.floor(SESSIONS / 2)],
      ),
      ...timings,
    };
    process.stdout.write(`cluster summary: ${JSON.stringify(summary)}\n`);
    const slowest = all.reduce((a, b) => (b.seconds > a.seconds ? b : a));
    const worker = (q: string) =>
      q === dead ? 'killed worker' : `worker-${workers.find((w) => w.queue === q)?.index ?? '?'}`;
    process.stdout.write(
      `slowest turn: ${marker(slowest.session, slowest.turn)} ${slowest.seconds}s, started on ${worker(slowest.workerQueue)} ` +
        `(session's first turn on ${worker(records[slowest.session]![0]!.workerQueue)}); calls: ` +
        `${Object.entries(slowest.outcomes)
          .map(([id, o]) => `${id} ${o.status} ${o.durationMs}ms x${o.attempts}`)
          .join(', ')}\n`,
    );
  },
);
