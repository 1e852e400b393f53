import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ActivityFailure,
  ApplicationFailure,
  DefaultFailureConverter,
  RetryState,
  TimeoutFailure,
  TimeoutType,
  defaultPayloadConverter,
} from '@temporalio/common';
import { ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { toFailure } from '../../activities/index.js';
import { FailureType, RefusalType, type CallOutcome } from '../../contract/index.js';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { applicationFailureOf, failureTypeOf } from '../../client/failures.js';
import {
  errorOutcome,
  failureOutcome,
  isFailureType,
  isHeartbeatTimeout,
  isScheduleToStartTimeout,
  isTaskOnlyRefusal,
  messageOf,
  refusal,
} from '../../workflows/failures.js';
import { TASKS_EXTENSION } from '../../mcp/taskRequests.js';

/** What the workflow catches when a callTool activity fails: Temporal's wrapper around the cause. */
function activityFailure(cause: Error): ActivityFailure {
  return new ActivityFailure(
    'Activity task failed',
    'callTool',
    '1',
    RetryState.MAXIMUM_ATTEMPTS_REACHED,
    'worker@host',
    cause,
  );
}

function app(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message });
}

function timeout(type: TimeoutType): TimeoutFailure {
  return new TimeoutFailure(`activity ${type} timeout`, undefined, type);
}

/** A failure as the workflow reads it back from history, after the activity threw it on the worker. */
function throughHistory(err: Error): Error {
  const converter = new DefaultFailureConverter();
  return converter.failureToError(converter.errorToFailure(err, defaultPayloadConverter), defaultPayloadConverter);
}

type Case = [
  name: string,
  err: unknown,
  safeToRetry: boolean,
  kind: NonNullable<CallOutcome['errorKind']>,
  fragments: RegExp[],
];

describe('failureOutcome: a failed call as the model reads it', () => {
  const mayHaveHadEffect = /may have had an effect/;
  const cases: Case[] = [
    [
      'bad request, read-only tool',
      activityFailure(app(FailureType.BadRequest, 'mcp__s__t: Invalid params')),
      true,
      'bad_request',
      [/^mcp__s__t: Invalid params$/],
    ],
    [
      'bad request, side-effecting tool: never "unknown", the call was refused',
      activityFailure(app(FailureType.BadRequest, 'mcp__s__t: Invalid params')),
      false,
      'bad_request',
      [/Invalid params/],
    ],
    [
      'server unavailable, read-only tool',
      activityFailure(app(FailureType.ServerUnavailable, 'server "s" is not running')),
      true,
      'transport',
      [/not running/, /\(the call did not run\)$/],
    ],
    [
      'server unavailable, side-effecting tool: it never started',
      activityFailure(app(FailureType.ServerUnavailable, 'server "s" is not running')),
      false,
      'transport',
      [/\(the call did not run\)$/],
    ],
    [
      'MCP request timeout, read-only tool',
      activityFailure(app(FailureType.ToolTimeout, 'mcp__s__t: MCP error -32001: Request timed out')),
      true,
      'timeout',
      [/^the call timed out/, /Request timed out/],
    ],
    [
      'MCP request timeout, side-effecting tool',
      activityFailure(app(FailureType.ToolTimeout, 'mcp__s__t: MCP error -32001: Request timed out')),
      false,
      'unknown_result',
      [/^the result is unknown: the call timed out/, mayHaveHadEffect],
    ],
    [
      'lost connection, idempotent tool',
      activityFailure(app(FailureType.Transport, 'mcp__s__t (server "s"): Connection closed')),
      true,
      'transport',
      [/^mcp__s__t \(server "s"\): Connection closed$/],
    ],
    [
      'lost connection, side-effecting tool',
      activityFailure(app(FailureType.Transport, 'mcp__s__t (server "s"): Connection closed')),
      false,
      'unknown_result',
      [/^the result is unknown: mcp__s__t/, /Connection closed/, mayHaveHadEffect],
    ],
    [
      'start-to-close timeout, read-only tool',
      activityFailure(timeout(TimeoutType.START_TO_CLOSE)),
      true,
      'timeout',
      [/^the call timed out \(START_TO_CLOSE\)$/],
    ],
    [
      'heartbeat timeout (worker lost), side-effecting tool',
      activityFailure(timeout(TimeoutType.HEARTBEAT)),
      false,
      'unknown_result',
      [/timed out/, /HEARTBEAT/, mayHaveHadEffect],
    ],
    [
      'second schedule-to-start timeout, read-only tool: it never started',
      activityFailure(timeout(TimeoutType.SCHEDULE_TO_START)),
      true,
      'transport',
      [/\(the call did not run\)$/],
    ],
    [
      'second schedule-to-start timeout, side-effecting tool: never "unknown"',
      activityFailure(timeout(TimeoutType.SCHEDULE_TO_START)),
      false,
      'transport',
      [/no worker picked the call up/, /\(the call did not run\)$/],
    ],
    [
      'an error of unknown type, read-only tool',
      activityFailure(app('SomethingElse', 'boom')),
      true,
      'transport',
      [/^boom$/],
    ],
    [
      'not an activity failure at all',
      new Error('workflow-side trouble'),
      true,
      'transport',
      [/^workflow-side trouble$/],
    ],
    [
      'not an activity failure, side-effecting tool',
      new Error('workflow-side trouble'),
      false,
      'unknown_result',
      [/workflow-side trouble/, mayHaveHadEffect],
    ],
    ['a thrown string', 'just text', true, 'transport', [/^just text$/]],
    [
      'the failure as read back from history',
      throughHistory(activityFailure(app(FailureType.ToolTimeout, 'mcp__s__t: Request timed out'))),
      true,
      'timeout',
      [/Request timed out/],
    ],
  ];
  for (const [name, err, safe, kind, fragments] of cases) {
    test(name, () => {
      const outcome = failureOutcome(err, safe);
      assert.equal(outcome.status, 'error');
      assert.equal(outcome.isError, true);
      assert.deepEqual(outcome.content, []);
      assert.equal(outcome.errorKind, kind);
      for (const fragment of fragments) assert.match(outcome.errorMessage ?? '', fragment);
    });
  }
});

