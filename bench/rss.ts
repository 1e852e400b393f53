/**
 * Worker memory with many sessions: one durable-mcp worker process, then 10 and 50
 * sessions of 3 stdio servers each (the fixture echo server), every session's turn ended but its
 * servers kept (DMCP_SESSION_IDLE). RSS of the worker process and of its servers, separately.
 * Run on demand: `npm run build:bench && node dist/bench/rss.js` (BENCH_SESSIONS, default 50).
 */
import { TurnClient } from '../client/turnClient.js';
import { tempDir } from '../test/support/harness.js';
import { descendants, echoFixture, rssKiB, sleep, runBench, stopProcess } from './procs.js';
import { benchQueue, connectClient, endBench, startDurableWorker, startTemporal, writeDurableBundle } from './setup.js';
import { machineLine, writeSection } from './support.js';

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 50);
const SERVERS = 3;
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const mib = (kib: number) => (kib / 1024).toFixed(0);

async function main(): Promise<void> {
  const started = Date.now();
  const dir = await tempDir('dmcp-rss-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  try {
    const taskQueue = benchQueue('rss');
    const worker = await startDurableWorker(temporal.address, taskQueue, await writeDurableBundle(dir));
    const turns = new TurnClient({ client, taskQueue });
    const specs = Array.from({ length: SERVERS }, (_, i) => `s${i}:${process.execPath} ${echoFixture}`);
    const rows: string[] = [];
    const measure = async (sessions: number) => {
      await sleep(1000);
      const servers = descendants(worker.pid);
      const serverKiB = servers.reduce((sum, pid) => sum + rssKiB(pid), 0);
      const workerKiB = rssKiB(worker.pid);
      rows.push(
        `| ${sessions} | ${servers.length} | ${mib(workerKiB)} | ${mib(serverKiB)} | ${servers.length ? mib(serverKiB / servers.length) : '-'} | ${mib(workerKiB + serverKiB)} |`,
      );
      log(`${sessions} sessions: worker ${mib(workerKiB)} MiB, ${servers.length} servers ${mib(serverKiB)} MiB`);
      return workerKiB;
    };
    // The first session also warms up the worker (loads and JITs the workflow, client and MCP code).
    const warm = await turns.startTurn({
      sessionId: `rss-warm-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: specs },
    });
    await warm.callTool({ id: 'w', name: 'mcp__s0__echo', arguments: { text: 'warm' } });
    await warm.end();
    await sleep(500);
    const base = await measure(1);
    let workerAt: Record<number, number> = {};
    let done = 1;
    for (const target of [10, SESSIONS]) {
      while (done < target) {
        const batch = Math.min(3, target - done);
        await Promise.all(
          Array.from({ length: batch }, async (_, k) => {
            const turn = await turns.startTurn({
              sessionId: `rss-${done + k}-${Date.now()}`,
              workspace: dir,
              servers: { inlineSpecs: specs },
            });
            if (turn.status.servers.some((s) => s.state !== 'ready'))
              throw new Error(`a server did not start: ${JSON.stringify(turn.status.servers)}`);
            await turn.callTool({ id: 'c', name: 'mcp__s1__echo', arguments: { text: 'hi' } });
            await turn.end();
          }),
        );
        done += batch;
      }
      workerAt = { ...workerAt, [target]: await measure(target) };
    }
    await stopProcess(worker);
    const perSession = (workerAt[SESSIONS]! - base) / (SESSIONS - 1);
    const body = [
      `Command: \`npm run build:bench && node dist/bench/rss.js\` (part of \`npm run bench\`). Machine: ${await machineLine()}. Took ${((Date.now() - started) / 1000).toFixed(0)} s.`,
      '',
      `One durable-mcp worker process (test/fixtures/workerProcess.ts, default data converter); sessions of ${SERVERS} stdio servers each (the fixture echo server: Node + MCP SDK), each session's turn ended after one call, its servers kept alive for the next turn (DMCP_SESSION_IDLE, default 10 min). RSS from /proc (VmRSS), servers summed over the worker's descendant processes.`,
      '',
      '| sessions | server processes | worker RSS (MiB) | servers RSS, sum (MiB) | per server (MiB) | total (MiB) |',
      '|---|---|---|---|---|---|',
      ...rows,
      '',
      `The worker itself grows by about ${(perSession / 1024).toFixed(2)} MiB per session of ${SERVERS} servers (clients, transports, tool lists, session state); the servers' own processes dominate: each Node MCP server is a separate process of its own size.`,
    ].join('\n');
    process.stdout.write(`${body}\n`);
    await writeSection('rss', `Worker RSS: ${SESSIONS} sessions x ${SERVERS} stdio servers`, body);
  } finally {
    await endBench({ client, temporal, dir });
  }
}

runBench(main);
