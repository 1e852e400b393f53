/**
 * A turn ended with `detach` while its calls run as MCP tasks, and a later turn that takes such a
 * task up by its ID: on the 2026-07-28 task fixture over Streamable HTTP, and on server-everything's
 * task-required research tool over stdio (whose task lives in the session's server process).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { realpath } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { renderTranscript } from '../../client/transcriptText.js';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import { ActivityName, type CallOutcome, type TurnResult } from '../../contract/index.js';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { loadSettings } from '../../settings/index.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import {
  configFiles,
  everythingServer,
  readLines,
  runCli,
  startHarness,
  tempDir,
  temporalAddress,
  waitUntil,
  type Harness,
} from '../support/harness.js';
import { textOf } from '../support/content.js';
import { printedPort } from '../support/printedPort.js';

const taskServer = fileURLToPath(new URL('../fixtures/taskServer.js', import.meta.url));

/** Fixture processes this file started, killed by PID in after(). */
const startedPids = new Set<number>();

after(() => {
  for (const pid of startedPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

async function startModernTaskServer(log: string): Promise<string> {
  const child = spawn(process.execPath, [taskServer, 'modern'], {
    env: { PATH: process.env.PATH, FIXTURE_LOG: log },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.pid === undefined) throw new Error('could not start the task fixture');
  startedPids.add(child.pid);
  return `http://127.0.0.1:${await printedPort(child, 'the task fixture')}/mcp`;
}

interface TaskEvent {
  event: string;
  tag?: string;
  taskId: string;
}

async function taskEvents(log: string): Promise<TaskEvent[]> {
  return (await readLines(log)).map((l) => JSON.parse(l) as TaskEvent);
}

async function activityTypes(h: Harness, turnId: string): Promise<string[]> {
  const history = await h.client.client.workflow.getHandle(turnId).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    .filter((t): t is string => t !== undefined);
}

function detachedOf(outcome: CallOutcome | undefined): NonNullable<CallOutcome['detached']> {
  assert.equal(outcome?.status, 'error', JSON.stringify(outcome));
  assert.equal(outcome.errorKind, 'detached', outcome.errorMessage);
  assert.ok(outcome.detached, 'the outcome names the task');
  return outcome.detached;
}

describe('endTurn with detach, and a later turn that takes the task up (2026-07-28 fixture over HTTP)', () => {
  let h: Harness;
  let dir: string;
  let log: string;
  let fixtureFile: string;
  before(async () => {
    dir = await tempDir();
    log = join(dir, 'tasks.log');
    h = await startHarness('task-detach');
    const url = await startModernTaskServer(log);
    // The same server twice: `jobs` runs its calls as tasks, `plain` as ordinary calls.
    fixtureFile = await configFiles(dir)({
      jobs: { type: 'http', url, protocol: '2026-07-28', tasks: 'prefer' },
      plain: { type: 'http', url, protocol: '2026-07-28' },
    });
  });
  after(async () => {
    await h?.stop();
  });

  test("a turn ended with detach while a task runs ends at once with the detached outcome; an ordinary call in flight is still waited for; a later turn of another session fetches the same task's result", async () => {
    const sessionId = `detach-${Date.now()}`;
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [fixtureFile] } });
    const job = turn.callTool({ id: 'job', name: 'mcp__jobs__long_job', arguments: { seconds: 25, tag: 'det1' } });
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'det1'),
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'det1')!;
    const plain = turn.callTool({ id: 'plain', name: 'mcp__plain__long_call', arguments: { seconds: 3 } });
    // Both calls accepted by the turn before it is asked to end: an Update sent later would be refused.
    await waitUntil('the ordinary call to be running', async () =>
      (await h.client.transcript(turn.turnId)).calls.some((c) => c.id === 'plain'),
    );

    const endedAt = Date.now();
    const result = await turn.end({ detach: true });
    const endedIn = Date.now() - endedAt;
    const outcome = await job;
    assert.ok(endedIn < 15_000, `the turn ended ${endedIn} ms after endTurn, long before the task's 25 s`);
    assert.equal(result.endedBy, 'endTurn');

    const detached = detachedOf(outcome);
    assert.deepEqual(detached.takeUp, { name: 'mcp__jobs__long_job', taskId: created.taskId });
    assert.equal(detached.taskId, created.taskId);
    assert.equal(detached.server, 'jobs');
    assert.equal(detached.sessionId, sessionId);
    assert.equal(detached.remote, true);
    // The fixture keeps a task 600 s: its TTL ends about ten minutes from its creation.
    const expiresIn = Date.parse(detached.expiresAt ?? '') - Date.now();
    assert.ok(expiresIn > 500_000 && expiresIn <= 600_000, `expires in ${expiresIn} ms`);
    assert.match(
      outcome.errorMessage ?? '',
      new RegExp(
        `mcp__jobs__long_job: the turn ended without waiting for this call \\(detached\\): its task ${created.taskId} goes on on server "jobs"; the server keeps it until ${detached.expiresAt!.replace(/\./g, '\\.')} \\(its TTL\\)\\. To fetch its result, send the call \\{"id":"<a new call ID>","name":"mcp__jobs__long_job","taskId":"${created.taskId}"\\}`,
      ),
    );

    const plainOutcome = await plain;
    assert.equal(plainOutcome.status, 'ok', plainOutcome.errorMessage);
    assert.equal(textOf(plainOutcome.content[0]), 'answered after 3 s', 'the ordinary call was waited for');
    assert.equal(result.calls.find((c) => c.id === 'plain')?.outcome.status, 'ok');
    assert.equal(result.calls.find((c) => c.id === 'job')?.outcome.errorKind, 'detached');

    assert.ok(
      !(await taskEvents(log)).some((e) => e.event === 'task-cancelled' && e.taskId === created.taskId),
      'the detached task was not cancelled',
    );
    const types = await activityTypes(h, turn.turnId);
    assert.equal(
      types.filter((t) => t === ActivityName.taskResult).length,
      0,
      'no result was fetched in the detached turn',
    );
    assert.equal(types.filter((t) => t === ActivityName.cancelTask).length, 0);
    const rendered = renderTranscript(await h.client.transcript(turn.turnId));
    assert.match(
      rendered,
      new RegExp(
        `task ${created.taskId}: working(, step \\d+/25)? \\(\\d+ polls?\\); detached: the turn ended without it, and the task goes on on its server`,
      ),
    );
    assert.match(rendered, /detached: mcp__jobs__long_job: the turn ended without waiting for this call \(detached\)/);

    // A later turn, of another session: a remote server's task is reachable from any session with the entry.
    const later = await h.client.startTurn({
      sessionId: `${sessionId}-later`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const fetched = await later.callTool({ id: 'fetch', name: 'mcp__jobs__long_job', taskId: created.taskId });
    await later.end();
    assert.equal(fetched.status, 'ok', fetched.errorMessage);
    assert.equal(textOf(fetched.content[0]), 'finished det1 after 25 s');
    assert.equal(
      (await taskEvents(log)).filter((e) => e.event === 'task-created' && e.tag === 'det1').length,
      1,
      'the task was created once',
    );
    const laterTypes = await activityTypes(h, later.turnId);
    assert.equal(
      laterTypes.filter((t) => t === ActivityName.createTask).length,
      0,
      'nothing was created in the later turn',
    );
    assert.equal(laterTypes.filter((t) => t === ActivityName.takeTask).length, 1);
    assert.equal(laterTypes.filter((t) => t === ActivityName.taskResult).length, 1);
    const laterTranscript = await h.client.transcript(later.turnId);
    const call = laterTranscript.calls.find((c) => c.id === 'fetch');
    assert.equal(call?.task?.takenUp, true);
    assert.match(
      renderTranscript(laterTranscript),
      new RegExp(`task ${created.taskId} \\(taken up\\): completed, step 25/25`),
    );
  });

  test('a task ID the server does not know, and one whose TTL ran out while detached, are a bad request that says so; nothing is created', async () => {
    const sessionId = `detach-unknown-${Date.now()}`;
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [fixtureFile] } });
    const expiring = turn.callTool({ id: 'exp', name: 'mcp__jobs__expiring_job', arguments: { tag: 'det-exp' } });
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'det-exp'),
    );
    await turn.end({ detach: true });
    const detached = detachedOf(await expiring);

    const later = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [fixtureFile] } });
    const unknown = await later.callTool({ id: 'unknown', name: 'mcp__jobs__long_job', taskId: 'no-such-task' });
    // The fixture forgets it 3 s after it started.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    const expired = await later.callTool({ id: 'expired', name: 'mcp__jobs__expiring_job', taskId: detached.taskId });
    const refused = await later.callTool({ id: 'refused', name: 'mcp__plain__long_call', taskId: detached.taskId });
    await later.end();
    for (const [outcome, id] of [
      [unknown, 'no-such-task'],
      [expired, detached.taskId],
    ] as const) {
      assert.equal(outcome.status, 'error');
      assert.equal(outcome.errorKind, 'bad_request', outcome.errorMessage);
      assert.match(
        outcome.errorMessage ?? '',
        new RegExp(
          `server "jobs" does not know task ${id}: it expired \\(a server forgets a task after its TTL\\), or it never existed on this server .*nothing was taken up`,
        ),
      );
    }
    assert.equal(refused.errorKind, 'bad_request');
    assert.match(
      refused.errorMessage ?? '',
      /mcp__plain__long_call: its calls do not run as MCP tasks here \(its server runs it as a task only when asked, and the entry of server "plain" does not say "tasks": "prefer"\), so it has no task to take up \(the call did not run\)/,
    );
    assert.equal((await taskEvents(log)).filter((e) => e.event === 'task-created' && e.tag === 'det-exp').length, 1);
  });

  test('a call whose taskId cannot be a task ID is refused before it runs', async () => {
    const turn = await h.client.startTurn({
      sessionId: `detach-bad-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    await assert.rejects(turn.callTool({ id: 'bad', name: 'mcp__jobs__long_job', taskId: 'two words' }), (err: Error) =>
      /call bad: taskId may hold only visible ASCII characters/.test(String((err.cause as Error | undefined)?.message)),
    );
    await turn.end();
  });
});

describe('endTurn with detach on a stdio server (server-everything, 2025-11-25 tasks)', () => {
  let h: Harness;
  let dir: string;
  before(async () => {
    dir = await tempDir();
    h = await startHarness('task-detach-stdio');
  });
  after(async () => {
    await h?.stop();
  });

  test('the next turn of the same session takes the task up from the same server process and gets its result', async () => {
    const sessionId = `detach-stdio-${Date.now()}`;
    const servers = { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] };
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers });
    const research = turn.callTool({
      id: 'research',
      name: 'mcp__everything__simulate-research-query',
      arguments: { topic: 'detached work' },
    });
    await waitUntil('the task to be created', async () =>
      (await h.client.transcript(turn.turnId)).calls.some((c) => c.id === 'research' && c.task !== undefined),
    );
    await turn.end({ detach: true });
    const detached = detachedOf(await research);
    assert.equal(detached.remote, false);
    assert.match(
      (await research).errorMessage ?? '',
      new RegExp(
        `in a later turn of session "${sessionId}" \\(a stdio server's task lives only as long as its process`,
      ),
    );

    const later = await h.client.startTurn({ sessionId, workspace: dir, servers });
    assert.equal(later.status.servers[0]?.pid, turn.status.servers[0]?.pid, 'the session kept its server process');
    const fetched = await later.callTool({
      id: 'fetch',
      name: 'mcp__everything__simulate-research-query',
      taskId: detached.taskId,
    });
    await later.end();
    assert.equal(fetched.status, 'ok', fetched.errorMessage);
    assert.match(String(textOf(fetched.content[0])), /# Research Report: detached work/);
  });
});

