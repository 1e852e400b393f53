/** The `legacyInputAsked` validator: only a running call of the turn may report a readable question. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CancellationScope } from '@temporalio/workflow';
import { ApplicationFailure } from '@temporalio/common';
import { MAX_INPUT_ROUNDS, RefusalType, type ToolInfo } from '../../contract/index.js';
import { checkLegacyReport } from '../../workflows/legacyInputs.js';
import { TurnState } from '../../workflows/turnState.js';

const TOOL = 'mcp__everything__trigger-elicitation-request';

function state(): TurnState {
  const s = new TurnState();
  s.tools.set(TOOL, { name: TOOL } as ToolInfo);
  const scope = {} as CancellationScope;
  s.running.set('c1', scope);
  s.askingAttempts.set('c1', { scope, queue: 'q@worker', tool: TOOL });
  // A call in its hooks or waiting on a task runs, but no callTool activity of it could ask.
  s.running.set('h1', {} as CancellationScope);
  return s;
}

const form = {
  key: 'elicitation',
  kind: 'form',
  message: 'Name?',
  requestedSchema: { type: 'object', properties: {} },
};
const good = { callId: 'c1', tool: TOOL, request: form, waitedMs: 0 };

const cases: [string, unknown, RegExp | undefined, ((s: TurnState) => void)?][] = [
  ['a form question of a running call', good, undefined],
  [
    'a URL question',
    { ...good, request: { key: 'elicitation', kind: 'url', message: 'Open it', url: 'https://example.invalid/' } },
    undefined,
  ],
  ['not an object', 'hi', /not an object/],
  ['a call that is not running', { ...good, callId: 'c2' }, /no call "c2" of this turn is running a callTool activity/],
  [
    'a running call that is not in a callTool activity',
    { ...good, callId: 'h1' },
    /no call "h1" of this turn is running a callTool activity/,
  ],
  [
    'another tool than the call runs',
    { ...good, tool: 'mcp__x__y' },
    /call "c1" runs mcp__everything__trigger-elicitation-request, not "mcp__x__y"/,
  ],
  ['no call ID', { ...good, callId: 7 }, /"callId" must be a string/],
  ['no waitedMs', { ...good, waitedMs: undefined }, /"waitedMs" must be a number/],
  ['an unknown kind', { ...good, request: { ...form, kind: 'sampling' } }, /"request.kind" must be one of form, url/],
  ['a message too long', { ...good, request: { ...form, message: 'x'.repeat(9000) } }, /"request.message"/],
  ['a form without a schema', { ...good, request: { ...form, requestedSchema: undefined } }, /needs "requestedSchema"/],
  [
    'a URL request without a URL',
    { ...good, request: { key: 'elicitation', kind: 'url', message: 'Open it' } },
    /needs "url"/,
  ],
  [
    'one question too many',
    good,
    new RegExp(`asked ${MAX_INPUT_ROUNDS} times already`),
    (s) => s.legacyRounds.set('c1', MAX_INPUT_ROUNDS),
  ],
];

for (const [name, report, refused, prepare] of cases) {
  test(`legacyInputAsked: ${name}`, () => {
    const s = state();
    prepare?.(s);
    if (!refused) return checkLegacyReport(s, report);
    assert.throws(
      () => checkLegacyReport(s, report),
      (err: unknown) => {
        assert.ok(err instanceof ApplicationFailure);
        assert.equal(err.type, RefusalType.inputReport);
        assert.match(err.message, refused);
        return true;
      },
    );
  });
}
