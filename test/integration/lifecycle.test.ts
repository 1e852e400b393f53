import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Turn } from '../../client/turnClient.js';
import type { ServerStatus } from '../../contract/index.js';
import {
  isAlive,
  killGroups,
  lifecycleEntry,
  processesInGroups,
  readLines,
  startHarness,
  tempDir,
  waitFor,
  writeMcpJson,
  type Harness,
} from '../support/harness.js';

/** Every server PID a test saw, so after() can make sure none is left behind. */
const seenPids = new Set<number>();

function server(turn: Pick<Turn, 'status'>, name: string): ServerStatus {
  const found = turn.status.servers.find((s) => s.name === name);
  assert.ok(found, `server ${name} is in the status: ${JSON.stringify(turn.status.servers)}`);
  if (found.pid) seenPids.add(found.pid);
  return found;
}

function pidOf(turn: Pick<Turn, 'status'>, name: string): number {
  const { pid, state, error } = server(turn, name);
  assert.ok(pid && pid > 0, `server ${name} has a PID (state ${state}${error ? `: ${error}` : ''})`);
  return pid;
}

function text(outcome: { content: Array<{ type: string; text?: unknown }> }): unknown {
  const block = outcome.content[0];
  assert.equal(block?.type, 'text');
  return JSON.parse(String(block.text));
}

let counter = 0;
function sessionId(name: string): string {
  counter += 1;
  return `lc-${name}-${process.pid}-${Date.now()}-${counter}`;
}

after(() => killGroups([...seenPids].filter(isAlive)));