describe('detach and take up through the CLI and the HTTP API (2026-07-28 fixture)', () => {
  const TOKEN = 'task-detach-test-token-0123456789';
  let h: Harness;
  let client: TurnClient;
  let api: RunningApi;
  let dir: string;
  let log: string;
  let fixtureFile: string;
  let cliEnv: NodeJS.ProcessEnv;
  before(async () => {
    dir = await realpath(await tempDir());
    log = join(dir, 'tasks.log');
    const turnKey = await ensureTurnKey(dir);
    // The worker, the CLI and the client share the data dir: its turn key signs what a turn names.
    h = await startHarness(
      'task-detach-cli',
      { DMCP_DATA_DIR: dir },
      { dataConverter: dataConverterFor(loadSettings({ DMCP_DATA_DIR: dir })) },
    );
    client = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey });
    cliEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_TASK_QUEUE: h.taskQueue,
      DMCP_DATA_DIR: dir,
      DMCP_NO_USER_CONFIG: '1',
    };
    const url = await startModernTaskServer(log);
    fixtureFile = await configFiles(dir)({ jobs: { type: 'http', url, protocol: '2026-07-28', tasks: 'prefer' } });
    api = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      turns: client,
      tokens: parseTokens(`${hashToken(TOKEN)} detach-api-`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: false, allowedConfigDirs: [dir], workspaceRoots: [dir] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 30_000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
  });
  after(async () => {
    await api?.close();
    await h?.stop();
  });

  test('durable-mcp turn end --detach prints the detached outcome; durable-mcp run --take-task fetches the result', async () => {
    const sessionId = `detach-cli-${Date.now()}`;
    const turn = await client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [fixtureFile] } });
    const job = turn.callTool({ id: 'cli', name: 'mcp__jobs__long_job', arguments: { seconds: 8, tag: 'det-cli' } });
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'det-cli'),
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'det-cli')!;
    const end = await runCli(['turn', 'end', turn.turnId, '--detach'], cliEnv);
    assert.equal(end.code, 0, end.stdout + end.stderr);
    assert.match(
      end.stdout,
      new RegExp(
        `^\\[cli\\] mcp__jobs__long_job: detached: mcp__jobs__long_job: the turn ended without waiting for this call \\(detached\\): its task ${created.taskId} goes on .*\\(CLI: durable-mcp run --session ${sessionId} --take-task 'mcp__jobs__long_job ${created.taskId}' with the same servers\\)\\.$`,
        'm',
      ),
    );
    assert.equal((await job).errorKind, 'detached');

    const run = await runCli(
      [
        'run',
        '--json',
        '--session',
        sessionId,
        '--mcp-config',
        fixtureFile,
        '--take-task',
        `mcp__jobs__long_job ${created.taskId}`,
      ],
      cliEnv,
    );
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const printed = JSON.parse(run.stdout) as TurnResult;
    assert.deepEqual(
      printed.calls.map((c) => [c.id, c.taskId, c.outcome.status, textOf(c.outcome.content[0])]),
      [['take-task-1', created.taskId, 'ok', 'finished det-cli after 8 s']],
    );
    assert.equal((await taskEvents(log)).filter((e) => e.event === 'task-created' && e.tag === 'det-cli').length, 1);

    const bad = await runCli(
      ['run', '--session', sessionId, '--mcp-config', fixtureFile, '--take-task', 'mcp__jobs__long_job'],
      cliEnv,
    );
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--take-task #1: expected 'TOOL TASK_ID'/);
    const badTurn = await runCli(['turn', 'end', 'not-a-turn'], cliEnv);
    assert.equal(badTurn.code, 2);
    assert.match(badTurn.stderr, /invalid turn ID "not-a-turn": expected <sessionId>\/turn-<n>/);
  });

  test('the API: POST .../end with {"detach": true} answers the running task call as detached; a call with taskId in a later turn gets its result', async () => {
    const sessionId = `detach-api-${Date.now()}`;
    const post = async (path: string, body?: unknown) => {
      const res = await fetch(`${api.url}/api/v1/sessions/${sessionId}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const started = await post('/turns', { workspace: dir, servers: { mcpConfigFiles: [fixtureFile] } });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const turn = started.body.turn as string;
    const pending = await post(`/turns/${turn}/calls?wait=0`, {
      id: 'apijob',
      name: 'mcp__jobs__long_job',
      arguments: { seconds: 6, tag: 'det-api' },
    });
    assert.equal(pending.status, 202, JSON.stringify(pending.body));
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'det-api'),
    );
    const refused = await post(`/turns/${turn}/end`, { detach: 'yes' });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    const ended = await post(`/turns/${turn}/end`, { detach: true });
    assert.equal(ended.status, 200, JSON.stringify(ended.body));
    const outcome = (ended.body.calls as { id: string; outcome: CallOutcome }[]).find(
      (c) => c.id === 'apijob',
    )!.outcome;
    const detached = detachedOf(outcome);

    const later = await post('/turns', { workspace: dir, servers: { mcpConfigFiles: [fixtureFile] } });
    assert.equal(later.status, 201, JSON.stringify(later.body));
    const fetched = await post(`/turns/${later.body.turn as string}/calls`, { id: 'apifetch', ...detached.takeUp });
    assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
    const result = fetched.body.outcome as CallOutcome;
    assert.equal(result.status, 'ok', result.errorMessage);
    assert.equal(textOf(result.content[0]), 'finished det-api after 6 s');
    // The same call ID naming another task is another call: 409, never the recorded outcome.
    const conflict = await post(`/turns/${later.body.turn as string}/calls`, {
      id: 'apifetch',
      name: detached.takeUp.name,
      taskId: 'another-task',
    });
    assert.equal(conflict.status, 409, JSON.stringify(conflict.body));
    assert.equal(
      (await post(`/turns/${later.body.turn as string}/end`)).status,
      200,
      'an end without a body still ends the turn',
    );
  });
});
