/**
 * Model turns: what a long model loop costs in history, in the payload store and in time per step,
 * and the same loop side by side with bare Temporal and with no Temporal at all. The model is the
 * scripted OpenAI-compatible server (test/fixtures/modelServer.ts): every step asks for one call of
 * the fixture's echo with about 1 KB of random text, the last one answers.
 *
 *   1. One durable-mcp model turn of BENCH_MODEL_STEPS (default 300) tool steps and a final answer;
 *      history (bytes and events) and the store (the conversation's nodes) at steps 1, 1/3 and all,
 *      read after the turn from history (by each `modelStep`'s completion) and from the store (the
 *      node of each step, walked from the turn's head).
 *   2. Per-step time at step 10 against the last steps, from history (one `modelStep` scheduled to
 *      the next); the same for the in-process loop (c) as the reference of what the model's growing
 *      request costs anyway.
 *   3. Side by side, BENCH_MODEL_SIDE_STEPS (default 30) steps, BENCH_MODEL_ROUNDS (default 3)
 *      rounds, modes rotated each round: (a) the durable-mcp model turn, (b) the same loop on bare
 *      Temporal (bench/bareModelLoop.ts: the whole message list as the model activity's input, an
 *      MCP activity per call), (c) the same loop in this process (AI SDK + a plain MCP client). Per
 *      step: the model server's first to last request of the run, over the steps between them.
 *
 * Run on demand: `npm run build:bench && node dist/bench/modelTurn.js` (or `npm run bench`).
 * BENCH_MODEL_PROFILE_DIR=<dir>: CPU profiles of both workers there (`node dist/bench/cpuProfile.js <dir>/durable`).
 * `node dist/bench/modelTurn.js --bare-worker <queue>` is the bare worker of (b) (started by the bench).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Client as McpClient } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { generateText, jsonSchema, tool, type JSONSchema7, type ModelMessage, type ToolSet } from 'ai';
import { TurnClient } from '../client/turnClient.js';
import type { TurnResult } from '../contract/index.js';
import { conversationStoreFor, type ConversationStore } from '../models/conversationStore.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import { loadSettings } from '../settings/index.js';
import { killGroups, tempDir } from '../test/support/harness.js';
import { startModelServer, writeModelsJson, type ModelServer } from '../test/support/models.js';
import { stopOnSigterm } from '../test/support/standalone.js';
import { toolMessage, type BareModelActivities, type bareModelLoop } from './bareModelLoop.js';
import { echoFixture, runBench, startNode, stopProcess } from './procs.js';
import { benchQueue, connectClient, endBench, startDurableWorker, startTemporal, writeDurableBundle } from './setup.js';
import { cpuShare, machineLine, percentile, writeSection } from './support.js';

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const { HistoryEvent } = proto.temporal.api.history.v1;
const LONG = Number(process.env.BENCH_MODEL_STEPS ?? 300);
const SIDE = Number(process.env.BENCH_MODEL_SIDE_STEPS ?? 30);
const ROUNDS = Number(process.env.BENCH_MODEL_ROUNDS ?? 3);
const TEXT_CHARS = 1000;
const PROFILE_DIR = process.env.BENCH_MODEL_PROFILE_DIR;
const TOOL = 'mcp__echo__echo';
const SYSTEM = 'You are a careful assistant.';
const PROMPTS = { long: 'run the long loop', side: 'run the side loop', warm: 'run the warm loop' };
const HISTORY_LIMIT_BYTES = 50 * 1024 * 1024;
const HISTORY_LIMIT_EVENTS = 51_200;
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const median = (xs: number[]) => percentile(xs, 50);
const eventMs = (e: HistoryEvent) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
const kb = (bytes: number) => (bytes / 1024).toFixed(1);

/** Random letters and digits: text the codec's compression cannot shrink much, as a real tool result. */
function randomText(chars: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  return [...randomBytes(chars)].map((b) => alphabet[b % alphabet.length]).join('');
}