describe('the activity and the workflow agree on an MCP request timeout', () => {
  const mcpTimeout = new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out');
  const failure = toFailure(mcpTimeout, { name: 'mcp__s__read', server: 's' }, (t) => t);
  test('the activity classifies it as ToolTimeout, retryable', () => {
    assert.equal(failure.type, FailureType.ToolTimeout);
    assert.equal(failure.nonRetryable, false);
  });
  const cases: Array<[string, boolean, NonNullable<CallOutcome['errorKind']>]> = [
    ['read-only or idempotent tool: a timeout', true, 'timeout'],
    ['side-effecting tool: the result is unknown', false, 'unknown_result'],
  ];
  for (const [name, safe, kind] of cases) {
    test(name, () => {
      const outcome = failureOutcome(throughHistory(activityFailure(failure)), safe);
      assert.equal(outcome.errorKind, kind);
      assert.match(outcome.errorMessage ?? '', /timed out/);
    });
  }
});

describe('failure predicates', () => {
  const cases: Array<[string, unknown, { scheduleToStart: boolean; serverUnavailable: boolean; message: string }]> = [
    [
      'schedule-to-start timeout',
      activityFailure(timeout(TimeoutType.SCHEDULE_TO_START)),
      { scheduleToStart: true, serverUnavailable: false, message: 'activity SCHEDULE_TO_START timeout' },
    ],
    [
      'start-to-close timeout',
      activityFailure(timeout(TimeoutType.START_TO_CLOSE)),
      { scheduleToStart: false, serverUnavailable: false, message: 'activity START_TO_CLOSE timeout' },
    ],
    [
      'server unavailable',
      activityFailure(app(FailureType.ServerUnavailable, 'gone')),
      { scheduleToStart: false, serverUnavailable: true, message: 'gone' },
    ],
    [
      'server unavailable read back from history',
      throughHistory(activityFailure(app(FailureType.ServerUnavailable, 'gone'))),
      { scheduleToStart: false, serverUnavailable: true, message: 'gone' },
    ],
    [
      'a bare ApplicationFailure is not an activity failure',
      app(FailureType.ServerUnavailable, 'gone'),
      { scheduleToStart: false, serverUnavailable: false, message: 'gone' },
    ],
    [
      'a bare TimeoutFailure is not an activity failure',
      timeout(TimeoutType.SCHEDULE_TO_START),
      { scheduleToStart: false, serverUnavailable: false, message: 'activity SCHEDULE_TO_START timeout' },
    ],
    [
      'an activity failure without a cause',
      new ActivityFailure('Activity task failed', 'reconcileServers', '1', RetryState.NON_RETRYABLE_FAILURE, undefined),
      { scheduleToStart: false, serverUnavailable: false, message: 'Activity task failed' },
    ],
    ['a thrown string', 'text', { scheduleToStart: false, serverUnavailable: false, message: 'text' }],
  ];
  for (const [name, err, expected] of cases) {
    test(name, () => {
      assert.equal(isHeartbeatTimeout(err), false, 'isHeartbeatTimeout');
      assert.equal(isScheduleToStartTimeout(err), expected.scheduleToStart, 'isScheduleToStartTimeout');
      assert.equal(isFailureType(err, FailureType.ServerUnavailable), expected.serverUnavailable, 'isFailureType');
      assert.equal(messageOf(err), expected.message, 'messageOf');
    });
  }
});

