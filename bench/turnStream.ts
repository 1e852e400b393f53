/**
 * A turn's stream: how long an event takes from the worker to an SSE client, what it costs, and
 * one API process holding 100 streams. The model is the scripted server (test/fixtures/modelServer.ts)
 * with `clockChunks`: each streamed chunk is `<t=ms>`, its clock as it is sent, so a client that
 * receives it knows how old it is (one machine, one clock). The worker runs in its own process, as
 * `durable-mcp worker` does (codec on); the API and its SSE clients share this process.
 *
 *   1. One stream at a time: BENCH_STREAM_TURNS (default 10) model turns one after another, each
 *      40 chunks 25 ms apart, read over `GET .../turns/{turn}/events`. Text: chunk sent to chunk
 *      received. History's events (`mcp.status`, `model.step`, `turn.ended`): the history event's
 *      time to the SSE event received.
 *   2. 100 streams at once: BENCH_STREAM_CONCURRENT (default 100) turns started together, each 60
 *      chunks 100 ms apart, each read by its own SSE client of the one API: every event received,
 *      and the same latencies.
 *   3. Cost: text records in the step text log (bytes each, records a second), what history holds of it.
 *
 * Run on demand: `npm run build:bench && node dist/bench/turnStream.js`.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunningApi } from '../api/server.js';
import { TurnClient } from '../client/turnClient.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import { stepTextStoreFor } from '../payloads/streamLog.js';
import { loadSettings } from '../settings/index.js';
import { killGroups, tempDir } from '../test/support/harness.js';
import { startModelServer, writeModelsJson } from '../test/support/models.js';
import { startTestApi } from '../test/support/api.js';
import { runBench, stopProcess } from './procs.js';
import { benchQueue, connectClient, endBench, startDurableWorker, startTemporal, writeDurableBundle } from './setup.js';
import { cpuShare, machineLine, percentile, writeSection } from './support.js';

const TURNS = Number(process.env.BENCH_STREAM_TURNS ?? 10);
const CONCURRENT = Number(process.env.BENCH_STREAM_CONCURRENT ?? 100);
const TOKEN = randomBytes(24).toString('hex');
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const CLOCK = /<t=(\d+)>/g;

interface Sample {
  text: number[];
  history: number[];
  events: number;
}

/** Reads one turn's SSE stream to its end, noting each event's age as it arrives. */
async function readStream(
  api: RunningApi,
  sessionId: string,
  sample: Sample,
  historyTimes: () => Promise<Map<string, number>>,
) {
  const res = await fetch(`${api.url}/api/v1/sessions/${sessionId}/turns/turn-1/events`, {
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: AbortSignal.timeout(120_000),
  });
  if (res.status !== 200) throw new Error(`stream of ${sessionId}: ${res.status} ${await res.text()}`);
  const received: { id: string; event: string; at: number }[] = [];
  let buffer = '';
  for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
    const now = Date.now();
    buffer += chunk;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const lines = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
      const event = field('event');
      if (event === undefined) continue;
      sample.events += 1;
      received.push({ id: field('id')!, event, at: now });
      if (event === 'model.text')
        for (const m of (JSON.parse(field('data')!) as { text: string }).text.matchAll(CLOCK))
          sample.text.push(now - Number(m[1]));
    }
  }
  const times = await historyTimes();
  for (const r of received) {
    const place = r.id.slice(r.id.lastIndexOf('|') + 1).split('.');
    if (place.length !== 3) continue;
    const at = times.get(place[1]!);
    if (at !== undefined && ['mcp.status', 'model.step', 'turn.ended'].includes(r.event))
      sample.history.push(r.at - at);
  }
}

function row(name: string, xs: number[]): string {
  const f = (p: number) => percentile(xs, p).toFixed(0);
  return `| ${name} | ${xs.length} | ${f(50)} | ${f(99)} | ${Math.max(...xs).toFixed(0)} |`;
}

