/**
 * `ask` means ask: a tool under a `permissions.ask` rule, or a PreToolUse hook that asks, holds its
 * call as a question to a person on a real worker. Nothing runs before an approval; a denial, no
 * answer within the input timeout, or an answer to another call's question never lets it run.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { TurnEvent } from '../../client/turnEvents.js';
import { randomBytes } from 'node:crypto';
import { unattendedAnswer } from '../../contract/index.js';
import {
  fixtureServer,
  readLines,
  startHarness,
  tempDir,
  waitUntil,
  writeConfigDir,
  type Harness,
} from '../support/harness.js';
import { causeMessages, textOf } from '../support/content.js';

const hookScript = fileURLToPath(new URL('../../../test/fixtures/hooks/hook.sh', import.meta.url));

describe('approvals on a real worker', () => {
  let h: Harness;
  let configDir: string;
  let fixtureLog: string;
  const session = (name: string) => `approve-${name}-${randomBytes(4).toString('hex')}`;
  const settings = (value: unknown) => writeFile(join(configDir, 'settings.json'), JSON.stringify(value, null, 2));
  const ran = async (text: string) =>
    existsSync(fixtureLog) ? (await readLines(fixtureLog)).filter((l) => l.includes(JSON.stringify(text))).length : 0;

  before(async () => {
    const root = await tempDir();
    configDir = join(root, 'config');
    fixtureLog = join(root, 'executions.log');
    const config = await writeConfigDir(configDir, {
      s: { command: process.execPath, args: [fixtureServer], env: { FIXTURE_LOG: fixtureLog } },
    });
    h = await startHarness('approvals', config);
  });
  after(async () => {
    await h?.stop();
  });

  test('a permissions.ask tool waits for a person: approve runs it once, deny does not run it and the model reads why', async () => {
    await settings({ permissions: { ask: ['mcp__s__echo'] } });
    // Bounded, so a failed assertion never leaves the turn waiting a day for an answer.
    const turn = await h.client.startTurn({ sessionId: session('rule'), limits: { inputTimeoutMs: 20_000 } });
    try {
      assert.match(
        turn.tools.find((t) => t.name === 'mcp__s__echo')?.askedBy ?? '',
        /rule "mcp__s__echo" \(.*settings\.json:\d+, ask\)/,
      );
      const approved = turn.callTool({ id: 'c1', name: 'mcp__s__echo', arguments: { text: 'approved call' } });
      await waitUntil('the approval question', async () => (await turn.pendingInputs()).length === 1);
      const [question] = await turn.pendingInputs();
      assert.equal(question!.callId, 'c1');
      assert.ok(question!.approval, 'marked as an approval');
      assert.match(question!.requestId, /^c1:0:approval-[0-9a-f]{16}$/);
      assert.match(question!.message, /May mcp__s__echo run with \{"text":"approved call"\}\?/);
      assert.equal(await ran('approved call'), 0, 'nothing runs before the approval');
      // A forged answer: the question of another call, or of other arguments, is not open.
      await assert.rejects(
        turn.answerInput(question!.requestId.replace('c1:', 'c9:'), {
          action: 'accept',
          content: { decision: 'approve' },
        }),
        (err) => /no open input request/.test(causeMessages(err)),
      );
      await assert.rejects(
        turn.answerInput(question!.requestId.replace(/[0-9a-f]{16}$/, '0'.repeat(16)), {
          action: 'accept',
          content: { decision: 'approve' },
        }),
        (err) => /no open input request/.test(causeMessages(err)),
      );
      await assert.rejects(
        turn.answerInput(question!.requestId, { action: 'accept', content: { decision: 'maybe' } }),
        (err) => /decision/.test(causeMessages(err)),
      );
      await turn.answerInput(question!.requestId, { action: 'accept', content: { decision: 'approve' } });
      const outcome = await approved;
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.equal(textOf(outcome.content[0]), 'approved call');
      assert.equal(await ran('approved call'), 1);

      const denied = turn.callTool({ id: 'c2', name: 'mcp__s__echo', arguments: { text: 'denied call' } });
      await waitUntil('the second question', async () => (await turn.pendingInputs()).length === 1);
      const [second] = await turn.pendingInputs();
      await turn.answerInput(second!.requestId, {
        action: 'accept',
        content: { decision: 'deny', reason: 'not during the freeze' },
      });
      const refused = await denied;
      assert.equal(refused.status, 'error');
      assert.equal(refused.errorMessage, 'a person denied mcp__s__echo: not during the freeze');
      assert.equal(await ran('denied call'), 0, 'a denied call never runs');
    } finally {
      await turn.end();
    }
    // The turn's stream shows each approval where it was asked: after its call was sent, before it ended.
    const events: TurnEvent[] = [];
    for await (const e of h.client.events(turn.turnId)) events.push(e);
    const asked = events.filter((e) => e.event === 'call.approval_required');
    assert.deepEqual(
      asked.map((e) => [e.data.id, e.data.name]),
      [
        ['c1', 'mcp__s__echo'],
        ['c2', 'mcp__s__echo'],
      ],
    );
    for (const e of asked) assert.match((e.data.approval as { why: string }).why, /settings\.json:\d+/);
    for (const id of ['c1', 'c2']) {
      const at = (event: string) => events.findIndex((e) => e.event === event && e.data.id === id);
      assert.ok(at('call.started') < at('call.approval_required'), `${id}: sent, then held`);
      assert.ok(at('call.approval_required') < at('call.finished'), `${id}: held, then finished`);
    }
  });

  test('no answer within the input timeout is a denial; an unattended run approves only when told to', async () => {
    await settings({ permissions: { ask: ['mcp__s__echo'] } });
    const turn = await h.client.startTurn({ sessionId: session('timeout'), limits: { inputTimeoutMs: 1500 } });
    try {
      const outcome = await turn.callTool({ id: 't1', name: 'mcp__s__echo', arguments: { text: 'nobody answered' } });
      assert.equal(outcome.status, 'error');
      assert.match(
        outcome.errorMessage ?? '',
        /was not approved within the turn's input timeout \(2 s\), so it did not run/,
      );
      assert.equal(await ran('nobody answered'), 0);
    } finally {
      await turn.end();
    }
    const asked = { kind: 'form' as const, approval: { argumentsHash: '0'.repeat(16), why: 'rule' } };
    assert.deepEqual(unattendedAnswer('approve', asked), { action: 'accept', content: { decision: 'approve' } });
    for (const mode of ['accept-defaults', 'decline', 'cancel', 'deny'] as const)
      assert.equal(unattendedAnswer(mode, asked).content?.decision, 'deny', `${mode} never approves`);
    const batch = await h.client.runBatch({
      sessionId: session('batch'),
      calls: [[{ id: 'b1', name: 'mcp__s__echo', arguments: { text: 'unattended' } }]],
      onInput: (request) => unattendedAnswer('approve', request),
    });
    assert.equal(batch.calls[0]!.outcome.status, 'ok', batch.calls[0]!.outcome.errorMessage);
  });

  test('approve with other arguments: only where permissions.approveWithEdits allows it, and the hooks see them', async () => {
    await settings({ permissions: { ask: ['mcp__s__echo'], approveWithEdits: ['mcp__s__echo'] } });
    const turn = await h.client.startTurn({ sessionId: session('edit'), limits: { inputTimeoutMs: 20_000 } });
    try {
      const call = turn.callTool({ id: 'e1', name: 'mcp__s__echo', arguments: { text: 'edit me' } });
      await waitUntil('the approval', async () => (await turn.pendingInputs()).length === 1);
      const [question] = await turn.pendingInputs();
      assert.match(question!.approval?.edits ?? '', /rule "mcp__s__echo" \(.*settings\.json:\d+, approveWithEdits\)/);
      assert.match(question!.message, /It may be approved with other arguments\./);
      for (const [content, why] of [
        [{ decision: 'approve', arguments: '{"text": ' }, /not JSON/],
        [{ decision: 'approve', arguments: '["edited"]' }, /must be a JSON object/],
        [{ decision: 'deny', arguments: '{"text":"edited"}' }, /with "approve" only/],
      ] as const) {
        await assert.rejects(turn.answerInput(question!.requestId, { action: 'accept', content }), (err) =>
          why.test(causeMessages(err)),
        );
      }
      await turn.answerInput(question!.requestId, {
        action: 'accept',
        content: { decision: 'approve', arguments: '{"text":"edited by a person"}' },
      });
      const outcome = await call;
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.equal(textOf(outcome.content[0]), 'edited by a person');
      assert.deepEqual(outcome.approvedArguments, { text: 'edited by a person' });
      assert.equal(await ran('edited by a person'), 1);
      assert.equal(await ran('edit me'), 0, 'the arguments the person replaced never ran');
    } finally {
      await turn.end();
    }

    // Without the rule the form has no arguments field: an answer that gives some is refused.
    await settings({ permissions: { ask: ['mcp__s__echo'] } });
    const plain = await h.client.startTurn({ sessionId: session('no-edit'), limits: { inputTimeoutMs: 20_000 } });
    try {
      const call = plain.callTool({ id: 'n1', name: 'mcp__s__echo', arguments: { text: 'as asked' } });
      await waitUntil('the approval', async () => (await plain.pendingInputs()).length === 1);
      const [question] = await plain.pendingInputs();
      assert.equal(question!.approval?.edits, undefined);
      await assert.rejects(
        plain.answerInput(question!.requestId, {
          action: 'accept',
          content: { decision: 'approve', arguments: '{"text":"sneaked in"}' },
        }),
        (err) => /"arguments" is not a field of the requested schema/.test(causeMessages(err)),
      );
      await plain.answerInput(question!.requestId, { action: 'accept', content: { decision: 'approve' } });
      assert.equal(textOf((await call).content[0]), 'as asked');
      assert.equal(await ran('sneaked in'), 0);
    } finally {
      await plain.end();
    }

    // A hook that asked decides again on the edited arguments: its deny stops them.
    await settings({
      permissions: { approveWithEdits: ['mcp__s__echo'] },
      hooks: {
        PreToolUse: [
          { matcher: 'mcp__s__echo', hooks: [{ type: 'command', command: `bash ${hookScript} ask-block-rm` }] },
        ],
      },
    });
    const hooked = await h.client.startTurn({ sessionId: session('edit-hook'), limits: { inputTimeoutMs: 20_000 } });
    try {
      const call = hooked.callTool({ id: 'k1', name: 'mcp__s__echo', arguments: { text: 'tidy the branch' } });
      await waitUntil('the approval', async () => (await hooked.pendingInputs()).length === 1);
      const [question] = await hooked.pendingInputs();
      await hooked.answerInput(question!.requestId, {
        action: 'accept',
        content: { decision: 'approve', arguments: '{"text":"rm -rf the branch"}' },
      });
      const outcome = await call;
      assert.equal(outcome.status, 'error');
      assert.match(outcome.errorMessage ?? '', /rm -rf is never run/);
      assert.equal(await ran('rm -rf the branch'), 0);
      const kept = hooked.callTool({ id: 'k2', name: 'mcp__s__echo', arguments: { text: 'tidy again' } });
      await waitUntil('the second approval', async () => (await hooked.pendingInputs()).length === 1);
      const [second] = await hooked.pendingInputs();
      await hooked.answerInput(second!.requestId, {
        action: 'accept',
        content: { decision: 'approve', arguments: '{"text":"tidy, carefully"}' },
      });
      const ok = await kept;
      assert.equal(ok.status, 'ok', ok.errorMessage);
      assert.equal(textOf(ok.content[0]), 'tidy, carefully');
      assert.equal(
        ok.hooks?.pre?.decision,
        'ask',
        'the hooks saw the edited arguments and asked; the person had answered',
      );
    } finally {
      await hooked.end();
    }
  });

  test("a PreToolUse hook's ask holds the call too, with the hook's reason", async () => {
    await settings({
      hooks: {
        PreToolUse: [{ matcher: 'mcp__s__echo', hooks: [{ type: 'command', command: `bash ${hookScript} ask` }] }],
      },
    });
    const turn = await h.client.startTurn({ sessionId: session('hook'), limits: { inputTimeoutMs: 20_000 } });
    try {
      const call = turn.callTool({ id: 'h1', name: 'mcp__s__echo', arguments: { text: 'hook asked' } });
      await waitUntil('the hook question', async () => (await turn.pendingInputs()).length === 1);
      const [question] = await turn.pendingInputs();
      assert.match(question!.message, /Asked by a PreToolUse hook \(a release is frozen: a person signs off\)/);
      await turn.answerInput(question!.requestId, { action: 'decline' });
      const outcome = await call;
      assert.equal(outcome.errorMessage, 'a person denied mcp__s__echo');
      assert.equal(outcome.hooks?.pre?.decision, 'ask');
      assert.equal(await ran('hook asked'), 0);
    } finally {
      await turn.end();
    }
  });
});
