/**
 * The caller of bench/callerSide.ts, in a process of its own as an agent loop would be: ours through
 * `TurnClient.connect` (the project's data converter, as a user gets it) and bare through a plain
 * `WorkflowHandle` with the SDK's default converter, one Update per call, each result decoded.
 * Usage: node callerClient.js <address> <durable queue> <bare queue> <calls> <rounds>. Prints one JSON
 * line: each contender's call times in ms, per round.
 */
import { Client, Connection } from '@temporalio/client';
import { TurnClient } from '../client/turnClient.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import { loadSettings } from '../settings/index.js';
import { bareFloorUpdate, bareLocalEchoUpdate, bareEndUpdate, type bareTurn } from './bareWorkflow.js';

const [address, durableQueue, bareQueue, callsArg, roundsArg] = process.argv.slice(2);
if (!address || !durableQueue || !bareQueue) {
  process.stderr.write('usage: node callerClient.js <address> <durable queue> <bare queue> <calls> <rounds>\n');
  process.exit(2);
}
const CALLS = Number(callsArg ?? 40);
const ROUNDS = Number(roundsArg ?? 3);
const WARMUP = 5;

const settings = loadSettings(process.env);
// BENCH_CALLER_PLAIN: the SDK's default converter on both sides, to see what the codec costs.
const plain = process.env.BENCH_CALLER_PLAIN === '1';
const turns = await TurnClient.connect({
  address,
  taskQueue: durableQueue,
  ...(plain ? {} : { dataConverter: dataConverterFor(settings) }),
  dataDir: settings.dataDir,
});
const run = `${Date.now().toString(36)}-${process.pid}`;
const turn = await turns.startTurn({ sessionId: `caller-${run}` });
if (!turn.tools.some((t) => t.name === 'mcp__safe__echo'))
  throw new Error(`the turn lists no mcp__safe__echo: ${turn.serversParagraph}`);
const bare = new Client({ connection: await Connection.connect({ address }) });
const handle = await bare.workflow.start<typeof bareTurn>('bareTurn', {
  taskQueue: bareQueue,
  workflowId: `caller-bare-${run}`,
  args: [],
});

let seq = 0;
const contenders: Record<string, (text: string) => Promise<void>> = {
  ours: async (text) => {
    const outcome = await turn.callTool({ id: `c${seq++}`, name: 'mcp__safe__echo', arguments: { text } });
    if (outcome.status !== 'ok' || outcome.isError) throw new Error(`ours: ${outcome.errorMessage}`);
  },
  bare: async (text) => {
    const result = await handle.executeUpdate(bareLocalEchoUpdate, { args: [`b${seq++}`, { text }] });
    if (result.isError) throw new Error('bare: the echo failed');
  },
  floor: async () => {
    await handle.executeUpdate(bareFloorUpdate, { args: [`f${seq++}`] });
  },
};
const names = Object.keys(contenders);
for (const name of names) for (let i = 0; i < WARMUP; i++) await contenders[name]!(`warm ${i}`);

const times: Record<string, number[][]> = Object.fromEntries(names.map((n) => [n, []]));
for (let round = 0; round < ROUNDS; round++) {
  // Interleaved call by call, the order rotated each round, so a noisy moment hits all alike.
  const order = names.map((_, i) => names[(i + round) % names.length]!);
  for (const name of names) times[name]!.push([]);
  for (let i = 0; i < CALLS; i++) {
    for (const name of order) {
      const started = performance.now();
      await contenders[name]!(`call ${i}`);
      times[name]![round]!.push(performance.now() - started);
    }
  }
}
await turn.end();
await handle.executeUpdate(bareEndUpdate);
await turns.close();
await bare.connection.close();
process.stdout.write(`${JSON.stringify(times)}\n`);
