import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { buildTranscript } from '../../client/transcript.js';
import { renderTranscript } from '../../client/transcriptText.js';
import { eagerDispatch, endsBeforeTaskRenewal, withFastAttempt } from '../../workflows/sendCall.js';
import { ownerPresumedLost } from '../../workflows/placement.js';
import { errorOutcome } from '../../workflows/failures.js';
import { turnTaskTimeoutMs, type CallOutcome } from '../../contract/index.js';
import {
  DEFAULT_LIMITS,
  FAST_PATH_BOUND_MS,
  afterFastAttempt,
  callOptions,
  localCallOptions,
} from '../../workflows/activityOptions.js';

const bounds: { timeoutMs?: number; toolTimeoutMs: number; expected: number }[] = [
  { toolTimeoutMs: 60_000, expected: FAST_PATH_BOUND_MS },
  { timeoutMs: 2000, toolTimeoutMs: 60_000, expected: 2000 },
  { timeoutMs: 30_000, toolTimeoutMs: 1000, expected: FAST_PATH_BOUND_MS },
  { toolTimeoutMs: 3000, expected: 3000 },
];
for (const row of bounds) {
  void test(`a fast call with tool timeout ${row.timeoutMs ?? '-'} and turn timeout ${row.toolTimeoutMs} is bounded by ${row.expected} ms, one attempt, labelled`, () => {
    const options = localCallOptions(
      { name: 'mcp__s__t', ...(row.timeoutMs !== undefined ? { timeoutMs: row.timeoutMs } : {}) },
      { toolTimeoutMs: row.toolTimeoutMs },
    );
    assert.deepEqual(options, {
      summary: 'mcp__s__t',
      startToCloseTimeout: row.expected,
      retry: { maximumAttempts: 1 },
    });
  });
}

// The SDK completes a task a local activity holds open at 80 % of its timeout; a call that ends (its
// bound, and a second of margin) before that cannot be cancelled mid-way and needs no scope of its own.
const renewals: { timeoutMs?: number; heartbeatTimeoutMs?: number; expected: boolean }[] = [
  { expected: true },
  { heartbeatTimeoutMs: 7000, expected: true },
  { heartbeatTimeoutMs: 6000, expected: false },
  { heartbeatTimeoutMs: 6000, timeoutMs: 3800, expected: true },
  { heartbeatTimeoutMs: 6000, timeoutMs: 3801, expected: false },
  { heartbeatTimeoutMs: 1000, timeoutMs: 100, expected: true },
  { heartbeatTimeoutMs: 1000, timeoutMs: 700, expected: false },
];
for (const row of renewals) {
  void test(`a fast call with tool timeout ${row.timeoutMs ?? '-'} in a turn with heartbeat timeout ${row.heartbeatTimeoutMs ?? 'default'} ${row.expected ? 'ends' : 'may not end'} before its workflow task is renewed`, () => {
    const taskTimeoutMs = turnTaskTimeoutMs(
      row.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: row.heartbeatTimeoutMs } : undefined,
    );
    const tool = { name: 'mcp__s__t', ...(row.timeoutMs !== undefined ? { timeoutMs: row.timeoutMs } : {}) };
    assert.equal(
      endsBeforeTaskRenewal(localCallOptions(tool, { toolTimeoutMs: DEFAULT_LIMITS.toolTimeoutMs }), taskTimeoutMs),
      row.expected,
    );
  });
}

const ok: CallOutcome = { status: 'ok', content: [], isError: false, startedAt: 't', durationMs: 1, attempts: 1 };
const attempts: [string, CallOutcome, boolean, number][] = [
  ['a fast attempt that reached the tool counts', ok, true, 2],
  ['a miss does not', ok, false, 1],
  ['an error outcome keeps its own count', errorOutcome('transport', 'gone', 0, 0), true, 0],
];
for (const [name, outcome, ranTool, expected] of attempts) {
  void test(`attempts after a fallback: ${name}`, () =>
    assert.equal(withFastAttempt(outcome, ranTool).attempts, expected));
}