/** `n` steps that each ask for one echo of ~1 KB, then the answer. */
function scriptSteps(n: number): unknown[] {
  return [
    ...Array.from({ length: n }, () => ({ toolCalls: [{ name: TOOL, arguments: { text: randomText(TEXT_CHARS) } }] })),
    { text: `done after ${n} tool calls` },
  ];
}

// --- the loop without durable-mcp: (b)'s activities, and (c) in this process ---

type Echo = { mcp: McpClient; tools: ToolSet };

/** The echo server through a plain MCP client; its tools offered to the model under durable-mcp's public names. */
async function connectEcho(): Promise<Echo> {
  const mcp = new McpClient({ name: 'bench-model-loop', version: '1.0.0' });
  await mcp.connect(new StdioClientTransport({ command: process.execPath, args: [echoFixture] }));
  const { tools } = await mcp.listTools();
  return {
    mcp,
    tools: Object.fromEntries(
      tools.map((t) => [
        `mcp__echo__${t.name}`,
        tool({ description: t.description ?? '', inputSchema: jsonSchema(t.inputSchema as JSONSchema7) }),
      ]),
    ),
  };
}

function loopActivities(baseURL: string, echo: Echo): BareModelActivities {
  const model = createOpenAICompatible({ name: 'scripted', baseURL, includeUsage: true })('scripted-1');
  return {
    async modelCall({ messages }) {
      const r = await generateText({ model, system: SYSTEM, messages, tools: echo.tools, maxRetries: 0 });
      return {
        text: r.text,
        toolCalls: r.toolCalls.map((c) => ({
          id: c.toolCallId,
          name: c.toolName,
          arguments: c.input as Record<string, unknown>,
        })),
        messages: r.response.messages,
      };
    },
    async mcpCall(call) {
      const r = await echo.mcp.callTool({ name: call.name.replace(/^mcp__echo__/, ''), arguments: call.arguments });
      const text = (r.content as { text?: string }[]).map((c) => c.text ?? '').join('');
      return { text, isError: r.isError === true };
    },
  };
}

/** (c): bench/bareModelLoop.ts's loop with direct calls; returns each step's ms (model request to the next). */
async function directLoop(parts: BareModelActivities, prompt: string, maxSteps: number): Promise<number[]> {
  const messages: ModelMessage[] = [{ role: 'user', content: prompt }];
  const starts: number[] = [];
  for (let step = 1; step <= maxSteps; step++) {
    starts.push(performance.now());
    const answer = await parts.modelCall({ messages });
    messages.push(...answer.messages);
    if (answer.toolCalls.length === 0) break;
    messages.push(toolMessage(answer.toolCalls, await Promise.all(answer.toolCalls.map((c) => parts.mcpCall(c)))));
  }
  if (starts.length !== maxSteps) throw new Error(`direct loop: ${starts.length} steps, expected ${maxSteps}`);
  return starts.slice(1).map((t, i) => t - starts[i]!);
}

/** `--bare-worker <queue>`: the worker of (b), in its own process as the durable-mcp worker is. */
async function bareWorker(): Promise<void> {
  const address = process.env.TEMPORAL_ADDRESS!;
  const taskQueue = process.argv[3]!;
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const echo = await connectEcho();
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./bareModelLoop.js', import.meta.url)),
    logger: new DefaultLogger('WARN'),
  });
  const connection = await NativeConnection.connect({ address });
  const activities = loopActivities(process.env.BENCH_MODEL_URL!, echo);
  const worker = await Worker.create({ connection, taskQueue, workflowBundle, activities });
  const running = worker.run();
  stopOnSigterm(async () => {
    worker.shutdown();
    await running;
    await echo.mcp.close();
    await connection.close();
  });
  process.stdout.write(`${JSON.stringify({ pid: process.pid })}\n`);
}

// --- runs ---

type Runs = { dir: string; turns: TurnClient; bare: Client; bareQueue: string; direct: BareModelActivities };

