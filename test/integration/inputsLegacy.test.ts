/**
 * Tool calls of 2025-era servers that ask a person mid-call (`elicitation/create`): the call's
 * activity holds the connection, the question is a recorded input request of the turn, and the
 * answer reaches the waiting activity through `deliverInputAnswer`. Real Temporal, the real
 * server-everything over stdio.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import {
  ActivityName,
  FailureType,
  QueryName,
  RefusalType,
  UpdateName,
  type InputRequest,
  type TurnLimits,
  type TurnProgress,
} from '../../contract/index.js';
import { applicationFailureOf, failureTypeOf } from '../../client/failures.js';
import { TurnClient as Turns } from '../../client/turnClient.js';
import { bundleWorkflows } from '../../worker/index.js';
import { text } from '../support/inputs.js';
import {
  everythingServer,
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

const ELICIT = 'mcp__everything__trigger-elicitation-request';
const URL_ELICIT = 'mcp__everything__trigger-url-elicitation';

describe('input requests of a 2025-era server (server-everything)', { timeout: 180_000 }, () => {
  let h: Harness;
  let dir: string;
  before(async () => {
    dir = await tempDir('dmcp-inputs-legacy-');
    h = await startHarness('inputs-legacy');
  });
  after(async () => {
    await h?.stop();
  });

  const progressOf = (turnId: string) =>
    h.client.client.workflow.getHandle(turnId).query<TurnProgress>(QueryName.status);
  function startTurn(name: string, limits?: TurnLimits) {
    return h.client.startTurn({
      sessionId: `legacy-${name}-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] },
      ...(limits ? { limits } : {}),
    });
  }

  test('a form question is a recorded input request; the accepted answer reaches the server, and never the logs or the status', async () => {
    // A tool timeout shorter than the person takes: the wait does not count against it.
    const turn = await startTurn('accept', { toolTimeoutMs: 2000, heartbeatTimeoutMs: 2000 });
    assert.ok(
      turn.tools.some((t) => t.name === ELICIT),
      'listed: elicitation is declared',
    );
    const call = turn.callTool({ id: 'e1', name: ELICIT, arguments: {} });
    await waitUntil('the question', async () => (await turn.pendingInputs()).length === 1);
    const [open] = await turn.pendingInputs();
    assert.deepEqual(
      [open!.requestId, open!.callId, open!.tool, open!.kind, open!.round, open!.key],
      ['e1:1:elicitation', 'e1', ELICIT, 'form', 1, 'elicitation'],
    );
    assert.equal(open!.message, 'Please provide inputs for the following fields:');
    assert.deepEqual((open!.requestedSchema as { required?: string[] }).required, ['name']);
    const status = await progressOf(turn.turnId);
    assert.deepEqual(
      status.pendingInputs?.map((r) => r.requestId),
      ['e1:1:elicitation'],
    );
    // The waiting activity says so in its heartbeat details (what the Temporal UI shows of it).
    const converter = h.client.client.options.loadedDataConverter.payloadConverter;
    await waitUntil('a heartbeat that names the question', async () => {
      const details = (await turn.handle.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
      return (
        details !== undefined &&
        JSON.stringify(converter.fromPayload(details)) ===
          JSON.stringify({ waitingForInput: { requestId: 'e1:1:elicitation', kind: 'form' } })
      );
    });
    await new Promise((r) => setTimeout(r, 3000));
    const receipt = await turn.answerInput(open!.requestId, {
      action: 'accept',
      content: { name: 'Legacy-Secret-Answer', integer: 7 },
    });
    assert.deepEqual(receipt, { requestId: 'e1:1:elicitation', action: 'accept' });
    const outcome = await call;
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.match(text(outcome), /✅ User provided the requested information!/);
    assert.match(text(outcome), /Legacy-Secret-Answer/, 'the server got the answer');
    assert.doesNotMatch(text(outcome), /declined without asking a person/);
    assert.deepEqual(await turn.pendingInputs(), []);
    assert.ok(!h.logs.join('\n').includes('Legacy-Secret-Answer'), 'answers never reach the worker log');
    assert.ok(!JSON.stringify(await progressOf(turn.turnId)).includes('Legacy-Secret-Answer'), 'nor the status');
    const transcript = await h.client.transcript(turn.turnId);
    const recorded = transcript.calls.find((c) => c.id === 'e1')!;
    assert.deepEqual(
      recorded.inputs?.map((i) => [i.round, i.key, i.kind, i.action]),
      [[1, 'elicitation', 'form', 'accept']],
      'the transcript shows the question and how it was answered',
    );
    assert.ok(!JSON.stringify(recorded.inputs).includes('Legacy-Secret-Answer'));
    await turn.end();
  });

  test('a call safe to retry tries the fast path first; its question sends it to the regular activity, which asks the person', async () => {
    const file = join(dir, 'fast-mcp.json');
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: { everything: { command: process.execPath, args: [everythingServer, 'stdio'], retry: 'safe' } },
      }),
    );
    const turn = await h.client.startTurn({
      sessionId: `legacy-fast-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const call = turn.callTool({ id: 'f1', name: ELICIT, arguments: {} });
    await waitUntil('the question', async () => (await turn.pendingInputs()).length === 1);
    assert.deepEqual(
      (await turn.pendingInputs()).map((r) => r.requestId),
      ['f1:1:elicitation'],
      'the local attempt asked nobody',
    );
    await turn.answerInput('f1:1:elicitation', { action: 'accept', content: { name: 'from-the-regular-path' } });
    const outcome = await call;
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.match(text(outcome), /from-the-regular-path/);
    await turn.end();
    const events = (await turn.handle.fetchHistory()).events ?? [];
    const localFailures = events
      .map((e) => e.markerRecordedEventAttributes)
      .filter((m) => m?.markerName === 'core_local_activity' && m.failure)
      .map((m) => m!.failure!.applicationFailureInfo?.type ?? m!.failure!.cause?.applicationFailureInfo?.type);
    assert.deepEqual(localFailures, [FailureType.FastPathAsksPerson]);
    const regular = events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === ActivityName.callTool,
    );
    assert.equal(regular.length, 1, 'then one regular activity');
  });

  test('a bad answer is refused naming the field and the question stays open; decline and cancel reach the server', async () => {
    const turn = await startTurn('refuse');
    const call = turn.callTool({ id: 'b1', name: ELICIT, arguments: {} });
    await waitUntil('the question', async () => (await turn.pendingInputs()).length === 1);
    const refused = await turn
      .answerInput('b1:1:elicitation', { action: 'accept', content: { name: 'ok', integer: 500 } })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.equal(failureTypeOf(refused), RefusalType.inputAnswer);
    assert.match(applicationFailureOf(refused)!.message, /"integer" must be at most 100/);
    assert.deepEqual(applicationFailureOf(refused)!.details, [{ field: 'content.integer' }]);
    const missing = await turn.answerInput('b1:1:elicitation', { action: 'accept', content: { check: true } }).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.deepEqual(applicationFailureOf(missing)!.details, [{ field: 'content.name' }]);
    assert.equal((await turn.pendingInputs()).length, 1, 'still open');
    await turn.answerInput('b1:1:elicitation', { action: 'decline' });
    assert.match(text(await call), /❌ User declined to provide the requested information/);

    const second = turn.callTool({ id: 'c1', name: ELICIT, arguments: {} });
    await waitUntil('the second question', async () => (await turn.pendingInputs()).length === 1);
    await turn.answerInput('c1:1:elicitation', { action: 'cancel' });
    assert.match(text(await second), /⚠️ User cancelled the elicitation dialog/);
    await turn.end();
  });

  test('URL mode: the request shows the URL, the worker never opens it, and only the action is recorded', async () => {
    const turn = await startTurn('url');
    assert.ok(
      turn.tools.some((t) => t.name === URL_ELICIT),
      'listed: URL mode is declared',
    );
    const asked: InputRequest[] = [];
    const outcome = await turn.callTool(
      {
        id: 'u1',
        name: URL_ELICIT,
        arguments: { url: 'https://example.invalid/consent?x=1', message: 'Sign in to continue' },
      },
      {
        inputPollMs: 200,
        onInput: (request) => {
          asked.push(request);
          return { action: 'accept' };
        },
      },
    );
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.match(text(outcome), /User completed the URL elicitation flow/);
    assert.deepEqual(
      asked.map((r) => [r.kind, r.url, r.message, r.requestedSchema]),
      [['url', 'https://example.invalid/consent?x=1', 'Sign in to continue', undefined]],
    );
    assert.equal(typeof asked[0]!.elicitationId, 'string');
    await turn.end();
  });

  test('an unanswered question reaches the server as cancelled at the legacy limit; the call does not time out meanwhile', async () => {
    const turn = await startTurn('timeout', { legacyInputTimeoutMs: 2500, toolTimeoutMs: 1500 });
    const started = Date.now();
    const outcome = await turn.callTool({ id: 't1', name: ELICIT, arguments: {} });
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.match(text(outcome), /⚠️ User cancelled the elicitation dialog/);
    assert.ok(Date.now() - started >= 2500, 'waited the limit');
    assert.deepEqual(await turn.pendingInputs(), []);
    const late = await turn.answerInput('t1:1:elicitation', { action: 'accept', content: { name: 'late' } }).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.deepEqual(applicationFailureOf(late)!.details, [{ field: 'requestId' }], 'a timed-out question is closed');
    await turn.end();
  });

  test('a call cancelled while it waits ends as cancelled; its question is closed and the server is told', async () => {
    const turn = await startTurn('cancel');
    const call = turn.callTool({ id: 'x1', name: ELICIT, arguments: {} });
    await waitUntil('the question', async () => (await turn.pendingInputs()).length === 1);
    assert.equal(await turn.cancelCall('x1'), true);
    const outcome = await call;
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'cancelled', outcome.errorMessage);
    assert.deepEqual(await turn.pendingInputs(), []);
    // The activity learns of the cancellation with its next heartbeat; until then the call is still
    // in flight on the server, and a question then could not be told from the next call's.
    await waitUntil(
      'the cancelled activity to end',
      async () => ((await turn.handle.describe()).raw.pendingActivities ?? []).length === 0,
    );
    // The session's server is still there for the next question.
    const next = turn.callTool({ id: 'x2', name: ELICIT, arguments: {} });
    await waitUntil('the next question', async () =>
      (await turn.pendingInputs()).some((r) => r.requestId === 'x2:1:elicitation'),
    );
    await turn.answerInput('x2:1:elicitation', { action: 'decline' });
    assert.match(text(await next), /declined/);
    await turn.end();
  });

  test('only a running call of the turn may report a question; another turn cannot deliver an answer', async () => {
    const turn = await startTurn('forged');
    const handle = h.client.client.workflow.getHandle(turn.turnId);
    const forged = await handle
      .executeUpdate(UpdateName.legacyInputAsked, {
        args: [
          {
            callId: 'nope',
            tool: ELICIT,
            request: { key: 'elicitation', kind: 'form', message: 'hi', requestedSchema: { type: 'object' } },
            waitedMs: 0,
          },
        ],
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.equal(failureTypeOf(forged), RefusalType.inputReport);
    assert.deepEqual(await turn.pendingInputs(), []);

    // Two turns on the same worker, each with a call `f1` waiting: the same request ID. The answer
    // to one reaches its own call only.
    const other = await startTurn('forged-other');
    assert.equal(other.workerQueue, turn.workerQueue);
    const call = turn.callTool({ id: 'f1', name: ELICIT, arguments: {} });
    const otherCall = other.callTool({ id: 'f1', name: ELICIT, arguments: {} });
    await waitUntil(
      'both questions',
      async () => (await turn.pendingInputs()).length === 1 && (await other.pendingInputs()).length === 1,
    );
    await other.answerInput('f1:1:elicitation', { action: 'accept', content: { name: 'other-turn' } });
    assert.match(text(await otherCall), /other-turn/);
    assert.equal((await turn.pendingInputs()).length, 1, "the first turn's question is still open");
    await turn.answerInput('f1:1:elicitation', { action: 'decline' });
    const outcome = await call;
    assert.match(text(outcome), /declined/);
    assert.doesNotMatch(text(outcome), /other-turn/);
    await Promise.all([turn.end(), other.end()]);
  });
});

describe('a worker SIGKILLed while its call waits for a 2025-era answer', { timeout: 180_000 }, () => {
  const workers: WorkerProcess[] = [];
  after(async () => {
    await Promise.all(workers.map(stopWorkerProcess));
  });

  async function twoWorkers(name: string) {
    const dir = await tempDir(`dmcp-legacy-crash-${name}-`);
    const bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
    const taskQueue = uniqueQueue(`legacy-crash-${name}`);
    const env = { TEMPORAL_ADDRESS: temporalAddress(), DMCP_NO_USER_CONFIG: '1' };
    const pair = [
      await startWorkerProcess(taskQueue, bundleFile, env),
      await startWorkerProcess(taskQueue, bundleFile, env),
    ];
    workers.push(...pair);
    const connection = await Connection.connect({ address: temporalAddress() });
    return { dir, pair, client: new Turns({ client: new Client({ connection }), taskQueue }) };
  }

  async function startTurn(client: Turns, dir: string, retry: 'auto' | 'safe') {
    const file = join(dir, 'mcp.json');
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: { everything: { command: process.execPath, args: [everythingServer, 'stdio'], retry } },
      }),
    );
    return client.startTurn({
      sessionId: `legacy-crash-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
      limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
    });
  }

  test('a call that may have had an effect ends as unknown_result; the question is closed', async () => {
    const { dir, pair, client } = await twoWorkers('unsafe');
    try {
      const turn = await startTurn(client, dir, 'auto');
      const victim = pair.find((w) => w.workerQueue === turn.workerQueue)!;
      const call = turn.callTool({ id: 'k1', name: ELICIT, arguments: {} });
      await waitUntil('the question', async () => (await client.pendingInputs(turn.turnId)).length === 1);
      process.kill(victim.pid, 'SIGKILL');
      const outcome = await call;
      assert.equal(outcome.status, 'error');
      assert.equal(outcome.errorKind, 'unknown_result', outcome.errorMessage);
      assert.deepEqual(await client.pendingInputs(turn.turnId), []);
      await turn.end();
    } finally {
      await client.close();
    }
  });

  test('a call safe to retry moves to the survivor and asks again there; that answer completes it', async () => {
    const { dir, pair, client } = await twoWorkers('safe');
    try {
      const turn = await startTurn(client, dir, 'safe');
      const victim = pair.find((w) => w.workerQueue === turn.workerQueue)!;
      const survivor = pair.find((w) => w.workerQueue !== turn.workerQueue)!;
      const call = turn.callTool({ id: 's1', name: ELICIT, arguments: {} });
      await waitUntil('the question', async () => (await client.pendingInputs(turn.turnId)).length === 1);
      process.kill(victim.pid, 'SIGKILL');
      await waitUntil(
        'the question asked again on the survivor',
        async () => (await client.pendingInputs(turn.turnId)).some((r) => r.requestId === 's1:2:elicitation'),
        60_000,
      );
      assert.deepEqual(
        (await client.pendingInputs(turn.turnId)).map((r) => r.requestId),
        ['s1:2:elicitation'],
        "the lost attempt's question is closed",
      );
      await client.answerInput(turn.turnId, 's1:2:elicitation', { action: 'accept', content: { name: 'after-crash' } });
      const outcome = await call;
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.match(text(outcome), /after-crash/);
      const result = await turn.end();
      assert.equal(result.workerQueue, survivor.workerQueue);
    } finally {
      await client.close();
    }
  });
});