const retries: [string, number | undefined, boolean, number | undefined][] = [
  ['a safe call keeps 2 of its 3 attempts after a fast attempt that ran', 3, true, 2],
  ['a miss leaves all 3', 3, false, 3],
  ['one attempt stays one', 1, true, 1],
  ['no policy stays none', undefined, true, undefined],
];
for (const [name, maximumAttempts, ranTool, expected] of retries) {
  void test(`regular attempts after the fast path: ${name}`, () => {
    const options = {
      startToCloseTimeout: 1000,
      ...(maximumAttempts !== undefined ? { retry: { maximumAttempts, initialInterval: '1s' } } : {}),
    };
    const after = afterFastAttempt(options, ranTool);
    assert.equal(after.retry?.maximumAttempts, expected);
    if (after.retry) assert.equal(after.retry.initialInterval, '1s', 'the rest of the policy is kept');
  });
}

void test('the transcript reads a recorded fast-path call from its local activity marker', async () => {
  const file = fileURLToPath(new URL('../../../test/histories/interactive-turn-fast-path.json', import.meta.url));
  const history = historyFromJSON(JSON.parse(await readFile(file, 'utf8')));
  const t = buildTranscript('replay-fast-path/turn-1', history);
  const byId = Object.fromEntries(t.calls.map((c) => [c.id, c]));
  assert.deepEqual(Object.keys(byId), ['toolu_11', 'toolu_12', 'toolu_13']);
  for (const id of ['toolu_11', 'toolu_13']) {
    assert.equal(byId[id]!.summary, 'mcp__fixture__read_slow', `${id}: the marker's UI label`);
    assert.equal(byId[id]!.outcome?.status, 'ok');
    assert.deepEqual(byId[id]!.failures, []);
  }
  assert.equal(byId.toolu_12!.summary, 'mcp__fixture__echo', 'the side-effecting call, from its activity');
  assert.match(renderTranscript(t), /\[toolu_11\] mcp__fixture__read_slow \{"ms":0\}[^\n]*\n\s+read after 0 ms/);
});

const taskTimeouts: [number | undefined, number][] = [
  [undefined, 10_000],
  [1000, 2000],
  [3000, 3000],
  [10_000, 10_000],
  [60_000, 10_000],
];
for (const [heartbeatTimeoutMs, expected] of taskTimeouts) {
  void test(`a turn with heartbeat timeout ${heartbeatTimeoutMs ?? 'default'} has workflow task timeout ${expected} ms`, () => {
    assert.equal(turnTaskTimeoutMs(heartbeatTimeoutMs === undefined ? undefined : { heartbeatTimeoutMs }), expected);
  });
}

const owner = 'q@host-12-abcd0123';
const lost: [string, { turnPlacedOn: string | undefined }, string, boolean][] = [
  [
    'the turn was placed on the worker running its workflow tasks, which still holds the servers',
    { turnPlacedOn: owner },
    owner,
    true,
  ],
  ["the turn was placed on the session's previous worker", { turnPlacedOn: undefined }, owner, false],
  [
    'the turn moved since it was placed: the holder was never seen running it',
    { turnPlacedOn: owner },
    'q@host-14-00000000',
    false,
  ],
];
for (const [name, state, holder, expected] of lost) {
  void test(`a fast-path miss presumes the owner lost when ${name}: ${expected}`, () =>
    assert.equal(ownerPresumedLost(state, holder), expected));
}

void test("a call sent for eager dispatch goes to the turn's own queue, naming the holder, with the rest of its options unchanged", () => {
  const tool = { name: 'mcp__fixture__slow', annotations: {} };
  const options = callOptions('dmcp@host-1-ab', tool, DEFAULT_LIMITS, false);
  const input = {
    sessionId: 's',
    firstRunId: 'r1',
    callId: 'c',
    name: tool.name,
    server: 'fixture',
    tool: 'slow',
    arguments: { a: 1 },
    requestTimeoutMs: 59_000,
  };
  const sent = eagerDispatch({ sharedQueue: 'dmcp' }, options, input, 'dmcp@host-1-ab');
  assert.deepEqual(sent.options, { ...options, taskQueue: 'dmcp', allowEagerDispatch: true });
  assert.equal(
    sent.options.retry?.maximumAttempts,
    1,
    'a side-effecting call: one attempt, never retried on the shared queue',
  );
  assert.deepEqual(sent.input, { ...input, workerQueue: 'dmcp@host-1-ab' });
  assert.equal(options.taskQueue, 'dmcp@host-1-ab', 'the options it was given are not changed');
});