/** (a): one durable-mcp model turn of `steps` tool steps and the answer, checked. */
async function durableRun(r: Runs, prompt: string, steps: number): Promise<TurnResult> {
  const result = await r.turns.runModelTurn({
    sessionId: `bench-model-${randomBytes(5).toString('hex')}`,
    workspace: r.dir,
    servers: { inlineSpecs: [`echo:${process.execPath} ${echoFixture}`] },
    endSession: true,
    model: { name: 'scripted', prompt, maxSteps: steps + 1, newConversation: true },
  });
  const failed = result.calls.filter((c) => c.outcome.status !== 'ok' || c.outcome.isError).length;
  if (result.endedBy !== 'answer' || result.modelSteps?.length !== steps + 1 || failed > 0)
    throw new Error(
      `durable model turn: ended by ${result.endedBy}, ${result.modelSteps?.length} steps, ${failed} failed`,
    );
  return result;
}

/** (b): the bare loop's workflow to its end; its ID. */
async function bareRun(r: Runs, prompt: string, steps: number): Promise<string> {
  const workflowId = `bench-bare-model-${randomBytes(5).toString('hex')}`;
  const result = await r.bare.workflow.execute<typeof bareModelLoop>('bareModelLoop', {
    taskQueue: r.bareQueue,
    workflowId,
    args: [{ prompt, maxSteps: steps + 1 }],
  });
  if (result.steps !== steps + 1 || result.calls !== steps)
    throw new Error(`bare model loop: ${result.steps} steps, ${result.calls} calls`);
  return workflowId;
}

