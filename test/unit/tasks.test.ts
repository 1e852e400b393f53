import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { buildTranscript, MAX_TASK_CHANGES } from '../../client/transcript.js';
import { renderTranscript, taskLine } from '../../client/transcriptText.js';
import {
  ActivityName,
  type CallToolInput,
  type TaskPoll,
  type TaskRef,
  type TaskStarted,
} from '../../contract/index.js';
import { relatedTaskId } from '../../mcp/legacyQuestions.js';
import { taskProgress } from '../../api/progress.js';
import { newEvents } from '../../client/derivedEvents.js';
import { endedTaskOutcome, runsAsTask } from '../../workflows/tasks.js';
import {
  LONG_TASK_AFTER_MS,
  MAX_LONG_TASK_WAIT_MS,
  MAX_POLL_MS,
  lostTrackOutcome,
  pollDelayMs,
} from '../../workflows/taskPolling.js';
import { refusedInputOutcome, unansweredOutcome } from '../../workflows/taskQuestions.js';
import { TASK_REQUEST_TIMEOUT_MS, taskInputOptions } from '../../workflows/activityOptions.js';

const cases: [title: string, suggested: number | undefined, polls: number, expected: number][] = [
  ['no suggestion: 1 s', undefined, 0, 1000],
  ["the server's interval", 2500, 3, 2500],
  ['a tiny interval is raised to 1 s', 10, 0, 1000],
  ['a zero interval is raised to 1 s', 0, 0, 1000],
  ['a huge interval is cut to 5 min', 3_600_000, 0, MAX_POLL_MS],
  ['steady through the 10th poll', 1000, 9, 1000],
  ['the 11th wait grows 1.5x', 1000, 10, 1500],
  ['the 12th 2.25x', 1000, 11, 2250],
  ['growth stops at 5 min', 1000, 40, MAX_POLL_MS],
  ['a long suggestion grows to the cap too', 200_000, 10, MAX_POLL_MS],
];
for (const [title, suggested, polls, expected] of cases) {
  void test(`poll delay: ${title}`, () => assert.equal(pollDelayMs(suggested, polls), expected));
}

const DAY = 24 * 60 * 60_000;
const longCases: [title: string, polls: number, ageMs: number, ttlMs: number | null | undefined, expected: number][] = [
  ['just under a day: 5 min', 300, LONG_TASK_AFTER_MS - 1, undefined, MAX_POLL_MS],
  ['a day: still 5 min (1% of a day is 14.4 min, more)', 300, DAY, undefined, 0.01 * DAY],
  ['two days: 1% of its age', 400, 2 * DAY, null, 0.02 * DAY],
  ['a long-running year: at most 12 h', 900, 365 * DAY, undefined, MAX_LONG_TASK_WAIT_MS],
  ['TTL near: half of what is left', 400, 2 * DAY, 2 * DAY + 20 * 60_000, 10 * 60_000],
  ['TTL almost gone: never below the usual wait', 400, 2 * DAY, 2 * DAY + 1000, MAX_POLL_MS],
];
for (const [title, polls, ageMs, ttlMs, expected] of longCases) {
  void test(`poll delay of a long task: ${title}`, () =>
    assert.equal(pollDelayMs(1000, polls, ageMs, ttlMs), Math.round(expected)));
}

void test("poll delay: a task's polls grow with the log of its age past a day (history stays far from Temporal's 51,200 events)", () => {
  const pollsFor = (days: number) => {
    let age = 0;
    let polls = 0;
    for (; age < days * DAY; polls += 1) age += pollDelayMs(1000, polls, age);
    return polls;
  };
  const [day, month, year] = [pollsFor(1), pollsFor(30), pollsFor(365)];
  assert.ok(day > 250 && day < 350, `a day: ${day} polls`);
  // About 11 events a poll: a month is under 7,500 events, a year under 15,000.
  assert.ok(month < 700, `a month: ${month} polls`);
  assert.ok(year < 1400, `a year: ${year} polls`);
});

void test('poll delay: an hour-long task at 1 s costs tens of polls, not thousands', () => {
  let waited = 0;
  let polls = 0;
  for (; waited < 3_600_000; polls += 1) waited += pollDelayMs(1000, polls);
  assert.ok(polls < 40, `${polls} polls`);
});

