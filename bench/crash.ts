/**
 * Recovery after a worker crash: two
 * durable-mcp worker processes, a turn pinned to one of them, a read-only call (fixture
 * `read_slow`, 2 s) in flight when that worker is SIGKILLed. Measures, from the kill: the call's
 * outcome (retried on the surviving worker once the heartbeat timeout notices), a new call (fails
 * over: schedule-to-start timeout on the dead worker's queue, reconcile on the shared queue), and
 * the end of the turn. With the default limits and with 3 s heartbeat / schedule-to-start limits.
 * Run on demand: `npm run build:bench && node dist/bench/crash.js`.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { TurnLimits } from '../contract/index.js';
import { TurnClient } from '../client/turnClient.js';
import { tempDir } from '../test/support/harness.js';
import { echoFixture, killStarted, sleep, runBench, stopProcess } from './procs.js';
import { benchQueue, connectClient, startDurableWorker, startTemporal, writeDurableBundle, type DurableWorker } from './setup.js';
import { machineLine, writeSection } from './support.js';

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

async function main(): Promise<void> {
  const dir = await tempDir('dmcp-crash-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const bundle = await writeDurableBundle(dir);
  const rows: string[] = [];
  const serverGroups = new Set<number>();
  try {
    for (const [label, limits] of [
      ['defaults (heartbeat 10 s, schedule-to-start 10 s)', undefined],
      ['heartbeat 3 s, schedule-to-start 3 s', { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 }],
    ] as [string, TurnLimits | undefined][]) {
      const execLog = join(dir, `exec-${rows.length}.log`);
      const taskQueue = benchQueue('crash');
      const env = { FIXTURE_LOG: execLog };
      const workers: DurableWorker[] = await Promise.all([startDurableWorker(temporal.address, taskQueue, bundle, { env }), startDurableWorker(temporal.address, taskQueue, bundle, { env })]);
      try {
        const turns = new TurnClient({ client, taskQueue });
        const turn = await turns.startTurn({
          sessionId: `crash-${Date.now()}`,
          workspace: dir,
          servers: { inlineSpecs: [`fixture:${process.execPath} ${echoFixture}`] },
          ...(limits ? { limits } : {}),
        });
        for (const s of turn.status.servers) if (s.pid) serverGroups.add(s.pid);
        const victim = workers.find((w) => w.info.workerQueue === turn.workerQueue)!;
        const before = await turn.callTool({ id: 'before', name: 'mcp__fixture__echo', arguments: { text: 'before' } });
        if (before.status !== 'ok') throw new Error(`first call failed: ${before.errorMessage}`);
        const inFlight = turn.callTool({ id: 'ro', name: 'mcp__fixture__read_slow', arguments: { ms: 2000, tag: 'ro' } });
        const deadline = Date.now() + 10_000;
        while (!(await readFile(execLog, 'utf8').catch(() => '')).includes('"tag":"ro"')) {
          if (Date.now() > deadline) throw new Error('the read_slow call did not start');
          await sleep(20);
        }
        await sleep(200);
        const killedAt = Date.now();
        process.kill(victim.pid, 'SIGKILL');
        log(`${label}: killed worker ${victim.pid} mid-call`);
        const ro = await inFlight;
        const roMs = Date.now() - killedAt;
        const next = await turn.callTool({ id: 'after', name: 'mcp__fixture__echo', arguments: { text: 'after' } });
        const nextMs = Date.now() - killedAt;
        const result = await turn.end();
        const endMs = Date.now() - killedAt;
        const ok = ro.status === 'ok' && next.status === 'ok' && result.workerQueue !== victim.info.workerQueue;
        rows.push(
          `| ${label} | ${(roMs / 1000).toFixed(1)} (${ro.status}${ro.status === 'ok' ? `, attempt ${ro.attempts}` : `: ${ro.errorKind}`}) | ${(nextMs / 1000).toFixed(1)} (${next.status}) | ${(endMs / 1000).toFixed(1)} | ${ok ? 'yes' : 'no'} |`,
        );
      } finally {
        await Promise.all(workers.map((w) => stopProcess(w)));
      }
    }
    const body = [
      `Command: \`npm run build:bench && node dist/bench/crash.js\` (part of \`npm run bench\`). Machine: ${await machineLine()}.`,
      '',
      'Two durable-mcp worker processes on one task queue; a turn with the fixture server, pinned to one of them; one call done, then a read-only call (`read_slow`, 2 s, annotated `readOnlyHint`) in flight when its worker is SIGKILLed. Seconds after the kill until:',
      '',
      '| turn limits | in-flight call returns (outcome) | a new call returns (fails over) | turn finished (endTurn) | finished on the survivor |',
      '|---|---|---|---|---|',
      ...rows,
      '',
      'What the in-flight call waits for: the heartbeat timeout (the first attempt is lost), the retry interval (1 s), the retry\'s schedule-to-start timeout on the dead worker\'s queue, a reconciliation on the shared queue (the survivor starts the server), then the call runs its 2 s on the survivor (attempt 1 there). A side-effecting call would return `unknown_result` after the heartbeat timeout instead. The new call and endTurn return right after. On top of that, every workflow task of the turn first goes to the dead worker\'s sticky queue and waits the SDK\'s `stickyQueueScheduleToStartTimeout` (10 s) while the server still believes that worker is there: that is most of the 19.5 s with 3 s limits (see the findings section for the fix).',
    ].join('\n');
    process.stdout.write(`${body}\n`);
    await writeSection('Recovery after a worker SIGKILL', body);
  } finally {
    await client.connection.close().catch(() => undefined);
    await temporal.stop().catch(() => undefined);
    // The killed worker's servers lost their parent: end their process groups.
    for (const pid of serverGroups) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    killStarted();
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

runBench(main);