async function events(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  return (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

const eventBytes = (e: HistoryEvent) => HistoryEvent.encode(e).finish().length;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Per step of an activity `name` (1-based, in order): its scheduled and completed event indexes. */
function activitySteps(list: HistoryEvent[], name: string): { scheduled: number; completed: number }[] {
  const completed = new Map<string, number>();
  list.forEach((e, i) => {
    const id = e.activityTaskCompletedEventAttributes?.scheduledEventId;
    if (id !== undefined && id !== null) completed.set(String(id), i);
  });
  return list.flatMap((e, i) =>
    e.activityTaskScheduledEventAttributes?.activityType?.name === name
      ? [{ scheduled: i, completed: completed.get(String(e.eventId)) ?? -1 }]
      : [],
  );
}

type Phase = 'model' | 'tool' | 'rest' | 'wft';
/**
 * Per step of a loop, from history: its model and tool activities (scheduled to completed), the rest
 * of the step, and how much of the rest the worker spent on workflow tasks (started to completed).
 */
function phases(list: HistoryEvent[], model: string, toolActivity: string): Record<Phase, number>[] {
  const ms = (s: { scheduled: number; completed: number }) => eventMs(list[s.completed]!) - eventMs(list[s.scheduled]!);
  const [models, tools] = [activitySteps(list, model), activitySteps(list, toolActivity)];
  return models.slice(1).map((next, i) => {
    const [m, t] = [ms(models[i]!), ms(tools[i]!)];
    const wft = sum(
      list.slice(models[i]!.scheduled, next.scheduled).map((e) => {
        const started = e.workflowTaskCompletedEventAttributes?.startedEventId;
        return started ? eventMs(e) - eventMs(list[Number(started) - 1]!) : 0;
      }),
    );
    return {
      model: m,
      tool: t,
      wft,
      rest: eventMs(list[next.scheduled]!) - eventMs(list[models[i]!.scheduled]!) - m - t,
    };
  });
}
/** `| label | model | tool | rest | workflow tasks | sum |`, medians of `rows`. */
function phaseRow(label: string, rows: Record<Phase, number>[]): string {
  const [m, t, r, w] = (['model', 'tool', 'rest', 'wft'] as const).map((k) => median(rows.map((x) => x[k])));
  return `| ${label} | ${m!.toFixed(1)} | ${t!.toFixed(1)} | ${r!.toFixed(1)} | ${w!.toFixed(1)} | ${(m! + t! + r!).toFixed(1)} |`;
}
const PHASES = [
  '(ms) | `callTool` (ms) | the rest (ms) | of it, workflow tasks on the worker (ms) | sum (ms) |',
  '|---|---|---|---|---|---|',
];

// --- 1 and 2: one long turn ---

/** Bytes of each node of the conversation ending at `head` (oldest first), and of the turn's other new files. */
async function storeBytes(
  store: ConversationStore,
  payloadDir: string,
  head: string,
  sessionId: string,
  before: Set<string>,
): Promise<{ nodes: number[]; context: number; other: number }> {
  const chain: string[] = [];
  for (let ref: string | undefined = head; ref !== undefined; ) {
    chain.unshift(ref);
    const node = await store.get(ref, sessionId);
    ref = node.kind === 'messages' ? node.parent : undefined;
  }
  const size = async (digest: string) => (await stat(join(payloadDir, `${digest}.bin`))).size;
  const nodes = await Promise.all(chain.map(size));
  let context = 0;
  let other = 0;
  for (const file of await readdir(payloadDir)) {
    const digest = file.replace(/\.bin$/, '');
    if (before.has(file) || chain.includes(digest)) continue;
    const isContext = await store.get(digest, sessionId).then(
      (n) => n.kind === 'context',
      () => false,
    );
    if (isContext) context += await size(digest);
    else other += await size(digest);
  }
  return { nodes, context, other };
}

async function longTurn(r: Runs, store: ConversationStore, payloadDir: string): Promise<string> {
  log(`durable-mcp: one model turn of ${LONG} tool steps and its answer`);
  const before = new Set(await readdir(payloadDir).catch(() => [] as string[]));
  const t0 = performance.now();
  const result = await durableRun(r, PROMPTS.long, LONG);
  const wallS = (performance.now() - t0) / 1000;
  const list = await events(r.turns.client, result.turnId);
  const sizes = list.map(eventBytes);
  const prefix: number[] = [];
  for (const s of sizes) prefix.push((prefix.at(-1) ?? 0) + s);
  const steps = activitySteps(list, 'modelStep');
  const st = await storeBytes(store, payloadDir, result.conversation!, result.sessionId, before);
  const storeAt = (k: number) => st.context + sum(st.nodes.slice(0, k));
  const marks = [...new Set([1, Math.round(LONG / 3), LONG])];
  const at = marks.map((k) => ({ k, bytes: prefix[steps[k - 1]!.completed]!, events: steps[k - 1]!.completed + 1 }));
  const per = (f: (k: number) => number, a: number, b: number) => (f(b) - f(a)) / (b - a);
  const hist = (k: number) => at.find((m) => m.k === k)!.bytes;
  const evs = (k: number) => at.find((m) => m.k === k)!.events;
  const [m1, m2, m3] = [marks[0]!, marks[1]!, marks.at(-1)!];
  const rows = at.map(
    (m) => `| ${m.k} | ${m.bytes} (${kb(m.bytes)} KiB) | ${m.events} | ${storeAt(m.k)} (${kb(storeAt(m.k))} KiB) |`,
  );
  const perRow = (a: number, b: number) =>
    `| per step, ${a} -> ${b} | ${per(hist, a, b).toFixed(0)} | ${per(evs, a, b).toFixed(2)} | ${per(storeAt, a, b).toFixed(0)} |`;
  const total = sum(sizes);
  const perStepHist = per(hist, m1, m3);
  const flat = per(hist, m2, m3) / per(hist, m1, m2);
  const flatStore = per(storeAt, m2, m3) / per(storeAt, m1, m2);
  // 2: time per step from history, one modelStep scheduled to the next.
  const stepMs = steps.slice(1).map((s, i) => eventMs(list[s.scheduled]!) - eventMs(list[steps[i]!.scheduled]!));
  const early = median(stepMs.slice(4, 15));
  const split = phases(list, 'modelStep', 'callTool');
  const late = median(stepMs.slice(LONG - 11, LONG));
  log(`direct loop (c): ${LONG} tool steps in this process, for the reference`);
  const direct = await directLoop(r.direct, PROMPTS.long, LONG + 1);
  const dEarly = median(direct.slice(4, 15));
  const dLate = median(direct.slice(LONG - 11, LONG));
  return [
    `### 1. History and store, one turn of ${LONG} tool steps and its answer`,
    '',
    `Each step: one \`modelStep\` activity (the model asks for one \`${TOOL}\` call of ${TEXT_CHARS} random characters), then that call (a regular activity, its ~1 KB result). Read after the turn: history up to each \`modelStep\`'s completion event (sum of each event's protobuf bytes), the store as the step's conversation node (\`payloads/<digest>.bin\`, brotli) plus the turn's context node (${st.context} bytes). The turn took ${wallS.toFixed(1)} s.`,
    '',
    '| at step | history bytes | events | store bytes |',
    '|---|---|---|---|',
    ...rows,
    perRow(m1, m2),
    perRow(m2, m3),
    '',
    `Growth per step, later against earlier: history **${flat.toFixed(2)}x**, store **${flatStore.toFixed(2)}x** (goal: flat, 1.00x).`,
    `The whole turn (${LONG + 1} steps, completed): **${total} bytes (${(total / 1024 / 1024).toFixed(2)} MiB), ${list.length} events**: ${((total / HISTORY_LIMIT_BYTES) * 100).toFixed(1)} % of Temporal's 50 MB and ${((list.length / HISTORY_LIMIT_EVENTS) * 100).toFixed(1)} % of its 51,200 events. At ${perStepHist.toFixed(0)} bytes and ${per(evs, m1, m3).toFixed(1)} events per step, the event limit comes first, after about ${Math.floor(HISTORY_LIMIT_EVENTS / per(evs, m1, m3))} steps (\`maxSteps\` is at most 1000). The store also got ${st.other} bytes of other payloads (the turn's result, over the 16 KiB threshold).`,
    '',
    `### 2. Time per step, early against late`,
    '',
    '| loop | median ms/step, steps 5-15 | median ms/step, steps ' + `${LONG - 10}-${LONG}` + ' | late / early |',
    '|---|---|---|---|',
    `| (a) durable-mcp model turn (history: \`modelStep\` scheduled to the next) | ${early.toFixed(1)} | ${late.toFixed(1)} | **${(late / early).toFixed(2)}x** |`,
    `| (c) the same loop in one process, no Temporal (reference) | ${dEarly.toFixed(1)} | ${dLate.toFixed(1)} | ${(dLate / dEarly).toFixed(2)}x |`,
    '',
    `Where (a)'s step goes, medians from history (an activity from scheduled to completed; the rest is the time between them, the worker's workflow tasks (started to completed) and the waits for them):`,
    '',
    `| steps | \`modelStep\` ${PHASES[0]}`,
    PHASES[1],
    phaseRow('5-15', split.slice(4, 15)),
    phaseRow(`${LONG - 10}-${LONG}`, split.slice(LONG - 11, LONG)),
    '',
    `Goal for (a): within 1.10x. Late steps cost (a) ${(late - early).toFixed(1)} ms more than early ones, and the same loop without Temporal ${(dLate - dEarly).toFixed(1)} ms more: every step sends the whole conversation to the model (at step ${LONG}, ~${Math.round((LONG * 2 * TEXT_CHARS) / 1024)} KiB of messages). What durable-mcp adds to a step, (a) - (c): ${(early - dEarly).toFixed(1)} ms early, ${(late - dLate).toFixed(1)} ms late (**${((late - dLate) / (early - dEarly)).toFixed(2)}x**).`,
  ].join('\n');
}

// --- 3: side by side ---

type Mode = 'a' | 'b' | 'c';
const MODES: Record<Mode, string> = {
  a: '(a) durable-mcp model turn',
  b: '(b) bare Temporal, whole message list as the activity input',
  c: '(c) one process, no Temporal',
};

/** ms per step of one run: the model server's first to last request of the run, over its tool steps. */
async function perStep(model: ModelServer, from: number, steps: number): Promise<{ ms: number; seen: number }> {
  const requests = (await model.requests()).slice(from);
  if (requests.length !== steps + 1 || requests.some((q) => q.status !== 200))
    throw new Error(
      `expected ${steps + 1} answered model requests, got ${JSON.stringify(requests.map((q) => q.status))}`,
    );
  return { ms: (requests.at(-1)!.at - requests[0]!.at) / steps, seen: from + requests.length };
}

async function sideBySide(r: Runs, model: ModelServer): Promise<string> {
  const run = async (mode: Mode, prompt: string, steps: number): Promise<string | undefined> => {
    if (mode === 'a') return (await durableRun(r, prompt, steps)).turnId;
    if (mode === 'b') return bareRun(r, prompt, steps);
    await directLoop(r.direct, prompt, steps + 1);
    return undefined;
  };
  log('side by side: one warm-up run per mode');
  for (const mode of Object.keys(MODES) as Mode[]) await run(mode, PROMPTS.warm, 3);
  let seen = (await model.requests()).length;
  const ms: Record<Mode, number[]> = { a: [], b: [], c: [] };
  const ids: Partial<Record<Mode, string>> = {};
  const order = Object.keys(MODES) as Mode[];
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of order.map((_, i) => order[(i + round) % order.length]!)) {
      log(`side by side: round ${round + 1}, ${MODES[mode]}`);
      const id = await run(mode, PROMPTS.side, SIDE);
      if (id) ids[mode] = id;
      const step = await perStep(model, seen, SIDE);
      seen = step.seen;
      ms[mode].push(step.ms);
    }
  }
  const all = { a: median(ms.a), b: median(ms.b), c: median(ms.c) };
  const hist = async (mode: 'a' | 'b', client: Client) => {
    const list = await events(client, ids[mode]!);
    return { bytes: sum(list.map(eventBytes)), events: list.length, list };
  };
  const ha = await hist('a', r.turns.client);
  const hb = await hist('b', r.bare);
  // (b)'s model inputs grow by a step's messages each step: fit that growth to say where it meets 50 MB.
  const inputs = activitySteps(hb.list, 'modelCall').map((s) => eventBytes(hb.list[s.scheduled]!));
  const growth = (inputs.at(-1)! - inputs[0]!) / (inputs.length - 1);
  const fixed = (hb.bytes - sum(inputs)) / SIDE + inputs[0]!;
  let limitSteps = SIDE;
  while (fixed * limitSteps + (growth * limitSteps * (limitSteps - 1)) / 2 < HISTORY_LIMIT_BYTES) limitSteps++;
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ');
  return [
    `### 3. Side by side, ${SIDE} tool steps and the answer, ${ROUNDS} rounds`,
    '',
    `Modes rotated each round, after one warm-up run each. ms/step: the model server's log, first to last request of the run, over the ${SIDE} steps between them (model step + tool call + what each loop does between them; the turn's start and servers are outside). (a) runs \`durable-mcp worker\`'s data converter; (b) the SDK's default one; (b) and (c) use one MCP client connected once, (a) the turn's own echo server.`,
    '',
    '| mode | ms/step per round | median ms/step | history bytes at the end | events |',
    '|---|---|---|---|---|',
    `| ${MODES.a} | ${fmt(ms.a)} | ${all.a.toFixed(1)} | ${ha.bytes} | ${ha.events} |`,
    `| ${MODES.b} | ${fmt(ms.b)} | ${all.b.toFixed(1)} | ${hb.bytes} | ${hb.events} |`,
    `| ${MODES.c} | ${fmt(ms.c)} | ${all.c.toFixed(1)} | - | - |`,
    '',
    `a / b: **${(all.a / all.b).toFixed(2)}x** (goal: at most 1.20x; per round ${ms.a.map((x, i) => (x / ms.b[i]!).toFixed(2)).join(', ')}). a / c: **${(all.a / all.c).toFixed(2)}x**.`,
    '',
    `Where a step's time goes in the last round's run (history: medians over its steps; an activity from scheduled to completed, the rest is the time between them):`,
    '',
    `| mode | model activity ${PHASES[0]!.replace('`callTool`', 'tool activity')}`,
    PHASES[1],
    phaseRow(MODES.a, phases(ha.list, 'modelStep', 'callTool')),
    phaseRow(MODES.b, phases(hb.list, 'modelCall', 'mcpCall')),
    '',
    `History at ${SIDE} steps: (b) is **${(hb.bytes / ha.bytes).toFixed(1)}x** (a)'s. (b)'s model activity input grows by ${growth.toFixed(0)} bytes a step (${inputs[0]} bytes at step 1, ${inputs.at(-1)} at step ${inputs.length}): its history grows with the square of the steps and reaches 50 MB at about ${limitSteps} steps, where (a) grows by the same amount every step.`,
  ].join('\n');
}

