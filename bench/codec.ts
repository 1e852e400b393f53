/**
 * The compression codec's cost on one interactive call's payloads, side by side at two thresholds:
 * 256 bytes (compressing the call's input, as before) and the current MIN_COMPRESS_BYTES. Each
 * iteration encodes and decodes what a fast-path call moves through the codec: the call's input
 * and its result, as the worker's data converter sees them. In-process; CPU from process.cpuUsage
 * (the thread pool's brotli work included).
 * Run on demand: `npm run build:bench && node dist/bench/codec.js` (BENCH_CODEC_CALLS, default 3000).
 */
import type { Payload } from '@temporalio/common';
import { CompressionCodec, MIN_COMPRESS_BYTES } from '../payloads/dataConverter.js';
import { cpuShare, machineLine, writeSection } from './support.js';
import { runBench } from './procs.js';

const CALLS = Number(process.env.BENCH_CODEC_CALLS ?? 3000);
const ROUNDS = 3;

const json = (o: unknown): Payload => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(JSON.stringify(o)),
});
const input = json({
  sessionId: 'fast-lq3k2-1',
  callId: 'd-mfx1-2a',
  name: 'mcp__safe__echo',
  server: 'safe',
  tool: 'echo',
  arguments: { text: 'call 17' },
  annotations: {},
  requestTimeoutMs: 59000,
  workerQueue: 'durable-mcp@worker-host-12345-0a1b2c3d',
});
const result = json({
  status: 'ok',
  content: [{ type: 'text', text: 'Echo: call 17' }],
  isError: false,
  startedAt: '2026-12-04T14:00:00.000Z',
  durationMs: 2,
  attempts: 1,
  callId: 'd-mfx1-2a',
});

async function perCall(codec: CompressionCodec): Promise<{ cpuMs: number; wallMs: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i += 1) await codec.decode(await codec.encode([input, result]));
  const cpu = process.cpuUsage(cpu0);
  return { cpuMs: (cpu.user + cpu.system) / 1000 / CALLS, wallMs: (performance.now() - t0) / CALLS };
}

async function main(): Promise<void> {
  const share = cpuShare();
  const variants: [string, CompressionCodec][] = [
    ['256 bytes (before)', new CompressionCodec({ minBytes: 256 })],
    [`${MIN_COMPRESS_BYTES} bytes (now)`, new CompressionCodec()],
  ];
  const sizes = await Promise.all(variants.map(async ([, c]) => (await c.encode([input]))[0]!.data!.byteLength));
  const got = new Map(variants.map(([label]) => [label, [] as { cpuMs: number; wallMs: number }[]]));
  for (let r = 0; r < ROUNDS; r += 1)
    for (const [label, codec] of r % 2 ? [...variants].reverse() : variants) got.get(label)!.push(await perCall(codec));
  const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  const rows = variants.map(([label], i) => {
    const g = got.get(label)!;
    return `| ${label} | ${sizes[i]} | ${med(g.map((x) => x.cpuMs)).toFixed(3)} | ${med(g.map((x) => x.wallMs)).toFixed(3)} |`;
  });
  const body = [
    `Command: \`npm run build:bench && node dist/bench/codec.js\`. Machine: ${await machineLine()}; ${share()}.`,
    '',
    `The payloads one fast-path call moves through the worker's codec, its input (${input.data!.byteLength} bytes of JSON) and its result (${result.data!.byteLength}), encoded and decoded ${CALLS} times in a row, ${ROUNDS} rounds alternating the two thresholds; the median round. CPU includes the thread pool's brotli work.`,
    '',
    '| smallest payload compressed | input as stored (bytes) | CPU per call (ms) | wall per call (ms) |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
  process.stdout.write(`${body}\n`);
  await writeSection('codec', 'Compressing small payloads', body);
}

runBench(main);
