import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { CallDeadline, LegacyInputWaits, elicitResult } from '../../mcp/legacyInputs.js';

describe('LegacyInputWaits', () => {
  test('an answer reaches only the wait of the turn it is delivered for', async () => {
    const waits = new LegacyInputWaits();
    const mine = waits.wait('session/turn-1', 'c1:1:elicitation', 60_000, new AbortController().signal);
    const theirs = waits.wait('session/turn-2', 'c1:1:elicitation', 60_000, new AbortController().signal);
    assert.equal(
      waits.deliver('session/turn-3', 'c1:1:elicitation', { action: 'accept', content: { name: 'x' } }),
      'not_waiting',
    );
    assert.equal(waits.deliver('session/turn-2', 'c1:1:elicitation', { action: 'decline' }), 'delivered');
    assert.deepEqual(await theirs, { action: 'decline' });
    assert.equal(waits.size, 1, "the other turn's wait is untouched");
    assert.equal(
      waits.deliver('session/turn-1', 'c1:1:elicitation', { action: 'accept', content: { name: 'y' } }),
      'delivered',
    );
    assert.deepEqual(await mine, { action: 'accept', content: { name: 'y' } });
    assert.equal(
      waits.deliver('session/turn-1', 'c1:1:elicitation', { action: 'cancel' }),
      'not_waiting',
      'answered once',
    );
    assert.equal(waits.size, 0);
  });

  test('a withdrawn question (aborted signal) ends its wait with cancel', async () => {
    const waits = new LegacyInputWaits();
    const abort = new AbortController();
    const waiting = waits.wait('t', 'r', 60_000, abort.signal);
    abort.abort();
    assert.deepEqual(await waiting, { action: 'cancel' });
    assert.equal(waits.deliver('t', 'r', { action: 'decline' }), 'not_waiting');
    assert.deepEqual(await waits.wait('t', 'r2', 60_000, abort.signal), { action: 'cancel' }, 'already aborted');
  });
});

describe('CallDeadline', () => {
  test("expires with the SDK's own timeout error", async () => {
    const deadline = new CallDeadline(1);
    await new Promise<void>((resolve) => deadline.signal.addEventListener('abort', () => resolve(), { once: true }));
    const reason = deadline.signal.reason as SdkError;
    assert.ok(reason instanceof SdkError);
    assert.equal(reason.code, SdkErrorCode.RequestTimeout);
  });

  test('stands still while paused', () => {
    const deadline = new CallDeadline(1);
    deadline.pause();
    deadline.pause();
    deadline.resume();
    // Still paused once: no timer is armed, so nothing can fire.
    assert.equal(deadline.signal.aborted, false);
    deadline.stop();
  });
});

describe('elicitResult', () => {
  const cases: [
    Parameters<typeof elicitResult>[0]['kind'],
    Parameters<typeof elicitResult>[1],
    ReturnType<typeof elicitResult>,
  ][] = [
    ['form', { action: 'accept', content: { a: 1 } }, { action: 'accept', content: { a: 1 } }],
    ['form', { action: 'accept' }, { action: 'accept', content: {} }],
    ['url', { action: 'accept', content: { a: 1 } }, { action: 'accept' }],
    ['form', { action: 'decline' }, { action: 'decline' }],
    ['url', { action: 'cancel' }, { action: 'cancel' }],
  ];
  for (const [kind, answer, expected] of cases) {
    test(`${kind} ${answer.action}${answer.content ? ' with content' : ''}`, () =>
      assert.deepEqual(elicitResult({ kind }, answer), expected));
  }
});
