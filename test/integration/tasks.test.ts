/**
 * Calls that run as MCP tasks, on real servers: server-everything's task-required research tool
 * over stdio, and a fixture task server over Streamable HTTP for crashes, expiry and cancellation.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { TurnClient } from '../../client/turnClient.js';
import { renderTranscript } from '../../client/transcriptText.js';
import { callProgress } from '../../api/progress.js';
import { ActivityName, type InputAnswer, type InputRequest } from '../../contract/index.js';
import { bundleWorkflows } from '../../worker/index.js';
import {
  configFiles,
  everythingServer,
  readLines,
  startHarness,
  startWorkerProcess,
  stopWorkerProcess,
  tempDir,
  temporalAddress,
  uniqueQueue,
  waitUntil,
  type Harness,
  type WorkerProcess,
} from '../support/harness.js';
import { textOf } from '../support/content.js';
import { printedPort } from '../support/printedPort.js';

const taskServer = fileURLToPath(new URL('../fixtures/taskServer.js', import.meta.url));

/** Fixture processes this file started, killed by PID in after(). */
const startedPids = new Set<number>();

/** Starts the task fixture server (2025-11-25, or `modern`: 2026-07-28) and waits for the port it prints. */
async function startTaskServer(env: NodeJS.ProcessEnv, mode?: 'modern'): Promise<{ pid: number; url: string }> {
  const child = spawn(process.execPath, mode ? [taskServer, mode] : [taskServer], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.pid === undefined) throw new Error('could not start the task fixture');
  startedPids.add(child.pid);
  const port = await printedPort(child, 'the task fixture');
  return { pid: child.pid, url: `http://127.0.0.1:${port}/mcp` };
}

interface TaskEvent {
  event: string;
  pid?: number;
  tag?: string;
  taskId: string;
}

async function taskEvents(log: string): Promise<TaskEvent[]> {
  return (await readLines(log)).map((l) => JSON.parse(l) as TaskEvent);
}