// --- main ---

async function main(): Promise<void> {
  const dir = await tempDir('dmcp-bench-model-');
  const temporal = await startTemporal();
  const bareClient = await connectClient(temporal.address);
  const modelPids = new Set<number>();
  const load = cpuShare();
  const script = {
    prompts: { [PROMPTS.long]: scriptSteps(LONG), [PROMPTS.side]: scriptSteps(SIDE), [PROMPTS.warm]: scriptSteps(3) },
  };
  const stops: (() => Promise<void>)[] = [];
  let echo: Echo | undefined;
  try {
    const model = await startModelServer(dir, 'model', script, modelPids);
    const configDir = join(dir, 'config');
    const dataDir = join(dir, 'data');
    await mkdir(configDir, { recursive: true });
    await writeFile(join(configDir, 'mcp.json'), JSON.stringify({ mcpServers: {} }));
    await writeModelsJson(
      configDir,
      { scripted: { provider: 'openai-compatible', model: 'scripted-1', baseURL: model.baseURL } },
      SYSTEM,
    );
    const env = { DMCP_CONFIG_DIR: configDir, DMCP_NO_USER_CONFIG: '0', DMCP_DATA_DIR: dataDir };
    const settings = loadSettings(env);
    const durableQueue = benchQueue('model');
    const bareQueue = benchQueue('model-bare');
    log('starting the durable-mcp and bare workers');
    const worker = await startDurableWorker(temporal.address, durableQueue, await writeDurableBundle(dir), {
      env,
      codec: true,
      ...(PROFILE_DIR ? { execArgv: ['--cpu-prof', '--cpu-prof-dir', join(PROFILE_DIR, 'durable')] } : {}),
    });
    stops.push(() => stopProcess(worker));
    const bare = await startNode(fileURLToPath(import.meta.url), ['--bare-worker', bareQueue], {
      env: { PATH: process.env.PATH, TEMPORAL_ADDRESS: temporal.address, BENCH_MODEL_URL: model.baseURL },
      ...(PROFILE_DIR ? { execArgv: ['--cpu-prof', '--cpu-prof-dir', join(PROFILE_DIR, 'bare')] } : {}),
    });
    stops.push(() => stopProcess(bare));
    const turns = await TurnClient.connect({
      address: temporal.address,
      taskQueue: durableQueue,
      dataConverter: dataConverterFor(settings),
      dataDir,
    });
    stops.push(() => turns.close());
    echo = await connectEcho();
    const runs: Runs = { dir, turns, bare: bareClient, bareQueue, direct: loopActivities(model.baseURL, echo) };
    const side = await sideBySide(runs, model);
    const long = await longTurn(runs, conversationStoreFor(settings), join(dataDir, 'payloads'));
    const command = '`npm run build:bench && node dist/bench/modelTurn.js`';
    const body = [`Command: ${command}. Machine: ${await machineLine()}.`, long, side, `${load()}.`].join('\n\n');
    process.stdout.write(`${body}\n`);
    await writeSection('modelTurn', `Run of ${new Date().toISOString().slice(0, 19).replace('T', ' ')} UTC`, body);
  } finally {
    await echo?.mcp.close().catch(() => undefined);
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    killGroups(modelPids);
    await endBench({ client: bareClient, temporal, dir });
  }
}

if (process.argv[2] === '--bare-worker') await bareWorker();
else runBench(main);
