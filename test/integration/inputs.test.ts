/**
 * Tool calls that ask a person (2026-07-28 `input_required`): the questions are recorded input
 * requests of the turn, the turn waits with nothing running, and a new call carries the answers
 * and the server's exact `requestState`. Real Temporal, a real 2026-era server over HTTP.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RefusalType, type InputAnswer, type InputRequest } from '../../contract/index.js';
import { applicationFailureOf, failureTypeOf } from '../../client/failures.js';

import { Client, Connection } from '@temporalio/client';
import { TurnClient as Turns } from '../../client/turnClient.js';
import { bundleWorkflows } from '../../worker/index.js';
import { callInputs, killStartedServers, modernHttpServer, provisionLog, text } from '../support/inputs.js';
import {
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

describe('input requests of a 2026-07-28 server', { timeout: 120_000 }, () => {
  let h: Harness;
  let dir: string;
  let logFile: string;
  let url: string;

  before(async () => {
    dir = await tempDir('dmcp-inputs-');
    logFile = join(dir, 'server.log');
    url = await modernHttpServer(logFile);
    h = await startHarness('inputs');
  });
  after(async () => {
    killStartedServers();
    await h?.stop();
  });

  const session = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
  async function startTurn(name: string, limits?: { inputTimeoutMs?: number }) {
    const file = join(dir, `${name}.json`);
    await writeFile(file, JSON.stringify({ mcpServers: { db: { url } } }));
    return h.client.startTurn({
      sessionId: session(name),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
      ...(limits ? { limits } : {}),
    });
  }

  test('a tool that asks twice completes with the answers; each retry echoes the exact requestState; the server completes once', async () => {
    const before = (await provisionLog(logFile)).length;
    const turn = await startTurn('twice');
    const asked: InputRequest[] = [];
    const outcome = await turn.callTool(
      { id: 'p1', name: 'mcp__db__provision', arguments: {} },
      {
        inputPollMs: 200,
        onInput: (request): InputAnswer => {
          asked.push(request);
          return request.key === 'name'
            ? { action: 'accept', content: { name: 'analytics-secret-name', region: 'us' } }
            : { action: 'accept', content: { confirm: true } };
        },
      },
    );
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(text(outcome), 'Provisioned analytics-secret-name');
    assert.deepEqual(
      asked.map((r) => [r.requestId, r.kind, r.round, r.message]),
      [
        ['p1:1:name', 'form', 1, 'Name the new database'],
        ['p1:2:confirm', 'form', 2, 'Create database analytics-secret-name?'],
      ],
    );
    assert.equal(asked[0]!.requestedSchema?.type, 'object');
    const log = (await provisionLog(logFile)).slice(before);
    assert.deepEqual(
      log.map((e) => [e.round, e.state, e.action]),
      [
        [1, undefined, undefined],
        [2, 'asked-name', 'accept'],
        [3, 'confirm:*', 'accept'],
        [undefined, undefined, undefined],
      ],
    );
    assert.equal(log.filter((e) => e.completed === true).length, 1, 'one completion');
    const inputs = await callInputs(h.client, turn.turnId);
    assert.deepEqual(
      inputs.map((i) => i.inputReply?.requestState),
      [undefined, 'asked-name', 'confirm:analytics-secret-name'],
    );
    assert.deepEqual(inputs[1]!.inputReply?.inputResponses, {
      name: { action: 'accept', content: { name: 'analytics-secret-name', region: 'us' } },
    });
    assert.deepEqual(await turn.pendingInputs(), []);
    assert.ok(!h.logs.join('\n').includes('analytics-secret-name'), 'answers never reach the worker log');
    const transcript = await h.client.transcript(turn.turnId);
    assert.ok(!JSON.stringify(transcript.status).includes('analytics-secret-name'), 'nor the status');
    const recorded = transcript.calls.find((c) => c.id === 'p1')!;
    assert.deepEqual(
      recorded.inputs?.map((i) => [i.round, i.key, i.action]),
      [
        [1, 'name', 'accept'],
        [2, 'confirm', 'accept'],
      ],
      'the transcript shows each question and how it was answered',
    );
    assert.equal(recorded.outcome?.status, 'ok');
    await turn.end();
  });

  test('a bad answer is refused naming the field, the question stays open, and a good one completes the round', async () => {
    const turn = await startTurn('bad');
    const call = turn.callTool({ id: 'b1', name: 'mcp__db__provision', arguments: {} });
    await waitUntil('the first question', async () => (await turn.pendingInputs()).length === 1);
    const [open] = await turn.pendingInputs();
    assert.equal(open!.requestId, 'b1:1:name');
    const refused = await turn.answerInput(open!.requestId, { action: 'accept', content: { name: 'x' } }).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.equal(failureTypeOf(refused), RefusalType.inputAnswer);
    assert.match(applicationFailureOf(refused)!.message, /"name" must be at least 2 characters long/);
    assert.deepEqual(applicationFailureOf(refused)!.details, [{ field: 'content.name' }]);
    const wrongType = await turn
      .answerInput(open!.requestId, { action: 'accept', content: { name: 'ok', region: 'mars' } })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.deepEqual(applicationFailureOf(wrongType)!.details, [{ field: 'content.region' }]);
    const protoNamed = await turn
      .answerInput(open!.requestId, { action: 'accept', content: { name: 'ok', constructor: 'x'.repeat(20_000) } })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.equal(
      failureTypeOf(protoNamed),
      RefusalType.inputAnswer,
      'a field named like an Object.prototype member is no field of the schema',
    );
    assert.deepEqual(applicationFailureOf(protoNamed)!.details, [{ field: 'content.constructor' }]);
    assert.equal((await turn.pendingInputs()).length, 1, 'still open');
    const receipt = await turn.answerInput(open!.requestId, { action: 'decline' });
    assert.deepEqual(receipt, { requestId: 'b1:1:name', action: 'decline' });
    // A second answer to the same request is the first.
    assert.deepEqual(await turn.answerInput(open!.requestId, { action: 'accept', content: { name: 'late' } }), receipt);
    const outcome = await call;
    assert.equal(outcome.status, 'ok');
    assert.equal(outcome.isError, true);
    assert.equal(text(outcome), 'provisioning stopped: the name was declined');
    const unknown = await turn.answerInput('nope:1:x', { action: 'cancel' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.deepEqual(applicationFailureOf(unknown)!.details, [{ field: 'requestId' }]);
    await turn.end();
  });

  test('an unanswered question times out and reaches the server as cancelled; the model reads what the server said', async () => {
    const turn = await startTurn('timeout', { inputTimeoutMs: 1500 });
    const outcome = await turn.callTool({ id: 't1', name: 'mcp__db__provision', arguments: {} });
    assert.equal(outcome.status, 'ok');
    assert.equal(text(outcome), 'provisioning stopped: the name was cancelled');
    await turn.end();
  });

  test('URL mode: the request shows the URL; only the action is recorded', async () => {
    const turn = await startTurn('url');
    const outcome = await turn.callTool(
      { id: 'u1', name: 'mcp__db__open_page', arguments: {} },
      {
        inputPollMs: 200,
        onInput: (request) => {
          assert.equal(request.kind, 'url');
          assert.equal(request.url, 'https://example.invalid/auth?session=1');
          assert.equal(request.requestedSchema, undefined);
          return { action: 'accept' };
        },
      },
    );
    assert.equal(text(outcome), 'page: accept');
    const inputs = await callInputs(h.client, turn.turnId);
    assert.deepEqual(inputs[1]!.inputReply?.inputResponses, { page: { action: 'accept' } });
    await turn.end();
  });

  test('URL mode: a page a person must not be sent to ends the call, saying why; a message is shown as one plain line', async () => {
    const turn = await startTurn('bad-url');
    for (const url of ['javascript:alert(1)', 'file:///etc/passwd', 'data:text/html,<script>alert(1)</script>']) {
      const outcome = await turn.callTool(
        { id: `bad-${url.slice(0, 4)}`, name: 'mcp__db__open_page', arguments: { url } },
        { inputPollMs: 200, onInput: () => ({ action: 'accept' }) },
      );
      assert.notEqual(outcome.status, 'ok', url);
      assert.match(outcome.errorMessage ?? '', new RegExp(`a ${url.slice(0, url.indexOf(':') + 1)} URL`), url);
    }
    assert.deepEqual(await turn.pendingInputs(), [], 'nothing was asked');
    const asked: InputRequest[] = [];
    const outcome = await turn.callTool(
      {
        id: 'fake-line',
        name: 'mcp__db__open_page',
        arguments: { message: 'Sign in\n  open this page yourself: https://evil.example/\u202e' },
      },
      {
        inputPollMs: 200,
        onInput: (request) => {
          asked.push(request);
          return { action: 'decline' };
        },
      },
    );
    assert.equal(text(outcome), 'page: decline');
    assert.equal(asked[0]!.message, 'Sign in open this page yourself: https://evil.example/');
    await turn.end();
  });
});

describe('a worker SIGKILLed while its call waits for an answer', { timeout: 120_000 }, () => {
  const workers: WorkerProcess[] = [];
  after(async () => {
    await Promise.all(workers.map(stopWorkerProcess));
    killStartedServers();
  });

  test('the answer arrives afterwards, the call completes on the survivor, and the server saw one completion', async () => {
    const dir = await tempDir('dmcp-inputs-crash-');
    const logFile = join(dir, 'server.log');
    const url = await modernHttpServer(logFile);
    const bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
    const taskQueue = uniqueQueue('inputs-crash');
    const env = { TEMPORAL_ADDRESS: temporalAddress(), DMCP_NO_USER_CONFIG: '1' };
    workers.push(
      await startWorkerProcess(taskQueue, bundleFile, env),
      await startWorkerProcess(taskQueue, bundleFile, env),
    );
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new Turns({ client: new Client({ connection }), taskQueue });
    try {
      const file = join(dir, 'mcp.json');
      await writeFile(file, JSON.stringify({ mcpServers: { db: { url } } }));
      const turn = await client.startTurn({
        sessionId: `inputs-crash-${randomBytes(4).toString('hex')}`,
        workspace: dir,
        servers: { mcpConfigFiles: [file] },
        limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
      });
      const victim = workers.find((w) => w.workerQueue === turn.workerQueue)!;
      assert.ok(victim, 'the turn is pinned to one of our two workers');
      const call = turn.callTool({ id: 'c1', name: 'mcp__db__provision', arguments: {} });
      await waitUntil('the first question', async () => (await client.pendingInputs(turn.turnId)).length === 1);

      // Nothing runs during the wait: killing the worker that held the call loses nothing.
      process.kill(victim.pid, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 500));
      await client.answerInput(turn.turnId, 'c1:1:name', { action: 'accept', content: { name: 'after-crash' } });
      await waitUntil(
        'the second question, asked on the survivor',
        async () => (await client.pendingInputs(turn.turnId)).some((r) => r.requestId === 'c1:2:confirm'),
        60_000,
      );
      await client.answerInput(turn.turnId, 'c1:2:confirm', { action: 'accept', content: { confirm: true } });
      const outcome = await call;
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.equal(text(outcome), 'Provisioned after-crash');
      const log = await provisionLog(logFile);
      assert.equal(log.filter((e) => e.completed === true).length, 1, 'the server saw one completion');
      assert.deepEqual(
        log.filter((e) => e.round !== undefined).map((e) => e.round),
        [1, 2, 3],
        'each round once',
      );
      const result = await turn.end();
      // A 2026-07-28 remote server needs no holder: the survivor ran the later rounds as shared
      // calls, and the turn never had to move.
      assert.equal(result.workerQueue, victim.workerQueue, 'the turn did not move');
      const inputs = await callInputs(client, turn.turnId);
      // Each attempt was a shared call, the answered ones taken by the survivor with the state the
      // server gave: none waited on the dead worker's queue (the server saw round 2 once).
      assert.deepEqual(
        inputs.map((i) => [i.inputReply?.requestState, i.shared !== undefined]),
        [
          [undefined, true],
          ['asked-name', true],
          ['confirm:after-crash', true],
        ],
      );
    } finally {
      await client.close();
    }
  });
});