const runs: [support: 'optional' | 'required' | undefined, tasks: 'prefer' | undefined, expected: boolean][] = [
  ['required', undefined, true],
  ['required', 'prefer', true],
  ['optional', undefined, false],
  ['optional', 'prefer', true],
  [undefined, undefined, false],
  [undefined, 'prefer', false],
];
for (const [taskSupport, tasks, expected] of runs) {
  void test(`runs as a task: taskSupport ${taskSupport ?? 'absent'}, tasks ${tasks ?? 'absent'} -> ${expected}`, () => {
    assert.equal(runsAsTask({ ...(taskSupport ? { taskSupport } : {}), ...(tasks ? { tasks } : {}) }), expected);
  });
}

void test('ended task outcomes: a lost stdio task may have had an effect; a forgotten one is a timeout naming its TTL', () => {
  const lost = endedTaskOutcome('mcp__s__job', { taskId: 't1', ttlMs: 60_000 }, { status: 'lost' });
  assert.deepEqual([lost.status, lost.errorKind], ['error', 'unknown_result']);
  assert.match(
    lost.errorMessage ?? '',
    /^mcp__s__job: task t1 was lost: the server process that ran it is gone .*it may have had an effect$/,
  );
  const expired = endedTaskOutcome(
    'mcp__s__job',
    { taskId: 't2', ttlMs: 3000 },
    { status: 'unknown', statusMessage: 'Task not found' },
  );
  assert.deepEqual([expired.status, expired.errorKind], ['error', 'timeout']);
  assert.equal(
    expired.errorMessage,
    'mcp__s__job: task t2 expired before it finished: the server no longer knows it (it was kept for 3 s): Task not found',
  );
  const unlimited = endedTaskOutcome('mcp__s__job', { taskId: 't3', ttlMs: null }, { status: 'unknown' });
  assert.equal(
    unlimited.errorMessage,
    'mcp__s__job: task t3 expired before it finished: the server no longer knows it',
  );
});

/** A history of one call that ran as a task: scheduled and completed activity events, as Temporal records them. */
function taskHistory(polls: (TaskPoll | [type: string, result: unknown, input?: object])[]) {
  const payload = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
  const events: object[] = [];
  let id = 0;
  const activity = (type: string, input: unknown, result: unknown) => {
    const scheduled = ++id;
    events.push({
      eventId: scheduled,
      activityTaskScheduledEventAttributes: { activityType: { name: type }, input: payload(input) },
    });
    events.push({
      eventId: ++id,
      activityTaskCompletedEventAttributes: { scheduledEventId: scheduled, result: payload(result) },
    });
  };
  const call: CallToolInput = {
    sessionId: 's',
    firstRunId: 'r1',
    callId: 'c1',
    name: 'mcp__s__job',
    server: 's',
    tool: 'job',
    arguments: { n: 1 },
    requestTimeoutMs: 1000,
  };
  const ref: TaskRef = {
    sessionId: 's',
    firstRunId: 'r1',
    callId: 'c1',
    name: 'mcp__s__job',
    server: 's',
    tool: 'job',
    taskId: 'tk',
    requestTimeoutMs: 1000,
  };
  const started: TaskStarted = { kind: 'task', taskId: 'tk', ttlMs: 60_000, pollIntervalMs: 1000, status: 'working' };
  activity(ActivityName.createTask, call, started);
  for (const poll of polls) {
    if (Array.isArray(poll))
      activity(
        poll[0],
        poll[0] === ActivityName.taskInput ? { ...ref, waitMs: 600_000 } : { ...ref, ...poll[2] },
        poll[1],
      );
    else activity(ActivityName.pollTask, ref, poll);
  }
  return { events };
}

void test('transcript: a task call shows its ID, its last state and each change once, bounded', () => {
  const polls: TaskPoll[] = [
    { status: 'working', statusMessage: 'step 1/3' },
    { status: 'working', statusMessage: 'step 1/3' },
    { status: 'working', statusMessage: 'step 2/3' },
    { status: 'completed' },
  ];
  const t = buildTranscript('s/turn-1', taskHistory(polls));
  const call = t.calls[0]!;
  assert.deepEqual(call.arguments, { n: 1 });
  assert.deepEqual(call.task, {
    taskId: 'tk',
    status: 'completed',
    statusMessage: undefined,
    polls: 4,
    changes: [
      { poll: 0, status: 'working' },
      { poll: 1, status: 'working', statusMessage: 'step 1/3' },
      { poll: 3, status: 'working', statusMessage: 'step 2/3' },
      { poll: 4, status: 'completed' },
    ],
  });
  assert.match(renderTranscript(t), /^ {4}task tk: completed \(4 polls\)$/m);
  assert.equal(
    taskLine({ taskId: 'tk', status: 'working', statusMessage: '3/5', polls: 1, changes: [] }),
    'task tk: working, 3/5 (1 poll)',
  );

  const many = buildTranscript(
    's/turn-1',
    taskHistory(
      Array.from({ length: MAX_TASK_CHANGES + 20 }, (_, i) => ({
        status: 'working' as const,
        statusMessage: `step ${i}`,
      })),
    ),
  );
  assert.equal(many.calls[0]!.task!.changes.length, MAX_TASK_CHANGES);
  assert.equal(many.calls[0]!.task!.changes.at(-1)!.statusMessage, `step ${MAX_TASK_CHANGES + 19}`);
});

