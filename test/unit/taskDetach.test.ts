/** The pure parts of detaching a turn's MCP tasks and taking one up later: checks, texts, transcript. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { buildTranscript } from '../../client/transcript.js';
import { outcomeText, renderTranscript, taskLine } from '../../client/transcriptText.js';
import { parseTakeTaskSpec } from '../../cli/commands/run.js';
import { callFingerprint } from '../../api/recorded.js';
import { CallRequestSchema, EndTurnSchema } from '../../api/schemas.js';
import {
  ActivityName,
  END_TURN_DETACH_UPDATE_ID,
  MAX_TASK_ID_CHARS,
  taskIdProblem,
  type DetachedTask,
  type TakeTaskInput,
  type TaskStarted,
  type TurnResult,
} from '../../contract/index.js';
import { detachedMessage, detachedOutcome, takeUpProblem, unknownTaskOutcome } from '../../workflows/detach.js';

const taskIds: [title: string, taskId: unknown, problem: RegExp | undefined][] = [
  ['hex', '56c1a4b35ea4422a0409aaff14c790cd', undefined],
  ['a UUID', '0f8fad5b-d9cb-469f-a165-70867728950e', undefined],
  ['punctuation is visible ASCII', 'job:42/a_b.c', undefined],
  ['at the limit', 'x'.repeat(MAX_TASK_ID_CHARS), undefined],
  ['past the limit', 'x'.repeat(MAX_TASK_ID_CHARS + 1), /at most 256/],
  ['empty', '', /non-empty string/],
  ['not a string', 42, /non-empty string/],
  ['a space', 'two words', /visible ASCII/],
  ['a header break', 'abc\r\nX-Injected: 1', /visible ASCII/],
  ['non-ASCII', 'tâche', /visible ASCII/],
];
for (const [title, taskId, problem] of taskIds) {
  void test(`task ID: ${title}`, () => {
    const found = taskIdProblem(taskId);
    if (problem === undefined) assert.equal(found, undefined);
    else assert.match(found ?? '', problem);
    // The API refuses exactly what the workflow refuses.
    assert.equal(CallRequestSchema.safeParse({ id: 'c', name: 'mcp__s__t', taskId }).success, problem === undefined);
  });
}

void test("the call Update refuses a bad task ID and the detaching end's Update ID; a call without a task ID passes", () => {
  assert.equal(takeUpProblem({ id: 'c1' }), undefined);
  assert.equal(takeUpProblem({ id: 'c1', taskId: 'abc' }), undefined);
  assert.match(takeUpProblem({ id: 'c1', taskId: 'a b' }) ?? '', /^call c1: taskId may hold only visible ASCII/);
  assert.match(takeUpProblem({ id: END_TURN_DETACH_UPDATE_ID }) ?? '', /reserved for ending the turn/);
  assert.equal(CallRequestSchema.safeParse({ id: END_TURN_DETACH_UPDATE_ID, name: 'mcp__s__t' }).success, false);
  assert.equal(EndTurnSchema.safeParse({}).success, true);
  assert.equal(EndTurnSchema.safeParse({ detach: true, endSession: false }).success, true);
  assert.equal(EndTurnSchema.safeParse({ detach: 'yes' }).success, false);
  assert.equal(EndTurnSchema.safeParse({ other: 1 }).success, false);
});

const remote: DetachedTask = {
  taskId: 'tk1',
  server: 'jobs',
  sessionId: 's1',
  remote: true,
  expiresAt: '2026-12-04T17:00:00.000Z',
  takeUp: { name: 'mcp__jobs__long_job', taskId: 'tk1' },
};
const messages: [title: string, d: DetachedTask, sessionEnds: boolean, expected: string][] = [
  [
    'remote: any session with the server; the TTL end; the call and the command line',
    remote,
    false,
    'mcp__jobs__long_job: the turn ended without waiting for this call (detached): its task tk1 goes on on server "jobs"; the server keeps it until 2026-12-04T17:00:00.000Z (its TTL). ' +
      'To fetch its result, send the call {"id":"<a new call ID>","name":"mcp__jobs__long_job","taskId":"tk1"} in a later turn of any session whose server entry reaches the same server with the same credentials; ' +
      "its result becomes that call's outcome (CLI: durable-mcp run --session s1 --take-task 'mcp__jobs__long_job tk1' with the same servers).",
  ],
  [
    'remote, the session ending too: still reachable',
    { ...remote, expiresAt: undefined },
    true,
    'mcp__jobs__long_job: the turn ended without waiting for this call (detached): its task tk1 goes on on server "jobs"; the server gave no TTL. ' +
      'To fetch its result, send the call {"id":"<a new call ID>","name":"mcp__jobs__long_job","taskId":"tk1"} in a later turn of any session whose server entry reaches the same server with the same credentials; ' +
      "its result becomes that call's outcome (CLI: durable-mcp run --session s1 --take-task 'mcp__jobs__long_job tk1' with the same servers).",
  ],
  [
    'stdio: only the same session, while its process lives',
    { ...remote, remote: false },
    false,
    'mcp__jobs__long_job: the turn ended without waiting for this call (detached): its task tk1 goes on on server "jobs"; the server keeps it until 2026-12-04T17:00:00.000Z (its TTL). ' +
      'To fetch its result, send the call {"id":"<a new call ID>","name":"mcp__jobs__long_job","taskId":"tk1"} in a later turn of session "s1" (a stdio server\'s task lives only as long as its process: before the session ends or its servers stop when idle); ' +
      "its result becomes that call's outcome (CLI: durable-mcp run --session s1 --take-task 'mcp__jobs__long_job tk1' with the same servers).",
  ],
  [
    'stdio, the session ending with the turn: says the result is lost',
    { ...remote, remote: false },
    true,
    'mcp__jobs__long_job: the turn ended without waiting for this call (detached): its task tk1 goes on on server "jobs"; the server keeps it until 2026-12-04T17:00:00.000Z (its TTL). ' +
      'Its result cannot be fetched: the session "s1" ends with this turn, and a stdio server\'s task ends with its process.',
  ],
];
for (const [title, d, sessionEnds, expected] of messages) {
  void test(`detached message: ${title}`, () =>
    assert.equal(detachedMessage('mcp__jobs__long_job', d, sessionEnds), expected));
}

void test('detached message: a task ID a shell would read differently gets no command line, only the call', () => {
  const odd = { ...remote, taskId: "it's$(x)", takeUp: { name: 'mcp__jobs__long_job', taskId: "it's$(x)" } };
  const text = detachedMessage('mcp__jobs__long_job', odd, false);
  assert.doesNotMatch(text, /CLI:/);
  assert.match(text, /"taskId":"it's\$\(x\)"/);
});

void test("detached outcome: an error of kind detached, timed from the call's start, carrying the task", () => {
  const outcome = detachedOutcome(
    'mcp__jobs__long_job',
    remote,
    false,
    Date.parse('2026-12-04T16:50:00.000Z'),
    Date.parse('2026-12-04T16:50:02.500Z'),
  );
  assert.deepEqual(
    [outcome.status, outcome.errorKind, outcome.startedAt, outcome.durationMs],
    ['error', 'detached', '2026-12-04T16:50:00.000Z', 2500],
  );
  assert.deepEqual(outcome.detached, remote);
  assert.match(outcomeText(outcome), /^detached: mcp__jobs__long_job: the turn ended without waiting/);
});

void test('unknown task: a bad request that names the server and the task, and why a stdio task may be gone', () => {
  const r = unknownTaskOutcome('mcp__jobs__long_job', 'jobs', true, 'tk9', 'Task not found');
  assert.deepEqual([r.status, r.errorKind], ['error', 'bad_request']);
  assert.equal(
    r.errorMessage,
    'mcp__jobs__long_job: server "jobs" does not know task tk9: it expired (a server forgets a task after its TTL), or it never existed on this server (the server said: Task not found); nothing was taken up',
  );
  assert.match(
    unknownTaskOutcome('mcp__e__q', 'e', false, 'tk9').errorMessage ?? '',
    /lived in a server process that has stopped since \(a stdio server's task ends with its process\); nothing was taken up$/,
  );
});

const specs: [spec: string, expected: { name: string; taskId: string } | RegExp][] = [
  ['mcp__jobs__long_job 56c1a4b3', { name: 'mcp__jobs__long_job', taskId: '56c1a4b3' }],
  ['  mcp__jobs__long_job   56c1a4b3  ', { name: 'mcp__jobs__long_job', taskId: '56c1a4b3' }],
  ['mcp__jobs__long_job', /expected 'TOOL TASK_ID'/],
  ['mcp__jobs__long_job a b', /expected 'TOOL TASK_ID'/],
  ['', /expected 'TOOL TASK_ID'/],
];
for (const [spec, expected] of specs) {
  void test(`--take-task ${JSON.stringify(spec)}`, () => {
    if (expected instanceof RegExp) assert.throws(() => parseTakeTaskSpec(spec, 0), expected);
    else assert.deepEqual(parseTakeTaskSpec(spec, 1), { id: 'take-task-2', ...expected });
  });
}

void test('the API tells a call that takes up a task from one with the same tool and arguments that does not', () => {
  const plain = callFingerprint({ name: 'mcp__s__t', arguments: { a: 1 } });
  assert.equal(
    plain,
    callFingerprint({ name: 'mcp__s__t', arguments: { a: 1 } }),
    'a call without a task ID hashes as before',
  );
  assert.notEqual(plain, callFingerprint({ name: 'mcp__s__t', arguments: { a: 1 }, taskId: 'tk' }));
  assert.notEqual(
    callFingerprint({ name: 'mcp__s__t', taskId: 'tk1' }),
    callFingerprint({ name: 'mcp__s__t', taskId: 'tk2' }),
  );
});

void test('transcript: a taken-up task says so, and a detached call says its task goes on', () => {
  const payload = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
  const take: TakeTaskInput = {
    sessionId: 's',
    firstRunId: 'r1',
    callId: 'c1',
    name: 'mcp__s__job',
    server: 's',
    tool: 'job',
    arguments: {},
    requestTimeoutMs: 1000,
    taskId: 'tk',
  };
  const started: TaskStarted = {
    kind: 'task',
    taskId: 'tk',
    status: 'working',
    statusMessage: 'step 2/5',
    createdAt: '2026-12-04T16:00:00.000Z',
  };
  const detached = detachedOutcome(
    'mcp__s__job',
    { ...remote, taskId: 'tk', takeUp: { name: 'mcp__s__job', taskId: 'tk' } },
    false,
    0,
    100,
  );
  const result: TurnResult = {
    turnId: 's/turn-2',
    sessionId: 's',
    workerQueue: 'q',
    endedBy: 'endTurn',
    calls: [{ id: 'c1', name: 'mcp__s__job', arguments: {}, taskId: 'tk', outcome: detached }],
  };
  const events: object[] = [
    {
      eventId: 1,
      activityTaskScheduledEventAttributes: { activityType: { name: ActivityName.takeTask }, input: payload(take) },
    },
    { eventId: 2, activityTaskCompletedEventAttributes: { scheduledEventId: 1, result: payload(started) } },
    { eventId: 3, workflowExecutionCompletedEventAttributes: { result: payload(result) } },
  ];
  const t = buildTranscript('s/turn-2', { events });
  assert.equal(t.calls[0]?.task?.takenUp, true);
  const rendered = renderTranscript(t);
  assert.match(
    rendered,
    /^ {4}task tk \(taken up\): working, step 2\/5 \(0 polls\); detached: the turn ended without it, and the task goes on on its server$/m,
  );
  assert.match(rendered, /^ {4}detached: mcp__s__job: the turn ended without waiting for this call \(detached\)/m);
  assert.equal(
    taskLine({ taskId: 'tk', status: 'working', polls: 1, changes: [] }),
    'task tk: working (1 poll)',
    'a task neither taken up nor detached reads as before',
  );
});