after(() => {
  for (const pid of startedPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

describe('calls that run as MCP tasks', () => {
  let h: Harness;
  let dir: string;
  let log: string;
  let fixtureFile: string;
  before(async () => {
    dir = await tempDir();
    log = join(dir, 'tasks.log');
    h = await startHarness('tasks');
    const fixture = await startTaskServer({ FIXTURE_LOG: log });
    fixtureFile = await configFiles(dir)({ jobs: { type: 'http', url: fixture.url } });
  });
  after(async () => {
    await h?.stop();
  });

  test('server-everything: a task-required tool runs as a task end to end, its progress in the transcript', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks-everything-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] },
    });
    const research = turn.tools.find((t) => t.name === 'mcp__everything__simulate-research-query');
    assert.equal(research?.taskSupport, 'required');
    const outcome = await turn.callTool({
      id: 'research',
      name: 'mcp__everything__simulate-research-query',
      arguments: { topic: 'durable execution' },
    });
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(outcome.isError, false);
    assert.match(String(textOf(outcome.content[0])), /# Research Report: durable execution/);
    await turn.end();

    const transcript = await h.client.transcript(turn.turnId);
    const call = transcript.calls.find((c) => c.id === 'research');
    assert.ok(call?.task, 'the transcript knows the task');
    assert.equal(call.task.status, 'completed');
    assert.ok(call.task.polls >= 2, `polled ${call.task.polls} times`);
    assert.match(renderTranscript(transcript), new RegExp(`task ${call.task.taskId}: completed`));
  });

  test('server-everything: a task that stops to ask for input asks a person through the turn; the answer reaches the task, which goes on and is polled to its result', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks-ambiguous-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] },
    });
    const asked: InputRequest[] = [];
    const outcome = await turn.callTool(
      { id: 'amb', name: 'mcp__everything__simulate-research-query', arguments: { topic: 'python', ambiguous: true } },
      {
        inputPollMs: 200,
        onInput: (request): InputAnswer => {
          asked.push(request);
          return { action: 'accept', content: { interpretation: 'snake' } };
        },
      },
    );
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(outcome.isError, false);
    const report = String(textOf(outcome.content[0]));
    assert.match(report, /# Research Report: python \(snake\)/);
    assert.match(report, /After receiving clarification \("snake"\), the task resumed processing and completed/);
    assert.deepEqual(
      asked.map((r) => [r.requestId, r.kind, r.tool]),
      [['amb:1:elicitation', 'form', 'mcp__everything__simulate-research-query']],
    );
    assert.match(asked[0]!.message, /could have multiple interpretations/);

    const transcript = await h.client.transcript(turn.turnId);
    const call = transcript.calls.find((c) => c.id === 'amb')!;
    assert.deepEqual(
      call.inputs?.map((i) => [i.round, i.kind, i.action]),
      [[1, 'form', 'accept']],
    );
    assert.equal(call.task?.status, 'completed');
    assert.ok(
      call.task.changes.some((c) => c.status === 'input_required'),
      'the wait for input is a change of the task',
    );
    assert.ok(
      call.task.changes.some(
        (c) => c.status === 'working' && /Continuing with interpretation: "snake"/.test(c.statusMessage ?? ''),
      ),
      'polled again after the answer',
    );
    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const types = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter(Boolean);
    assert.deepEqual(
      types.filter((t) => t === ActivityName.taskInput || t === ActivityName.deliverInputAnswer),
      [ActivityName.taskInput, ActivityName.deliverInputAnswer],
    );
    assert.ok(
      types.lastIndexOf(ActivityName.pollTask) > types.indexOf(ActivityName.taskInput),
      'the task is polled after its question',
    );
  });

  test('server-everything: a task question declined with answerInput goes to the server as decline', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks-ambiguous-decline-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] },
    });
    const running = turn.callTool({
      id: 'dec',
      name: 'mcp__everything__simulate-research-query',
      arguments: { topic: 'rust', ambiguous: true },
    });
    await waitUntil(
      "the task's question",
      async () => (await h.client.pendingInputs(turn.turnId)).length === 1,
      30_000,
    );
    const [open] = await h.client.pendingInputs(turn.turnId);
    assert.equal(open!.requestId, 'dec:1:elicitation');
    const waiting = await callProgress(h.client.client, turn.turnId, 'dec');
    assert.equal(waiting?.status, 'input_required', JSON.stringify(waiting));
    assert.match(String(waiting?.message), /^task \w+: input_required, Found multiple interpretations/);
    assert.deepEqual(await h.client.answerInput(turn.turnId, open!.requestId, { action: 'decline' }), {
      requestId: 'dec:1:elicitation',
      action: 'decline',
    });
    const outcome = await running;
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.match(
      String(textOf(outcome.content[0])),
      /# Research Report: rust \(User declined - using default interpretation\)/,
    );
    const call = (await h.client.transcript(turn.turnId)).calls.find((c) => c.id === 'dec')!;
    assert.deepEqual(
      call.inputs?.map((i) => i.action),
      ['decline'],
    );
  });

  test('a task the server forgets (its TTL ran out) ends as a timeout the model can read', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks-expire-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const outcome = await turn.callTool({ id: 'exp', name: 'mcp__jobs__expiring_job', arguments: { tag: 'exp' } });
    await turn.end();
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'timeout');
    assert.match(
      outcome.errorMessage ?? '',
      /task .+ expired before it finished: the server no longer knows it \(it was kept for 3 s\)/,
    );
    assert.equal((await taskEvents(log)).filter((e) => e.event === 'task-created' && e.tag === 'exp').length, 1);
  });

  test('cancelling the call mid-task cancels the task on its server', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks-cancel-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const running = turn.callTool({ id: 'cx', name: 'mcp__jobs__long_job', arguments: { seconds: 60, tag: 'cx' } });
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'cx'),
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'cx')!;
    // Between polls nothing runs: the API's pending-call progress is what the newest poll found.
    let progress: Record<string, unknown> | undefined;
    await waitUntil(
      "the task's progress",
      async () => {
        progress = await callProgress(h.client.client, turn.turnId, 'cx');
        return typeof progress?.statusMessage === 'string' && /^step [1-9]\d*\/60$/.test(progress.statusMessage);
      },
      20_000,
    );
    assert.equal(progress!.taskId, created.taskId);
    assert.equal(progress!.status, 'working');
    assert.match(String(progress!.message), new RegExp(`^task ${created.taskId}: working, step \\d+/60$`));
    await turn.cancelCall('cx');
    const outcome = await running;
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'cancelled');
    assert.match(outcome.errorMessage ?? '', new RegExp(`task ${created.taskId} was cancelled on the server`));
    await waitUntil(
      'the cancel to reach the server',
      async () => (await taskEvents(log)).some((e) => e.event === 'task-cancelled' && e.taskId === created.taskId),
      10_000,
    );
    await turn.end();
  });

  test('cancelling the whole turn mid-task cancels the task on its server too', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks-turn-cancel-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const running = turn
      .callTool({ id: 'tc', name: 'mcp__jobs__long_job', arguments: { seconds: 60, tag: 'tc' } })
      .catch((err: unknown) => err);
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'tc'),
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'tc')!;
    await h.client.client.workflow.getHandle(turn.turnId).cancel();
    await running;
    await waitUntil(
      'the cancel to reach the server',
      async () => (await taskEvents(log)).some((e) => e.event === 'task-cancelled' && e.taskId === created.taskId),
      10_000,
    );
    const transcript = await h.client.transcript(turn.turnId);
    assert.equal(transcript.state, 'cancelled');
  });

  test("ending the turn while a task runs waits for the task by default: the call gets the task's result", async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks-end-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const running = turn.callTool({ id: 'endw', name: 'mcp__jobs__long_job', arguments: { seconds: 4, tag: 'endw' } });
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'endw'),
    );
    const result = await turn.end();
    const outcome = await running;
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(textOf(outcome.content[0]), 'finished endw after 4 s');
    assert.equal(result.endedBy, 'endTurn');
    assert.equal(
      result.calls.find((c) => c.id === 'endw')?.outcome.status,
      'ok',
      "the turn ended with the task's result",
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'endw')!;
    assert.ok(
      !(await taskEvents(log)).some((e) => e.event === 'task-cancelled' && e.taskId === created.taskId),
      'the task was not cancelled',
    );
  });

  test('"tasks": "prefer" runs a task-optional tool as a task', async () => {
    const file = await configFiles(join(dir))({
      jobs: { type: 'http', url: (await startTaskServer({ FIXTURE_LOG: log })).url, tasks: 'prefer' },
    });
    const turn = await h.client.startTurn({
      sessionId: `tasks-prefer-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const tool = turn.tools.find((t) => t.name === 'mcp__jobs__maybe_task');
    assert.deepEqual([tool?.taskSupport, tool?.tasks], ['optional', 'prefer']);
    const outcome = await turn.callTool({ id: 'opt', name: 'mcp__jobs__maybe_task', arguments: { tag: 'opt' } });
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(textOf(outcome.content[0]), 'task answer for opt');
    const transcript = await h.client.transcript(turn.turnId);
    assert.ok(transcript.calls.find((c) => c.id === 'opt')?.task, 'it ran as a task');
  });
});

describe('tasks of 2026-07-28 servers (the io.modelcontextprotocol/tasks extension)', () => {
  let h: Harness;
  let dir: string;
  let log: string;
  let fixtureFile: string;
  let url: string;
  before(async () => {
    dir = await tempDir();
    log = join(dir, 'tasks.log');
    h = await startHarness('tasks-2026');
    url = (await startTaskServer({ FIXTURE_LOG: log }, 'modern')).url;
    fixtureFile = await configFiles(dir)({ jobs: { type: 'http', url, protocol: '2026-07-28', tasks: 'prefer' } });
  });
  after(async () => {
    await h?.stop();
  });

  test('a task runs end to end: created once, polled on timers, its result fetched once', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-e2e-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    assert.equal(turn.status.servers.find((s) => s.name === 'jobs')?.era, 'modern');
    const tool = turn.tools.find((t) => t.name === 'mcp__jobs__long_job');
    assert.deepEqual(
      [tool?.taskSupport, tool?.tasks],
      ['optional', 'prefer'],
      'a server offering the extension may answer any call with a task',
    );
    const outcome = await turn.callTool({
      id: 'e2e',
      name: 'mcp__jobs__long_job',
      arguments: { seconds: 3, tag: 'e2e' },
    });
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(outcome.isError, false);
    assert.equal(textOf(outcome.content[0]), 'finished e2e after 3 s');
    await turn.end();

    assert.equal((await taskEvents(log)).filter((e) => e.event === 'task-created' && e.tag === 'e2e').length, 1);
    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const types = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter((t) => t !== undefined);
    assert.equal(types.filter((t) => t === ActivityName.createTask).length, 1);
    assert.ok(types.filter((t) => t === ActivityName.pollTask).length >= 2, 'polled');
    assert.equal(types.filter((t) => t === ActivityName.taskResult).length, 1);
    const transcript = await h.client.transcript(turn.turnId);
    const call = transcript.calls.find((c) => c.id === 'e2e');
    assert.equal(call?.task?.status, 'completed');
    assert.match(
      renderTranscript(transcript),
      new RegExp(`task ${call.task.taskId}: completed, step 3/3 \\(\\d+ polls\\)`),
    );
  });

  test('a call (no "tasks": "prefer") of a tool the server runs only as a task is refused unrun, then sent again as a task; the next call goes straight to one', async () => {
    // Its own dir: a config file written into `dir` would replace the one the other tests use.
    const file = await configFiles(await tempDir())({ plain: { type: 'http', url, protocol: '2026-07-28' } });
    const turn = await h.client.startTurn({
      sessionId: `tasks26-plain-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const tool = turn.tools.find((t) => t.name === 'mcp__plain__long_job');
    assert.deepEqual([tool?.taskSupport, tool?.tasks], ['optional', undefined]);
    const outcome = await turn.callTool({
      id: 'plain',
      name: 'mcp__plain__long_job',
      arguments: { seconds: 1, tag: 'plain' },
    });
    const again = await turn.callTool({
      id: 'plain2',
      name: 'mcp__plain__long_job',
      arguments: { seconds: 1, tag: 'plain2' },
    });
    const ordinary = await turn.callTool({ id: 'ord', name: 'mcp__plain__long_call', arguments: { seconds: 0 } });
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(textOf(outcome.content[0]), 'finished plain after 1 s');
    assert.equal(outcome.attempts, 2, 'the refused call was the first attempt, the task the second');
    assert.equal(again.status, 'ok', again.errorMessage);
    assert.equal(textOf(again.content[0]), 'finished plain2 after 1 s');
    assert.equal(again.attempts, 1);
    const events = await taskEvents(log);
    assert.deepEqual(
      events.filter((e) => e.tag === 'plain').map((e) => e.event),
      ['call-refused', 'task-created'],
      'refused once, then one task',
    );
    assert.deepEqual(
      events.filter((e) => e.tag === 'plain2').map((e) => e.event),
      ['task-created'],
      'the second call went straight to a task',
    );
    assert.equal(ordinary.status, 'ok', ordinary.errorMessage);
    assert.equal(textOf(ordinary.content[0]), 'answered after 0 s');

    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const types = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter((t) => t !== undefined);
    assert.equal(
      types.filter((t) => t === ActivityName.callTool).length,
      2,
      'the refused attempt and the ordinary tool',
    );
    assert.equal(types.filter((t) => t === ActivityName.createTask).length, 2, 'one task per call');
    const transcript = await h.client.transcript(turn.turnId);
    const call = transcript.calls.find((c) => c.id === 'plain');
    assert.equal(call?.task?.status, 'completed');
    assert.equal(call.failures.length, 1);
    assert.match(
      call.failures[0] ?? '',
      /the server runs this tool only as an MCP task, and this call was not sent as one \(the call did not run\)/,
    );
    assert.match(
      renderTranscript(transcript),
      /\[plain\] mcp__plain__long_job .* \d+ ms, 2 attempts\n {4}attempt failed: .*the call did not run.*\n {4}task \w+: completed/,
    );
  });

  test('a retry-safe call refused on the fast path (a local activity) is sent again as a task too', async () => {
    const file = await configFiles(await tempDir())({
      fast: { type: 'http', url, protocol: '2026-07-28', retry: 'safe' },
    });
    const turn = await h.client.startTurn({
      sessionId: `tasks26-fast-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const outcome = await turn.callTool({
      id: 'fastsw',
      name: 'mcp__fast__long_job',
      arguments: { seconds: 1, tag: 'fastsw' },
    });
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(textOf(outcome.content[0]), 'finished fastsw after 1 s');
    assert.equal(outcome.attempts, 2);
    assert.deepEqual(
      (await taskEvents(log)).filter((e) => e.tag === 'fastsw').map((e) => e.event),
      ['call-refused', 'task-created'],
    );
    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const localFailures = (history.events ?? [])
      .map((e) => e.markerRecordedEventAttributes)
      .filter((m) => m?.markerName === 'core_local_activity' && m.failure);
    assert.equal(localFailures.length, 1, 'the fast-path attempt was refused');
    assert.match(
      localFailures[0]?.failure?.message ?? localFailures[0]?.failure?.cause?.message ?? '',
      /runs this tool only as an MCP task/,
    );
    const types = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter((t) => t !== undefined);
    assert.deepEqual(
      [
        types.filter((t) => t === ActivityName.callTool).length,
        types.filter((t) => t === ActivityName.createTask).length,
      ],
      [0, 1],
      'no regular attempt: the task came next',
    );
  });

  test('a task the server forgets (its TTL ran out) ends as a timeout the model can read', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-expire-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const outcome = await turn.callTool({ id: 'exp', name: 'mcp__jobs__expiring_job', arguments: { tag: 'exp26' } });
    await turn.end();
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'timeout');
    assert.match(
      outcome.errorMessage ?? '',
      /task .+ expired before it finished: the server no longer knows it \(it was kept for 3 s\)/,
    );
    assert.equal((await taskEvents(log)).filter((e) => e.event === 'task-created' && e.tag === 'exp26').length, 1);
  });

  test('cancelling the call mid-task sends tasks/cancel to the server', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-cancel-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const running = turn.callTool({ id: 'cx', name: 'mcp__jobs__long_job', arguments: { seconds: 60, tag: 'cx26' } });
    await waitUntil('the task to be created', async () =>
      (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'cx26'),
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'cx26')!;
    await turn.cancelCall('cx');
    const outcome = await running;
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'cancelled');
    assert.match(outcome.errorMessage ?? '', new RegExp(`task ${created.taskId} was cancelled on the server`));
    await waitUntil(
      'the cancel to reach the server',
      async () => (await taskEvents(log)).some((e) => e.event === 'task-cancelled' && e.taskId === created.taskId),
      10_000,
    );
    await turn.end();
  });

  test("a task that fails (a JSON-RPC error) is the tool's error", async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-fail-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const failed = await turn.callTool({ id: 'fail', name: 'mcp__jobs__failing_job', arguments: { tag: 'fail26' } });
    await turn.end();
    assert.equal(failed.status, 'ok', failed.errorMessage);
    assert.equal(failed.isError, true);
    assert.match(String(textOf(failed.content[0])), /task \w+ failed: the job broke/);
  });

  test('a task that asks for input (inputRequests) asks a person through the turn; the answer goes back with tasks/update, once, and the task finishes with it', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-ask-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const asked: InputRequest[] = [];
    const outcome = await turn.callTool(
      { id: 'ask', name: 'mcp__jobs__asking_job', arguments: { tag: 'colour' } },
      {
        inputPollMs: 200,
        onInput: (request): InputAnswer => {
          asked.push(request);
          return { action: 'accept', content: { choice: 'teal' } };
        },
      },
    );
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(outcome.isError, false);
    assert.equal(textOf(outcome.content[0]), 'colour: teal');
    assert.deepEqual(
      asked.map((r) => [r.requestId, r.kind, r.tool, r.message]),
      [['ask:1:choice', 'form', 'mcp__jobs__asking_job', 'Which colour?']],
    );

    const events = await taskEvents(log);
    const created = events.filter((e) => e.event === 'task-created' && e.tag === 'colour');
    assert.equal(created.length, 1);
    const updates = events.filter(
      (e) => e.event === 'task-updated' && e.taskId === created[0]!.taskId,
    ) as (TaskEvent & { keys: string[]; actions: string[] })[];
    assert.deepEqual(
      updates.map((u) => [u.keys, u.actions]),
      [[['choice'], ['accept']]],
      'one tasks/update with the answer',
    );
    assert.ok(!events.some((e) => e.event === 'task-cancelled' && e.taskId === created[0]!.taskId), 'not cancelled');

    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const types = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter((t) => t !== undefined);
    assert.equal(types.filter((t) => t === ActivityName.updateTask).length, 1);
    assert.equal(types.filter((t) => t === ActivityName.taskInput).length, 0, 'nothing held while a person answers');
    assert.ok(
      types.lastIndexOf(ActivityName.pollTask) > types.indexOf(ActivityName.updateTask),
      'polled again after the answer',
    );
    const transcript = await h.client.transcript(turn.turnId);
    const call = transcript.calls.find((c) => c.id === 'ask')!;
    assert.deepEqual(
      call.inputs?.map((i) => [i.round, i.key, i.kind, i.action]),
      [[1, 'choice', 'form', 'accept']],
    );
    assert.equal(call.task?.status, 'completed');
    assert.ok(call.task.changes.some((c) => c.status === 'input_required' && c.statusMessage === 'Which colour?'));
    const rendered = renderTranscript(transcript);
    assert.match(rendered, /asked \(round 1, form\): Which colour\? -> accept/);
    assert.doesNotMatch(rendered, /asked .* teal/, "the answer's content is never shown");
  });

  test("a task's question declined with answerInput reaches the server as decline; the API shows the task waiting meanwhile", async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-decline-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const running = turn.callTool({ id: 'dec', name: 'mcp__jobs__asking_job', arguments: { tag: 'shape' } });
    await waitUntil(
      "the task's question",
      async () => (await h.client.pendingInputs(turn.turnId)).length === 1,
      30_000,
    );
    const [open] = await h.client.pendingInputs(turn.turnId);
    assert.deepEqual(
      [open!.requestId, open!.key, open!.round, open!.message],
      ['dec:1:choice', 'choice', 1, 'Which shape?'],
    );
    const waiting = await callProgress(h.client.client, turn.turnId, 'dec');
    assert.equal(waiting?.status, 'input_required', JSON.stringify(waiting));
    assert.match(String(waiting?.message), /^task \w+: input_required, Which shape\?$/);
    assert.deepEqual(await h.client.answerInput(turn.turnId, open!.requestId, { action: 'decline' }), {
      requestId: 'dec:1:choice',
      action: 'decline',
    });
    const outcome = await running;
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(textOf(outcome.content[0]), 'shape: no answer (decline)');
    const call = (await h.client.transcript(turn.turnId)).calls.find((c) => c.id === 'dec')!;
    assert.deepEqual(
      call.inputs?.map((i) => i.action),
      ['decline'],
    );
  });

  test("cancelling the call while its task's question waits closes the question and cancels the task on the server", async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-cancel-ask-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const running = turn.callTool({ id: 'cxa', name: 'mcp__jobs__asking_job', arguments: { tag: 'cxa26' } });
    await waitUntil("the task's question", async () => (await turn.pendingInputs()).length === 1, 30_000);
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'cxa26')!;
    await turn.cancelCall('cxa');
    const outcome = await running;
    assert.equal(outcome.errorKind, 'cancelled');
    assert.match(outcome.errorMessage ?? '', new RegExp(`task ${created.taskId} was cancelled on the server`));
    assert.deepEqual(await turn.pendingInputs(), [], 'the question is closed');
    await waitUntil(
      'the cancel to reach the server',
      async () => (await taskEvents(log)).some((e) => e.event === 'task-cancelled' && e.taskId === created.taskId),
      10_000,
    );
    assert.ok(
      !(await taskEvents(log)).some((e) => e.event === 'task-updated' && e.taskId === created.taskId),
      'no answer was sent',
    );
    await turn.end();
  });

  test('a task that asks what no person can give (sampling) is cancelled, and the model reads why', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-sampling-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
    });
    const outcome = await turn.callTool({ id: 'smp', name: 'mcp__jobs__sampling_job', arguments: { tag: 'smp26' } });
    await turn.end();
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'bad_request');
    assert.match(
      outcome.errorMessage ?? '',
      /^mcp__jobs__sampling_job: task (\w+) asked for input that cannot be given \(sampling \(sampling\/createMessage\) is not supported by this client/,
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'smp26')!;
    assert.ok(
      (await taskEvents(log)).some((e) => e.event === 'task-cancelled' && e.taskId === created.taskId),
      'the task was cancelled on the server',
    );
    assert.deepEqual(await turn.pendingInputs(), [], 'nobody was asked');
  });

  test('a task still asking after its unanswered question was answered cancel is cancelled, and the model reads that nobody answered in time', async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-stubborn-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
      limits: { inputTimeoutMs: 1000 },
    });
    const outcome = await turn.callTool({ id: 'stb', name: 'mcp__jobs__asking_job', arguments: { tag: 'stubborn' } });
    await turn.end();
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'unknown_result');
    assert.match(
      outcome.errorMessage ?? '',
      /^mcp__jobs__asking_job: task (\w+) asked for input and got no answer within 1 s \(DMCP_INPUT_TIMEOUT\); it was cancelled/,
    );
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'stubborn')!;
    const events = (await taskEvents(log)).filter((e) => e.taskId === created.taskId) as (TaskEvent & {
      actions?: string[];
    })[];
    assert.deepEqual(
      events.map((e) => [e.event, e.actions]),
      [
        ['task-created', undefined],
        ['task-updated', ['cancel']],
        ['task-cancelled', undefined],
      ],
      'told cancel once, then cancelled',
    );
  });

  test("over stdio: a task runs end to end, and a task's question is asked and answered, as over HTTP", async () => {
    const file = await configFiles(await tempDir())({
      local: {
        command: process.execPath,
        args: [taskServer, 'modern', 'stdio'],
        env: { FIXTURE_LOG: log },
        protocol: '2026-07-28',
        tasks: 'prefer',
      },
    });
    const turn = await h.client.startTurn({
      sessionId: `tasks26-stdio-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const status = turn.status.servers.find((s) => s.name === 'local');
    assert.deepEqual([status?.transport, status?.era], ['stdio', 'modern']);
    const long = await turn.callTool({
      id: 'std',
      name: 'mcp__local__long_job',
      arguments: { seconds: 2, tag: 'std26' },
    });
    const asked = await turn.callTool(
      { id: 'stdask', name: 'mcp__local__asking_job', arguments: { tag: 'colour' } },
      {
        inputPollMs: 200,
        onInput: (): InputAnswer => ({ action: 'accept', content: { choice: 'mauve' } }),
      },
    );
    await turn.end();
    assert.equal(long.status, 'ok', long.errorMessage);
    assert.equal(textOf(long.content[0]), 'finished std26 after 2 s');
    assert.equal(asked.status, 'ok', asked.errorMessage);
    assert.equal(textOf(asked.content[0]), 'colour: mauve');
    const events = await taskEvents(log);
    assert.equal(events.filter((e) => e.event === 'task-created' && e.tag === 'std26').length, 1);
    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const types = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter((t) => t !== undefined);
    assert.deepEqual(
      [ActivityName.createTask, ActivityName.updateTask, ActivityName.taskResult, ActivityName.callTool].map(
        (t) => types.filter((x) => x === t).length,
      ),
      [2, 1, 2, 0],
    );
    const transcript = await h.client.transcript(turn.turnId);
    assert.deepEqual(
      transcript.calls.find((c) => c.id === 'stdask')?.inputs?.map((i) => [i.round, i.key, i.action]),
      [[1, 'choice', 'accept']],
    );
  });

  test("a task's question unanswered within the input limit is answered cancel, as a 2025-era task's is; the task goes on", async () => {
    const turn = await h.client.startTurn({
      sessionId: `tasks26-unanswered-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [fixtureFile] },
      limits: { inputTimeoutMs: 1000 },
    });
    const outcome = await turn.callTool({ id: 'late', name: 'mcp__jobs__asking_job', arguments: { tag: 'size' } });
    await turn.end();
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(textOf(outcome.content[0]), 'size: no answer (cancel)');
    const created = (await taskEvents(log)).find((e) => e.event === 'task-created' && e.tag === 'size')!;
    const updates = (await taskEvents(log)).filter(
      (e) => e.event === 'task-updated' && e.taskId === created.taskId,
    ) as (TaskEvent & { actions: string[] })[];
    assert.deepEqual(
      updates.map((u) => u.actions),
      [['cancel']],
    );
  });
});

describe('a worker SIGKILLed while its call runs as a task', () => {
  const workers: WorkerProcess[] = [];
  const serverPids = new Set<number>();
  let bundleFile: string | undefined;
  after(async () => {
    await Promise.all(workers.map(stopWorkerProcess));
    // A stdio server of the killed worker loses its parent; end it by the PID the status reported.
    for (const pid of serverPids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });

  /** Two worker processes on a fresh queue, a client, and the turn's session on one of them. */
  async function twoWorkers(dir: string, file: string) {
    if (!bundleFile) {
      bundleFile = join(await tempDir(), 'workflows.js');
      await writeFile(bundleFile, (await bundleWorkflows()).code);
    }
    const taskQueue = uniqueQueue('tasks-crash');
    const env = { TEMPORAL_ADDRESS: temporalAddress(), DMCP_NO_USER_CONFIG: '1' };
    const pair = [
      await startWorkerProcess(taskQueue, bundleFile, env),
      await startWorkerProcess(taskQueue, bundleFile, env),
    ];
    workers.push(...pair);
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new TurnClient({ client: new Client({ connection }), taskQueue });
    const turn = await client.startTurn({
      sessionId: `tasks-crash-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
      limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
    });
    for (const s of turn.status.servers) if (s.pid) serverPids.add(s.pid);
    const victim = pair.find((w) => w.workerQueue === turn.workerQueue);
    assert.ok(victim, 'the turn is pinned to one of our two workers');
    return { client, turn, victim };
  }

  test("remote server: the survivor resumes polling the same task; created once, and the outcome is the task's result", async () => {
    const dir = await tempDir();
    const log = join(dir, 'tasks.log');
    const fixture = await startTaskServer({ FIXTURE_LOG: log });
    const file = await configFiles(dir)({ jobs: { type: 'http', url: fixture.url } });
    const { client, turn, victim } = await twoWorkers(dir, file);
    try {
      const running = turn.callTool({
        id: 'long',
        name: 'mcp__jobs__long_job',
        arguments: { seconds: 12, tag: 'long' },
      });
      await waitUntil('the task to be created', async () =>
        (await taskEvents(log)).some((e) => e.event === 'task-created' && e.tag === 'long'),
      );
      // A few polls in: the task is well under way when its worker dies.
      await new Promise((resolve) => setTimeout(resolve, 4000));
      process.kill(victim.pid, 'SIGKILL');

      const outcome = await running;
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.equal(textOf(outcome.content[0]), 'finished long after 12 s');
      assert.equal(
        (await taskEvents(log)).filter((e) => e.event === 'task-created' && e.tag === 'long').length,
        1,
        'the task was created exactly once',
      );
      const result = await turn.end();
      assert.notEqual(result.workerQueue, victim.workerQueue, 'the turn finished on the surviving worker');

      const history = await client.client.workflow.getHandle(turn.turnId).fetchHistory();
      const types = (history.events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
        .filter((t) => t !== undefined);
      assert.equal(types.filter((t) => t === ActivityName.createTask).length, 1, 'one createTask activity');
      assert.equal(types.filter((t) => t === ActivityName.callTool).length, 0, 'no plain call');
      assert.ok(types.filter((t) => t === ActivityName.pollTask).length >= 5, 'polled, before and after the crash');
      assert.equal(types.filter((t) => t === ActivityName.taskResult).length, 1, 'the result fetched once');
      const transcript = renderTranscript(await client.transcript(turn.turnId));
      assert.match(transcript, /task [\w-]+: completed, step 12\/12 \(\d+ polls\)/);
    } finally {
      await client.close();
    }
  });

  test('stdio server: a worker SIGKILLed while its task waits for an answer closes the question; the task is lost with it, and the outcome says so', async () => {
    const dir = await tempDir();
    const file = await configFiles(dir)({
      everything: { command: process.execPath, args: [everythingServer, 'stdio'] },
    });
    const { client, turn, victim } = await twoWorkers(dir, file);
    try {
      const running = turn.callTool({
        id: 'ask',
        name: 'mcp__everything__simulate-research-query',
        arguments: { topic: 'python', ambiguous: true },
      });
      await waitUntil("the task's question", async () => (await turn.pendingInputs()).length === 1, 30_000);
      assert.equal((await turn.pendingInputs())[0]!.requestId, 'ask:1:elicitation');
      process.kill(victim.pid, 'SIGKILL');

      const outcome = await running;
      assert.equal(outcome.status, 'error');
      assert.equal(outcome.errorKind, 'unknown_result');
      assert.match(outcome.errorMessage ?? '', /task .+ was lost: the server process that ran it is gone/);
      assert.deepEqual(await turn.pendingInputs(), [], 'nobody waits for the question any more');
      const late = await turn.answerInput('ask:1:elicitation', { action: 'decline' }).then(
        () => undefined,
        (err: unknown) => err,
      );
      assert.ok(late instanceof Error, 'an answer after the crash is refused');
      const result = await turn.end();
      assert.notEqual(result.workerQueue, victim.workerQueue, 'the turn finished on the surviving worker');
      const history = await client.client.workflow.getHandle(turn.turnId).fetchHistory();
      const types = (history.events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
        .filter((t) => t !== undefined);
      assert.deepEqual(
        types.filter((t) => t === ActivityName.createTask || t === ActivityName.taskInput),
        [ActivityName.createTask, ActivityName.taskInput],
        'created once, asked once',
      );
    } finally {
      await client.close();
    }
  });

  test("2026-07-28 remote server: a worker SIGKILLed while a task's question waits for a person loses nothing; the survivor sends the answer to the same task", async () => {
    const dir = await tempDir();
    const log = join(dir, 'tasks.log');
    const fixture = await startTaskServer({ FIXTURE_LOG: log }, 'modern');
    const file = await configFiles(dir)({
      jobs: { type: 'http', url: fixture.url, protocol: '2026-07-28', tasks: 'prefer' },
    });
    const { client, turn, victim } = await twoWorkers(dir, file);
    try {
      const running = turn.callTool({ id: 'ask26', name: 'mcp__jobs__asking_job', arguments: { tag: 'colour' } });
      await waitUntil("the task's question", async () => (await turn.pendingInputs()).length === 1, 30_000);
      assert.equal((await turn.pendingInputs())[0]!.requestId, 'ask26:1:choice');
      process.kill(victim.pid, 'SIGKILL');
      // The question is in history, not in the dead worker: it is still open, and the answer is taken.
      assert.deepEqual(
        (await turn.pendingInputs()).map((r) => r.requestId),
        ['ask26:1:choice'],
      );
      await turn.answerInput('ask26:1:choice', { action: 'accept', content: { choice: 'red' } });

      const outcome = await running;
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.equal(textOf(outcome.content[0]), 'colour: red');
      const events = await taskEvents(log);
      const created = events.filter((e) => e.event === 'task-created' && e.tag === 'colour');
      assert.equal(created.length, 1, 'the task was created exactly once');
      assert.equal(
        events.filter((e) => e.event === 'task-updated' && e.taskId === created[0]!.taskId).length,
        1,
        'the answer reached the same task once',
      );
      const result = await turn.end();
      assert.notEqual(result.workerQueue, victim.workerQueue, 'the turn finished on the surviving worker');
      const history = await client.client.workflow.getHandle(turn.turnId).fetchHistory();
      const types = (history.events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
        .filter((t) => t !== undefined);
      assert.equal(types.filter((t) => t === ActivityName.createTask).length, 1, 'one createTask activity');
      assert.equal(
        types.filter((t) => t === ActivityName.taskInput).length,
        0,
        'nothing held while the question waited',
      );
    } finally {
      await client.close();
    }
  });
});