test('a task the turn lost track of is an unknown result that names the task, never a plain transport error', () => {
  const outcome = lostTrackOutcome(
    'mcp__s__job',
    { taskId: 't9' },
    'poll task of mcp__s__job failed 5 times: connection refused',
  );
  assert.equal(outcome.status, 'error');
  assert.equal(outcome.errorKind, 'unknown_result');
  assert.match(
    outcome.errorMessage ?? '',
    /task t9 could not be followed \(poll task of mcp__s__job failed 5 times: connection refused\)/,
  );
  assert.match(outcome.errorMessage ?? '', /may have had an effect: check before calling again/);
});

void test('transcript: the questions of a task: where taskInput left the task counts as a poll, and a result it fetched is the outcome', () => {
  const answered = buildTranscript(
    's/turn-1',
    taskHistory([
      { status: 'input_required', statusMessage: 'which one?' },
      [ActivityName.taskInput, { status: 'working', statusMessage: 'going on with b' }],
      { status: 'completed' },
      [ActivityName.taskResult, { status: 'ok', content: [{ type: 'text', text: 'done' }], isError: false }],
    ]),
  );
  const task = answered.calls[0]!.task!;
  assert.equal(task.polls, 3);
  assert.deepEqual(
    task.changes.map((c) => [c.poll, c.status, c.statusMessage]),
    [
      [0, 'working', undefined],
      [1, 'input_required', 'which one?'],
      [2, 'working', 'going on with b'],
      [3, 'completed', undefined],
    ],
  );
  assert.equal(answered.calls[0]!.outcome?.status, 'ok');

  const ended = buildTranscript(
    's/turn-1',
    taskHistory([
      { status: 'input_required' },
      [
        ActivityName.taskInput,
        { status: 'ok', content: [{ type: 'text', text: 'ended while asked' }], isError: false },
      ],
    ]),
  );
  assert.equal(ended.calls[0]!.task!.polls, 1);
  assert.deepEqual(ended.calls[0]!.outcome?.content, [{ type: 'text', text: 'ended while asked' }]);
});

const related: [title: string, params: unknown, expected: string | undefined][] = [
  [
    'a question of a task',
    { message: 'm', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 'tk1' } } },
    'tk1',
  ],
  ['a question of no task', { message: 'm' }, undefined],
  ['other metadata only', { _meta: { progressToken: 3 } }, undefined],
  ['a task ID that is not a string', { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 7 } } }, undefined],
  ['no params', undefined, undefined],
];
for (const [title, params, expected] of related) {
  void test(`related task of a server request: ${title}`, () => assert.equal(relatedTaskId(params), expected));
}

void test('a task whose question got no answer in time: unknown result naming the task and the limit', () => {
  const outcome = unansweredOutcome('mcp__s__job', { taskId: 't4' }, 600_000);
  assert.deepEqual([outcome.status, outcome.errorKind], ['error', 'unknown_result']);
  assert.equal(
    outcome.errorMessage,
    'mcp__s__job: task t4 asked for input and got no answer within 600 s (DMCP_LEGACY_INPUT_TIMEOUT); it was cancelled if the server still knew it, and it may have had an effect: check before calling again',
  );
});

void test("a 2026-07-28 task's unanswered question names the input limit; one no person can answer is a bad request that says the task was cancelled", () => {
  const outcome = unansweredOutcome('mcp__s__job', { taskId: 't5' }, 86_400_000, 'DMCP_INPUT_TIMEOUT');
  assert.equal(outcome.errorKind, 'unknown_result');
  assert.match(
    outcome.errorMessage ?? '',
    /^mcp__s__job: task t5 asked for input and got no answer within 86400 s \(DMCP_INPUT_TIMEOUT\); it was cancelled/,
  );
  const refused = refusedInputOutcome(
    'mcp__s__job',
    { taskId: 't6' },
    'durable-mcp does not answer sampling/createMessage',
  );
  assert.deepEqual([refused.status, refused.errorKind], ['error', 'bad_request']);
  assert.equal(
    refused.errorMessage,
    'mcp__s__job: task t6 asked for input that cannot be given (durable-mcp does not answer sampling/createMessage); the task was cancelled, and it may have had an effect',
  );
});