describe('server lifecycle: starting, reconciliation and status', () => {
  let h: Harness;
  let dir: string;

  before(async () => {
    dir = await tempDir('dmcp-lifecycle-');
    h = await startHarness('lifecycle');
  });
  after(async () => {
    await h?.stop();
  });

  /** Starts an interactive turn of `session` with one mcp.json file, ends it, and returns its start. */
  async function turnWith(session: string, configFile: string): Promise<Turn> {
    const turn = await h.client.startTurn({
      sessionId: session,
      workspace: dir,
      servers: { mcpConfigFiles: [configFile] },
    });
    await turn.end();
    return turn;
  }

  test('6.1: servers start in parallel; one that sleeps past its deadline delays nobody and says which phase timed out', async () => {
    const config = join(dir, 'start.json');
    await writeMcpJson(config, {
      fast1: lifecycleEntry('fast1'),
      fast2: lifecycleEntry('fast2'),
      slow: { ...lifecycleEntry('slow', '--sleep-before-handshake', '30000'), startTimeout: 2 },
      slowlist: { ...lifecycleEntry('slowlist', '--sleep-before-list', '30000'), startTimeout: 2 },
    });
    const started = Date.now();
    const turn = await h.client.startTurn({
      sessionId: sessionId('start'),
      workspace: dir,
      servers: { mcpConfigFiles: [config] },
    });
    const elapsed = Date.now() - started;
    await turn.end();

    assert.equal(server(turn, 'fast1').state, 'ready');
    assert.equal(server(turn, 'fast2').state, 'ready');
    assert.equal(server(turn, 'slow').state, 'failed');
    assert.match(server(turn, 'slow').error ?? '', /^timed out after 2s during handshake/);
    assert.equal(server(turn, 'slowlist').state, 'failed');
    assert.match(server(turn, 'slowlist').error ?? '', /^timed out after 2s during tool listing/);
    assert.ok(
      turn.tools.some((t) => t.name === 'mcp__fast1__whoami') &&
        turn.tools.some((t) => t.name === 'mcp__fast2__whoami'),
    );
    // One deadline, not two (4 s) and not the sleep (30 s).
    assert.ok(elapsed >= 2000 && elapsed < 3700, `the turn started in ${elapsed} ms`);

    // The reconcile activity itself (from history) took about one deadline.
    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const events = history.events ?? [];
    const scheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'reconcileServers',
    );
    const completed = events.find(
      (e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    );
    const started2 = events.find(
      (e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    );
    const seconds = (e: typeof completed) =>
      Number(e?.eventTime?.seconds ?? 0) * 1000 + Math.floor((e?.eventTime?.nanos ?? 0) / 1e6);
    const reconcileMs = seconds(completed) - seconds(started2);
    assert.ok(reconcileMs >= 1900 && reconcileMs < 3000, `reconcileServers took ${reconcileMs} ms`);
  });

  test('6.2: an unchanged config keeps the same server processes across turns', async () => {
    const log = join(dir, 'same.log');
    const config = join(dir, 'same.json');
    await writeMcpJson(config, {
      a: lifecycleEntry('a', '--start-log', log),
      b: lifecycleEntry('b', '--start-log', log),
    });
    const session = sessionId('same');
    const t1 = await turnWith(session, config);
    const t2 = await turnWith(session, config);
    assert.equal(pidOf(t2, 'a'), pidOf(t1, 'a'));
    assert.equal(pidOf(t2, 'b'), pidOf(t1, 'b'));
    assert.equal((await readLines(log)).length, 2, 'each server started once');
  });

  test('6.2: a changed config file restarts every server of the session', async () => {
    const log = join(dir, 'changed.log');
    const config = join(dir, 'changed.json');
    await writeMcpJson(config, {
      a: lifecycleEntry('a', '--start-log', log),
      b: lifecycleEntry('b', '--start-log', log),
    });
    const session = sessionId('changed');
    const t1 = await turnWith(session, config);
    const [a1, b1] = [pidOf(t1, 'a'), pidOf(t1, 'b')];
    // Only b's entry changes; a restarts too, because the session's config as a whole changed.
    await writeMcpJson(config, {
      a: lifecycleEntry('a', '--start-log', log),
      b: lifecycleEntry('b', '--start-log', log, '--stderr', 'v2'),
    });
    const t2 = await turnWith(session, config);
    const [a2, b2] = [pidOf(t2, 'a'), pidOf(t2, 'b')];
    assert.notEqual(a2, a1);
    assert.notEqual(b2, b1);
    assert.ok(await waitFor(() => !isAlive(a1) && !isAlive(b1), 5000), 'the old processes are gone');
    assert.equal((await readLines(log)).length, 4);
  });

  test('6.2: a server that crashed between turns restarts; the others keep their process', async () => {
    const config = join(dir, 'crash.json');
    await writeMcpJson(config, { a: lifecycleEntry('a'), victim: lifecycleEntry('victim') });
    const session = sessionId('crash');
    const t1 = await turnWith(session, config);
    const victim = pidOf(t1, 'victim');
    process.kill(victim, 'SIGKILL');
    assert.ok(await waitFor(() => !isAlive(victim), 5000));
    const t2 = await turnWith(session, config);
    assert.equal(server(t2, 'victim').state, 'ready');
    assert.notEqual(pidOf(t2, 'victim'), victim);
    assert.equal(pidOf(t2, 'a'), pidOf(t1, 'a'));
  });

  test('6.2/6.5: a server that never started is not retried with an unchanged config, but is after a change; its status has the stderr tail', async () => {
    const log = join(dir, 'broken.log');
    const config = join(dir, 'broken.json');
    const broken = lifecycleEntry(
      'broken',
      '--start-log',
      log,
      '--stderr',
      'loading database',
      '--stderr',
      'fatal: cannot open /nope.db',
      '--exit-before-handshake',
      '1',
    );
    await writeMcpJson(config, { ok: lifecycleEntry('ok'), broken });
    const session = sessionId('broken');
    const t1 = await turnWith(session, config);
    const failed = server(t1, 'broken');
    assert.equal(failed.state, 'failed');
    assert.match(failed.error ?? '', /exited with code 1/);
    assert.match(failed.error ?? '', /loading database\nfatal: cannot open \/nope\.db/);
    assert.match(t1.serversParagraph, /broken/);
    // A server that exits before answering the era probe may be one that ends on any request
    // before `initialize`: it is started once more and spoken to in the legacy era.
    assert.equal((await readLines(log)).length, 2, 'the probe start and one legacy start');

    const t2 = await turnWith(session, config);
    assert.equal(server(t2, 'broken').state, 'failed');
    assert.equal(server(t2, 'broken').error, failed.error);
    assert.equal((await readLines(log)).length, 2, 'not started again with an unchanged config');
    assert.equal(pidOf(t2, 'ok'), pidOf(t1, 'ok'));

    await writeMcpJson(config, { ok: lifecycleEntry('ok'), broken: { ...broken, env: { RETRY: '1' } } });
    const t3 = await turnWith(session, config);
    assert.equal(server(t3, 'broken').state, 'failed');
    assert.equal((await readLines(log)).length, 4, 'started again after the config changed');
  });

  test('a running server is listed when it starts; later turns reuse that listing until it sends tools/list_changed', async () => {
    const marker = join(dir, 'marker');
    const lists = join(dir, 'relist.log');
    const config = join(dir, 'relist.json');
    await writeMcpJson(config, { m: lifecycleEntry('m', '--marker', marker, '--list-log', lists) });
    const session = sessionId('relist');
    const t1 = await turnWith(session, config);
    assert.ok(!t1.tools.some((t) => t.name === 'mcp__m__marker_tool'));
    // The server's tools change without it saying so: the next turn keeps the last listing.
    await writeFile(marker, 'x');
    const t2 = await turnWith(session, config);
    assert.equal(pidOf(t2, 'm'), pidOf(t1, 'm'));
    assert.ok(!t2.tools.some((t) => t.name === 'mcp__m__marker_tool'), t2.tools.map((t) => t.name).join(', '));
    assert.equal((await readLines(lists)).length, 1, 'listed once, when it started');

    // Now it says so (add_tool sends tools/list_changed): the next turn lists again and sees both changes.
    const t3 = await h.client.startTurn({ sessionId: session, workspace: dir, servers: { mcpConfigFiles: [config] } });
    const added = await t3.callTool({ id: 'add', name: 'mcp__m__add_tool', arguments: {} });
    assert.equal(added.status, 'ok', added.errorMessage);
    await t3.end();
    assert.equal((await readLines(lists)).length, 1);
    const t4 = await turnWith(session, config);
    assert.equal(pidOf(t4, 'm'), pidOf(t1, 'm'));
    const names = t4.tools.map((t) => t.name);
    assert.ok(names.includes('mcp__m__marker_tool') && names.includes('mcp__m__added_1'), names.join(', '));
    assert.ok(server(t4, 'm').tools.includes('mcp__m__marker_tool'));
    assert.equal((await readLines(lists)).length, 2, 'listed once more, after list_changed');
  });

  test('6.2: tools/list_changed is picked up next turn; the tool list never changes inside a turn', async () => {
    const config = join(dir, 'changed-list.json');
    await writeMcpJson(config, { lc: lifecycleEntry('lc') });
    const session = sessionId('listchanged');
    const t1 = await h.client.startTurn({ sessionId: session, workspace: dir, servers: { mcpConfigFiles: [config] } });
    const before = t1.tools.map((t) => t.name);
    const added = await t1.callTool({ id: 'add-1', name: 'mcp__lc__add_tool', arguments: {} });
    assert.equal(added.status, 'ok');
    assert.deepEqual(text(added), { added: 'added_1' });
    // The server has the tool and told us so, but this turn's list is frozen.
    const call = await t1.callTool({ id: 'new-1', name: 'mcp__lc__added_1', arguments: {} });
    assert.equal(call.status, 'error');
    assert.equal(call.errorKind, 'bad_request');
    assert.match(call.errorMessage ?? '', /unknown tool "mcp__lc__added_1"/);
    await t1.end();
    const transcript = await h.client.transcript(t1.turnId);
    assert.deepEqual(
      transcript.tools.map((t) => t.name),
      before,
    );

    const t2 = await h.client.startTurn({ sessionId: session, workspace: dir, servers: { mcpConfigFiles: [config] } });
    assert.equal(pidOf(t2, 'lc'), pidOf(t1, 'lc'));
    assert.ok(t2.tools.some((t) => t.name === 'mcp__lc__added_1'));
    const call2 = await t2.callTool({ id: 'new-2', name: 'mcp__lc__added_1', arguments: {} });
    assert.equal(call2.status, 'ok');
    assert.deepEqual(text(call2), { server: 'lc', tool: 'added_1' });
    await t2.end();
  });

  test('6.5: junk on stdout before the handshake is reported; unknown "tools" filter entries are warnings (degraded)', async () => {
    const config = join(dir, 'status.json');
    await writeMcpJson(config, {
      chatty: lifecycleEntry('chatty', '--junk', '2'),
      filtered: { ...lifecycleEntry('filtered'), tools: ['whoami', 'no_such_tool'] },
      clean: lifecycleEntry('clean'),
    });
    const turn = await turnWith(sessionId('status'), config);
    const chatty = server(turn, 'chatty');
    assert.equal(chatty.state, 'degraded');
    assert.match(chatty.warnings.join('\n'), /2 non-protocol line\(s\) to stdout, first: "junk line 1 from chatty"/);
    assert.ok(chatty.tools.includes('mcp__chatty__whoami'), 'the junk did not break the handshake');
    const filtered = server(turn, 'filtered');
    assert.equal(filtered.state, 'degraded');
    assert.deepEqual(filtered.tools, ['mcp__filtered__whoami']);
    assert.match(filtered.warnings.join('\n'), /"no_such_tool" is listed in "tools" but the server does not offer it/);
    assert.equal(server(turn, 'clean').state, 'ready');
    assert.deepEqual(server(turn, 'clean').warnings, []);
  });

  test('7: tool names that collide once cleaned get distinct public names that map back exactly', async () => {
    const config = join(dir, 'names.json');
    await writeMcpJson(config, {
      alpha: lifecycleEntry('alpha', '--tool', 'a.b', '--tool', 'a_b', '--tool', 'a/b'),
      beta: lifecycleEntry('beta', '--tool', 'a.b'),
    });
    const session = sessionId('names');
    const turn = await h.client.startTurn({
      sessionId: session,
      workspace: dir,
      servers: { mcpConfigFiles: [config] },
    });
    const ours = turn.tools.filter((t) => ['a.b', 'a_b', 'a/b'].includes(t.tool));
    assert.equal(ours.length, 4);
    assert.equal(new Set(ours.map((t) => t.name)).size, 4, ours.map((t) => t.name).join(', '));
    for (const t of ours) {
      assert.match(t.name, /^[A-Za-z0-9_-]{1,64}$/);
      const outcome = await turn.callTool({ id: `call-${t.server}-${t.tool}`, name: t.name, arguments: {} });
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.deepEqual(text(outcome), { server: t.server, tool: t.tool }, `${t.name} reached its own tool`);
    }
    await turn.end();
  });
});

describe('stopping servers', () => {
  test('an idle session stops after DMCP_SESSION_IDLE, but never during a call; the next turn starts it again', async (t) => {
    const dir = await tempDir('dmcp-idle-');
    const h = await startHarness('idle', { DMCP_SESSION_IDLE: '2s' });
    t.after(() => h.stop());
    const config = join(dir, 'idle.json');
    await writeMcpJson(config, { sleepy: lifecycleEntry('sleepy') });
    const session = sessionId('idle');

    // A batch turn holds nothing past its calls (an interactive one holds its servers until it idles out).
    const batch = await h.client.runBatch({
      sessionId: session,
      workspace: dir,
      servers: { mcpConfigFiles: [config] },
      // A call longer than the idle time keeps its session.
      calls: [
        [{ id: 'who', name: 'mcp__sleepy__whoami', arguments: {} }],
        [{ id: 'sleep', name: 'mcp__sleepy__sleep', arguments: { ms: 3000 } }],
      ],
    });
    const ended = Date.now();
    const [who, long] = batch.calls.map((c) => c.outcome);
    assert.equal(long?.status, 'ok', long?.errorMessage);
    const pid1 = (text(who!) as { pid: number }).pid;
    seenPids.add(pid1);
    assert.ok(isAlive(pid1));

    assert.ok(await waitFor(() => !isAlive(pid1), 6000), 'the idle server stopped');
    const after = Date.now() - ended;
    assert.ok(after >= 1500, `stopped ${after} ms after the turn ended, before the idle time`);
    assert.deepEqual(h.worker.pool.pids(session), {});

    const t2 = await h.client.startTurn({ sessionId: session, workspace: dir, servers: { mcpConfigFiles: [config] } });
    assert.notEqual(pidOf(t2, 'sleepy'), pid1);
    await t2.end();
  });

  test('an open interactive turn keeps its servers past DMCP_SESSION_IDLE until the turn idles out', async (t) => {
    const dir = await tempDir('dmcp-hold-');
    const h = await startHarness('hold', { DMCP_SESSION_IDLE: '1s' });
    t.after(() => h.stop());
    const config = join(dir, 'hold.json');
    await writeMcpJson(config, { memory: lifecycleEntry('memory') });
    const session = sessionId('hold');

    const turn = await h.client.startTurn({
      sessionId: session,
      workspace: dir,
      servers: { mcpConfigFiles: [config] },
      limits: { idleMs: 8000 },
    });
    const pid = pidOf(turn, 'memory');
    await new Promise((r) => setTimeout(r, 2500));
    // Well past the session idle time, the turn's next call still finds the same process (and its state).
    const call = await turn.callTool({ id: 'who', name: 'mcp__memory__whoami', arguments: {} });
    const called = Date.now();
    assert.equal(call.status, 'ok', call.errorMessage);
    assert.deepEqual(text(call), { name: 'memory', pid });

    // The turn ends itself 8 s after its last call; the servers stop after that, not 1 s after the call.
    assert.ok(await waitFor(() => !isAlive(pid), 20_000), 'the server stopped once the turn could no longer call');
    const after = Date.now() - called;
    assert.ok(after >= 7000, `stopped ${after} ms after the last call, while the turn was still open`);
    assert.deepEqual(h.worker.pool.pids(session), {});
  });

  test('worker shutdown stops every server by process group, SIGKILLs one that ignores SIGTERM after the grace, and leaves no orphans', async () => {
    const dir = await tempDir('dmcp-shutdown-');
    const childPidFile = join(dir, 'child.pid');
    const config = join(dir, 'shutdown.json');
    await writeMcpJson(config, {
      polite: lifecycleEntry('polite'),
      stubborn: lifecycleEntry('stubborn', '--ignore-sigterm', '--child-pid-file', childPidFile),
    });
    const h = await startHarness('shutdown');
    let stopped = false;
    try {
      const s1 = sessionId('shutdown-a');
      const s2 = sessionId('shutdown-b');
      const t1 = await h.client.startTurn({ sessionId: s1, workspace: dir, servers: { mcpConfigFiles: [config] } });
      const t2 = await h.client.startTurn({ sessionId: s2, workspace: dir, servers: { mcpConfigFiles: [config] } });
      await Promise.all([t1.end(), t2.end()]);
      const leaders = [pidOf(t1, 'polite'), pidOf(t1, 'stubborn'), pidOf(t2, 'polite'), pidOf(t2, 'stubborn')];
      const child = Number((await readLines(childPidFile))[0]);
      assert.ok(child > 0 && isAlive(child), 'the stubborn server has a live child');
      const members = processesInGroups(leaders);
      // 4 leaders and at least the last stubborn server's child.
      assert.ok(members.length >= 5, `processes in the servers' groups: ${members.join(' ')}`);
      assert.ok(members.includes(child));
      for (const pid of members) seenPids.add(pid);

      const started = Date.now();
      await h.stop();
      stopped = true;
      const took = Date.now() - started;
      assert.deepEqual(processesInGroups(leaders), [], 'no process of any server group is left');
      assert.ok(!isAlive(child));
      assert.ok(took >= 1900, `the SIGTERM grace period was given (${took} ms)`);
      assert.ok(took < 10_000, `shutdown took ${took} ms`);
    } finally {
      if (!stopped) await h.stop();
    }
  });
});
