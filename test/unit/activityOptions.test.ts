import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import {
  FailureType,
  LEGACY_INPUT_GRACE_MS,
  TURN_INPUT_FAILURE_TYPE,
  TURN_LIMIT_RANGES,
  type ToolInfo,
  type TurnLimits,
} from '../../contract/index.js';
import {
  DEFAULT_LIMITS,
  HEARTBEAT_TIMEOUT_TYPE,
  callOptions,
  isSafeToRetry,
  pinnedOptions,
  reconcileOptions,
  requestTimeoutMs,
  resolveLimits,
} from '../../workflows/activityOptions.js';
import { reconcileInput } from '../../workflows/servers.js';

function tool(extra: Partial<ToolInfo> = {}): ToolInfo {
  return { name: 'mcp__s__t', server: 's', tool: 't', description: '', inputSchema: { type: 'object' }, ...extra };
}

describe('isSafeToRetry: the server config overrides the tool annotations', () => {
  const cases: Array<[string, Partial<ToolInfo>, boolean]> = [
    ['no annotations', {}, false],
    ['readOnlyHint', { annotations: { readOnlyHint: true } }, true],
    ['idempotentHint', { annotations: { idempotentHint: true } }, true],
    ['hints false', { annotations: { readOnlyHint: false, idempotentHint: false } }, false],
    ['destructiveHint alone', { annotations: { destructiveHint: true } }, false],
    ['retry: safe without hints', { retry: 'safe' }, true],
    ['retry: safe on a destructive tool', { retry: 'safe', annotations: { destructiveHint: true } }, true],
    ['retry: never on a read-only tool', { retry: 'never', annotations: { readOnlyHint: true } }, false],
    ['retry: never on an idempotent tool', { retry: 'never', annotations: { idempotentHint: true } }, false],
    ['retry: never without hints', { retry: 'never' }, false],
  ];
  for (const [name, extra, expected] of cases) {
    test(name, () => assert.equal(isSafeToRetry(tool(extra)), expected));
  }
});

describe('callOptions', () => {
  const cases: Array<[string, Partial<ToolInfo>, number]> = [
    ['a side-effecting call runs once', {}, 1],
    ['a read-only call is retried', { annotations: { readOnlyHint: true } }, 3],
    ['retry: never runs once', { retry: 'never', annotations: { readOnlyHint: true } }, 1],
    ['retry: safe is retried', { retry: 'safe' }, 3],
  ];
  for (const [name, extra, attempts] of cases) {
    test(name, () => assert.equal(callOptions('q', tool(extra), DEFAULT_LIMITS).retry?.maximumAttempts, attempts));
  }

  test('timeouts come from the limits, the server toolTimeout wins for start-to-close, stretched by the wait for a person', () => {
    const limits = resolveLimits({
      toolTimeoutMs: 5000,
      heartbeatTimeoutMs: 2000,
      scheduleToStartMs: 3000,
      legacyInputTimeoutMs: 60_000,
    });
    assert.deepEqual(callOptions('worker-1', tool(), limits), {
      taskQueue: 'worker-1',
      summary: 'mcp__s__t',
      startToCloseTimeout: 5000 + 60_000 + LEGACY_INPUT_GRACE_MS,
      heartbeatTimeout: 2000,
      scheduleToStartTimeout: 3000,
      retry: {
        maximumAttempts: 1,
        initialInterval: '1s',
        backoffCoefficient: 2,
        nonRetryableErrorTypes: [FailureType.BadRequest, FailureType.ServerUnavailable, HEARTBEAT_TIMEOUT_TYPE],
      },
    });
    assert.equal(
      callOptions('worker-1', tool({ timeoutMs: 120_000 }), limits).startToCloseTimeout,
      120_000 + 60_000 + LEGACY_INPUT_GRACE_MS,
    );
    assert.equal(
      callOptions('worker-1', tool(), resolveLimits({ toolTimeoutMs: 5000 })).startToCloseTimeout,
      5000 + 10 * 60_000 + LEGACY_INPUT_GRACE_MS,
    );
    // A server known to speak 2026-07-28 asks between attempts, never during one.
    assert.equal(callOptions('worker-1', tool(), limits, false).startToCloseTimeout, 5000);
  });

  test('failing over on a lost worker: Temporal does not retry a heartbeat timeout on the pinned queue', () => {
    for (const extra of [{}, { annotations: { readOnlyHint: true } }] as Partial<ToolInfo>[]) {
      const options = callOptions('worker-1', tool(extra), DEFAULT_LIMITS);
      assert.deepEqual(options.retry?.nonRetryableErrorTypes, [
        FailureType.BadRequest,
        FailureType.ServerUnavailable,
        HEARTBEAT_TIMEOUT_TYPE,
      ]);
    }
    // The name Temporal's retry policy gives a heartbeat timeout: its prefix and the timeout type.
    assert.equal(HEARTBEAT_TIMEOUT_TYPE, 'TemporalTimeout:Heartbeat');
  });

  test('the MCP request times out a second before the activity, never under a second', () => {
    assert.equal(requestTimeoutMs(tool(), DEFAULT_LIMITS), 59_000);
    assert.equal(requestTimeoutMs(tool({ timeoutMs: 10_000 }), DEFAULT_LIMITS), 9000);
    assert.equal(requestTimeoutMs(tool({ timeoutMs: 500 }), DEFAULT_LIMITS), 1000);
  });
});