async function main(): Promise<void> {
  const dir = await tempDir('dmcp-bench-stream-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const modelPids = new Set<number>();
  const load = cpuShare();
  const stops: (() => Promise<void>)[] = [];
  try {
    const model = await startModelServer(
      dir,
      'model',
      {
        prompts: {
          'one at a time': [{ clockChunks: 40, chunkDelayMs: 25 }],
          'all at once': [{ clockChunks: 60, chunkDelayMs: 100 }],
        },
        steps: [{ text: 'warm' }],
      },
      modelPids,
    );
    const configDir = join(dir, 'config');
    const dataDir = join(dir, 'data');
    await mkdir(configDir, { recursive: true });
    await writeFile(join(configDir, 'mcp.json'), JSON.stringify({ mcpServers: {} }));
    await writeModelsJson(configDir, {
      scripted: { provider: 'openai-compatible', model: 'scripted-1', baseURL: model.baseURL },
    });
    const env = { DMCP_CONFIG_DIR: configDir, DMCP_NO_USER_CONFIG: '0', DMCP_DATA_DIR: dataDir };
    const settings = loadSettings(env);
    const queue = benchQueue('stream');
    const worker = await startDurableWorker(temporal.address, queue, await writeDurableBundle(dir), {
      env,
      codec: true,
    });
    stops.push(() => stopProcess(worker));
    const turns = await TurnClient.connect({
      address: temporal.address,
      taskQueue: queue,
      dataConverter: dataConverterFor(settings),
      stepText: stepTextStoreFor(settings),
      dataDir,
    });
    stops.push(() => turns.close());
    const api = await startTestApi(turns, TOKEN, dir, {
      maxEventStreams: { total: CONCURRENT + 10, perToken: CONCURRENT + 10 },
      maxConnections: CONCURRENT * 2 + 20,
    });
    stops.push(() => api.close());

    const run = async (sessionId: string, prompt: string, sample: Sample) => {
      const started = await turns.startModelTurn({ sessionId, workspace: dir, model: { name: 'scripted', prompt } });
      const historyTimes = async () => {
        const times = new Map<string, number>();
        const history = await client.workflow.getHandle(started.turnId).fetchHistory();
        for (const e of history.events ?? [])
          times.set(String(e.eventId), Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6);
        return times;
      };
      await Promise.all([readStream(api, sessionId, sample, historyTimes), started.result()]);
    };

    log('warming up');
    await run(`bench-stream-warm-${randomBytes(3).toString('hex')}`, 'warm', { text: [], history: [], events: 0 });
    log(`${TURNS} turns, one stream at a time`);
    const one: Sample = { text: [], history: [], events: 0 };
    for (let i = 0; i < TURNS; i++)
      await run(`bench-stream-one-${i}-${randomBytes(3).toString('hex')}`, 'one at a time', one);
    log(`${CONCURRENT} turns and streams at once`);
    const many: Sample = { text: [], history: [], events: 0 };
    const rss0 = process.memoryUsage().rss;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENT }, (_, i) =>
        run(`bench-stream-many-${i}-${randomBytes(3).toString('hex')}`, 'all at once', many),
      ),
    );
    const manySeconds = (Date.now() - t0) / 1000;
    const rss1 = process.memoryUsage().rss;

    const logs = await textLogs(join(dataDir, 'payloads', 'streams'));
    const records = one.text.length + many.text.length;
    const table = [
      '| events | n | p50 ms | p99 ms | max ms |',
      '|---|---:|---:|---:|---:|',
      row('text, one stream', one.text),
      row("history's events, one stream", one.history),
      row(`text, ${CONCURRENT} streams`, many.text),
      row(`history's events, ${CONCURRENT} streams`, many.history),
    ].join('\n');
    const body = [
      `Command: \`npm run build:bench && node dist/bench/turnStream.js\`. Machine: ${await machineLine()}.`,
      `Time from the worker producing an event to an SSE client of the API receiving it. Text: a chunk's send time (the model server's clock in the chunk) to its receipt; it includes the model server to worker hop, the 50 ms write interval and the 25 ms read interval. History's events: the history event's time to the SSE event's receipt.`,
      table,
      `${CONCURRENT} streams at once: ${many.events} events (all ${many.text.length} of the ${CONCURRENT * 60} chunks sent) received by ${CONCURRENT} SSE clients of one API process in ${manySeconds.toFixed(1)} s; that process (API and clients) grew by ${((rss1 - rss0) / 1024 / 1024).toFixed(0)} MiB RSS.`,
      `Cost: ${logs.files} text logs hold ${logs.bytes} bytes for ${records} chunks sent (${(logs.bytes / Math.max(1, records)).toFixed(0)} bytes a chunk, in ${logs.records} records of ${(logs.bytes / Math.max(1, logs.records)).toFixed(0)} bytes: base64 of the codec's payload); history holds none of it (a step's whole text is in its result once, as before). History's own events cost nothing more: they are read from history as it is.`,
      `${load()}.`,
    ].join('\n\n');
    process.stdout.write(`${body}\n`);
    await writeSection('turnStream', `Run of ${new Date().toISOString().slice(0, 19).replace('T', ' ')} UTC`, body);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    killGroups(modelPids);
    await endBench({ client, temporal, dir });
  }
}

/** The text logs under `dir`: files, bytes, and records (lines). */
async function textLogs(dir: string): Promise<{ files: number; bytes: number; records: number }> {
  let files = 0;
  let bytes = 0;
  let records = 0;
  for (const turn of await readdir(dir).catch(() => [])) {
    for (const name of await readdir(join(dir, turn))) {
      const file = join(dir, turn, name);
      files += 1;
      bytes += (await stat(file)).size;
      records += (await readFile(file, 'utf8')).split('\n').filter(Boolean).length;
    }
  }
  return { files, bytes, records };
}

runBench(main);