void test("transcript: a 2026-07-28 task's questions come with its polls, one round per new key, and the answers sent with updateTask say how each was answered", () => {
  const ask = (key: string, message: string) => ({
    key,
    kind: 'form' as const,
    message,
    requestedSchema: { type: 'object', properties: { [key]: { type: 'string' } } },
  });
  const t = buildTranscript(
    's/turn-1',
    taskHistory([
      { status: 'input_required', statusMessage: 'Which colour?', inputRequests: [ask('colour', 'Which colour?')] },
      [
        ActivityName.updateTask,
        null,
        { inputResponses: { colour: { action: 'accept', content: { colour: 'vermilion' } } } },
      ],
      // Not gone on yet: the same key again is no new question.
      { status: 'input_required', statusMessage: 'Which colour?', inputRequests: [ask('colour', 'Which colour?')] },
      { status: 'input_required', statusMessage: 'Which size?', inputRequests: [ask('size', 'Which size?')] },
      { status: 'completed' },
    ]),
  );
  const call = t.calls[0]!;
  assert.deepEqual(
    call.inputs?.map((i) => [i.round, i.key, i.message, i.action]),
    [
      [1, 'colour', 'Which colour?', 'accept'],
      [2, 'size', 'Which size?', undefined],
    ],
  );
  assert.equal(call.task?.polls, 4, 'updateTask is no poll');
  const rendered = renderTranscript(t);
  assert.match(rendered, /asked \(round 1, form\): Which colour\? -> accept/);
  assert.match(rendered, /asked \(round 2, form\): Which size\? -> not answered yet/);
  assert.doesNotMatch(rendered, /vermilion/, 'never the content of an answer');
  // The event stream sends each question once, under the request ID the turn gave it.
  const asked = newEvents(t, {
    status: true,
    started: new Set(),
    asked: new Set(),
    finished: new Set(),
    ended: true,
  }).filter((e) => e.event === 'call.input_required');
  assert.deepEqual(
    asked.map((e) => [e.key, e.data.requestId, e.data.message]),
    [
      ['s/turn-1|c1:1:colour|input_required', 'c1:1:colour', 'Which colour?'],
      ['s/turn-1|c1:2:size|input_required', 'c1:2:size', 'Which size?'],
    ],
  );
});

void test('taskInput options: held at most the legacy limit (plus margins), heartbeating, run once', () => {
  const options = taskInputOptions(
    'q',
    { name: 'mcp__s__job' },
    { legacyInputTimeoutMs: 60_000, heartbeatTimeoutMs: 10_000, scheduleToStartMs: 5000 },
  );
  assert.equal(options.startToCloseTimeout, 60_000 + 30_000 + TASK_REQUEST_TIMEOUT_MS);
  assert.deepEqual(
    [options.heartbeatTimeout, options.scheduleToStartTimeout, options.retry?.maximumAttempts, options.taskQueue],
    [10_000, 5000, 1, 'q'],
  );
});

const progresses: [
  title: string,
  result: Parameters<typeof taskProgress>[0],
  taskId: string | undefined,
  expected: Record<string, unknown> | undefined,
][] = [
  [
    'a poll with a status message',
    { status: 'working', statusMessage: 'step 3/5' },
    'tk',
    { taskId: 'tk', status: 'working', statusMessage: 'step 3/5', message: 'task tk: working, step 3/5' },
  ],
  [
    'a poll without one',
    { status: 'input_required' },
    'tk',
    { taskId: 'tk', status: 'input_required', message: 'task tk: input_required' },
  ],
  [
    'the created task names itself',
    { kind: 'task', taskId: 'new', status: 'working' },
    undefined,
    { taskId: 'new', status: 'working', message: 'task new: working' },
  ],
  [
    'an outcome is no progress',
    { status: 'ok', content: [], isError: false, startedAt: '2026-01-01T00:00:00.000Z', durationMs: 1, attempts: 1 },
    'tk',
    undefined,
  ],
  ['a poll of no known task', { status: 'working' }, undefined, undefined],
  ['nothing', undefined, 'tk', undefined],
];
for (const [title, result, taskId, expected] of progresses) {
  void test(`a task call's progress: ${title}`, () => assert.deepEqual(taskProgress(result, taskId), expected));
}