describe('reconcile and pinned options', () => {
  test('reconcile on the shared queue sets no schedule-to-start', () => {
    assert.deepEqual(reconcileOptions('shared'), {
      taskQueue: 'shared',
      startToCloseTimeout: '2m',
      heartbeatTimeout: '10s',
      retry: { maximumAttempts: 3, initialInterval: '1s', nonRetryableErrorTypes: [FailureType.Config] },
    });
  });
  test('reconcile on a preferred queue gives up on a gone worker', () => {
    assert.equal(reconcileOptions('w', '5s').scheduleToStartTimeout, '5s');
  });
  test('pinned activities use the turn schedule-to-start', () => {
    assert.equal(pinnedOptions('w', resolveLimits({ scheduleToStartMs: 4000 })).scheduleToStartTimeout, 4000);
  });
});

describe('reconcileInput: an interactive turn asks the worker to keep its servers for its idle limit', () => {
  const refs = { workspace: '/w', mcpConfigFiles: [], inlineSpecs: [] };
  test('interactive turn', () => {
    assert.deepEqual(
      reconcileInput({ input: { sessionId: 's', refs }, limits: resolveLimits({ idleMs: 90_000 }), firstRunId: 'r1' }),
      { sessionId: 's', firstRunId: 'r1', refs, turnIdleMs: 90_000 },
    );
  });
  test('interactive turn, default idle limit', () => {
    assert.equal(
      reconcileInput({ input: { sessionId: 's', refs }, limits: resolveLimits(undefined), firstRunId: 'r1' })
        .turnIdleMs,
      DEFAULT_LIMITS.idleMs,
    );
  });
  test('batch turn: no hold', () => {
    assert.deepEqual(
      reconcileInput({ input: { sessionId: 's', refs, batch: [[]] }, limits: DEFAULT_LIMITS, firstRunId: 'r1' }),
      { sessionId: 's', firstRunId: 'r1', refs },
    );
  });
});

describe('resolveLimits: a limit out of range is refused, naming the field', () => {
  test('defaults fill in what is not given; limits at the ends of their ranges are used', () => {
    assert.deepEqual(resolveLimits(undefined), DEFAULT_LIMITS);
    assert.deepEqual(resolveLimits({}), DEFAULT_LIMITS);
    for (const [field, { min, max }] of Object.entries(TURN_LIMIT_RANGES)) {
      assert.equal(resolveLimits({ [field]: min })[field as keyof TurnLimits], min, field);
      assert.equal(resolveLimits({ [field]: max })[field as keyof TurnLimits], max, field);
    }
  });

  const refused: Array<[string, unknown]> = [];
  for (const [field, { min, max }] of Object.entries(TURN_LIMIT_RANGES)) {
    refused.push(
      [field, { [field]: min - 1 }],
      [field, { [field]: max + 1 }],
      [field, { [field]: min + 0.5 }],
      [field, { [field]: String(min) }],
      [field, { [field]: null }],
    );
  }
  for (const [field, limits] of refused) {
    test(`${JSON.stringify(limits)} is refused`, () => {
      assert.throws(
        () => resolveLimits(limits as TurnLimits),
        (err: unknown) => {
          assert.ok(err instanceof ApplicationFailure);
          assert.equal(err.type, TURN_INPUT_FAILURE_TYPE);
          assert.equal(err.nonRetryable, true);
          assert.match(err.message, new RegExp(`limits\\.${field} `));
          assert.deepEqual(
            err.details,
            [{ field: `limits.${field}` }],
            'the field travels as data, for callers that point at it',
          );
          return true;
        },
      );
    });
  }

  test('a heartbeat timeout under a second is refused, saying what is allowed', () => {
    assert.throws(
      () => resolveLimits({ heartbeatTimeoutMs: 999 }),
      /limits\.heartbeatTimeoutMs is 999; it must be a whole number from 1000 to 3600000/,
    );
  });
});