describe('isHeartbeatTimeout: the worker running the call is presumed gone', () => {
  test('a heartbeat timeout', () =>
    assert.equal(isHeartbeatTimeout(activityFailure(timeout(TimeoutType.HEARTBEAT))), true));
  test('read back from history', () =>
    assert.equal(isHeartbeatTimeout(throughHistory(activityFailure(timeout(TimeoutType.HEARTBEAT)))), true));
  test('a bare TimeoutFailure is not an activity failure', () =>
    assert.equal(isHeartbeatTimeout(timeout(TimeoutType.HEARTBEAT)), false));
  for (const type of [TimeoutType.START_TO_CLOSE, TimeoutType.SCHEDULE_TO_START, TimeoutType.SCHEDULE_TO_CLOSE]) {
    test(`not ${type}`, () => assert.equal(isHeartbeatTimeout(activityFailure(timeout(type))), false));
  }
});

test('errorOutcome: an error that never reached a tool has no start, duration or attempts', () => {
  assert.deepEqual(errorOutcome('cancelled', 'stopped'), {
    status: 'error',
    content: [],
    isError: true,
    errorKind: 'cancelled',
    errorMessage: 'stopped',
    startedAt: '',
    durationMs: 0,
    attempts: 0,
  });
  assert.equal(errorOutcome('transport', 'x', 12, 3).attempts, 3);
});

describe('refusals are typed, and one cause-walker reads the type wherever Temporal wrapped it', () => {
  const refused = refusal(RefusalType.turnEnded, 'the turn has ended');
  // Through the failure converter, as a client receives it: the workflow's error arrives as a cause.
  const converter = new DefaultFailureConverter();
  const received = converter.failureToError(
    converter.errorToFailure(refused, defaultPayloadConverter),
    defaultPayloadConverter,
  );
  const cases: [string, unknown, string | undefined][] = [
    ['the refusal itself', refused, RefusalType.turnEnded],
    ['after a round trip through the failure converter', received, RefusalType.turnEnded],
    [
      'as the cause of an Update failure',
      new WorkflowUpdateFailedError('update failed', received),
      RefusalType.turnEnded,
    ],
    [
      'two wrappers deep',
      new Error('outer', { cause: new WorkflowUpdateFailedError('update failed', received) }),
      RefusalType.turnEnded,
    ],
    ['an activity failure', activityFailure(app(FailureType.BadRequest, 'bad')), FailureType.BadRequest],
    ['a plain error', new Error('the turn has ended'), undefined],
    ['not an error', 'the turn has ended', undefined],
  ];
  for (const [name, err, type] of cases) {
    test(name, () => assert.equal(failureTypeOf(err), type));
  }
  test('a refusal is never retried', () => {
    assert.equal(refused.nonRetryable, true);
    assert.equal(applicationFailureOf(received)?.nonRetryable, true);
  });
  test('a cycle of causes ends the walk', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    assert.equal(failureTypeOf(a), undefined);
  });
});

describe('a call refused because its server runs the tool only as a task', () => {
  const refused = toFailure(
    new ProtocolError(ProtocolErrorCode.MissingRequiredClientCapability, 'Missing required client capability', {
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    }),
    { name: 'mcp__s__job', server: 's' },
    (t) => t,
  );
  test('the activity keeps the type BadRequest, marked taskOnly', () => {
    assert.equal(refused.type, FailureType.BadRequest);
    assert.equal(refused.nonRetryable, true);
    assert.deepEqual(refused.details, [{ taskOnly: true }]);
  });
  const marked = (details: unknown[]) =>
    ApplicationFailure.create({ type: FailureType.BadRequest, message: 'refused', details });
  const cases: Array<[string, unknown, boolean]> = [
    ["the activity's refusal, through history", throughHistory(activityFailure(refused)), true],
    ['the refusal from a local activity, unwrapped', refused, true],
    ['a BadRequest without details', activityFailure(app(FailureType.BadRequest, 'invalid params')), false],
    ['a BadRequest with other details', activityFailure(marked([{ field: 'x' }])), false],
    ['a BadRequest marked with a string', activityFailure(marked(['taskOnly'])), false],
    ['a BadRequest with null details', activityFailure(marked([null])), false],
    [
      'another type marked taskOnly',
      activityFailure(
        ApplicationFailure.create({ type: FailureType.Transport, message: 'x', details: [{ taskOnly: true }] }),
      ),
      false,
    ],
    [
      'any other -32021 (sampling)',
      throughHistory(
        activityFailure(
          toFailure(
            new ProtocolError(ProtocolErrorCode.MissingRequiredClientCapability, 'Missing', {
              requiredCapabilities: { sampling: {} },
            }),
            { name: 'n', server: 's' },
            (t) => t,
          ),
        ),
      ),
      false,
    ],
    ['a timeout', activityFailure(timeout(TimeoutType.START_TO_CLOSE)), false],
    ['not an error', 'refused', false],
  ];
  for (const [name, err, expected] of cases)
    test(`isTaskOnlyRefusal: ${name}`, () => assert.equal(isTaskOnlyRefusal(err), expected));
  test('the refusal still reads as a bad request to workflow code that ignores the mark', () => {
    assert.equal(failureOutcome(throughHistory(activityFailure(refused)), false).errorKind, 'bad_request');
  });
});
