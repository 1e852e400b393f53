/**
 * Model turns against a real model process (the scripted OpenAI-compatible server) and a real
 * worker: the model's tool calls run through the turn's call path, results reach the next step, the
 * conversation carries over to the session's next turn, failures follow the retry rules, and the
 * key goes nowhere but the model's endpoint.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import {
  fixtureServer,
  killGroups,
  runtimeLogs,
  waitUntil,
  startHarness,
  tempDir,
  writeConfigDir,
  type Harness,
} from '../support/harness.js';
import { startModelServer, writeModelsJson, type ModelServer } from '../support/models.js';

const KEY = `sk-test-${randomBytes(24).toString('hex')}`;
const SCRIPT = {
  prompts: {
    'echo hello': [
      { toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'hello from the tool' } }] },
      { text: 'The tool said: hello from the tool.' },
    ],
    'and again': [{ text: 'Still here.' }],
    'two at once': [
      {
        toolCalls: [
          { name: 'mcp__echo__echo', arguments: { text: 'first' } },
          { name: 'mcp__echo__echo', arguments: { text: 'second' } },
        ],
      },
      { text: 'Both ran.' },
    ],
    'rate limited': [
      {
        fail: [
          { status: 429, retryAfter: '2', message: 'slow down' },
          { status: 500, message: 'oops' },
        ],
        text: 'made it',
      },
    ],
    'refused request': [{ always: { status: 400, message: 'context length exceeded' } }],
    'slow to answer': [{ delayMs: 8000, text: 'too late' }],
    'slow with a call': [
      { delayMs: 2500, toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'never run' } }] },
      { text: 'unreachable' },
    ],
    'loop forever': [
      { toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'one' } }] },
      { toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'two' } }] },
      { toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'three' } }] },
    ],
  },
  steps: [{ text: 'default answer' }],
};

describe('model turns', () => {
  const started = new Set<number>();
  let h: Harness;
  let model: ModelServer;
  let dir: string;
  const session = (name: string) => `model-${name}-${randomBytes(4).toString('hex')}`;
  const servers = { inlineSpecs: [`echo:${process.execPath} ${fixtureServer}`] };

  before(async () => {
    dir = await tempDir();
    model = await startModelServer(dir, 'model', SCRIPT, started, { MODEL_KEY: KEY });
    const configDir = `${dir}/config`;
    const env = await writeConfigDir(configDir, {});
    await writeModelsJson(
      configDir,
      {
        scripted: {
          provider: 'openai-compatible',
          model: 'scripted-1',
          baseURL: model.baseURL,
          apiKeyEnv: 'SCRIPTED_MODEL_KEY',
        },
      },
      'You are a careful assistant.',
    );
    h = await startHarness('model-turn', { ...env, SCRIPTED_MODEL_KEY: KEY });
  });
  after(async () => {
    await h?.stop();
    killGroups(started);
  });

  test('the model calls a tool, reads its result and answers; the next turn continues the conversation', async () => {
    const sessionId = session('answer');
    const run = await h.client.startModelTurn({
      sessionId,
      servers,
      model: { name: 'scripted', prompt: 'please echo hello' },
    });
    const steps = [];
    for await (const step of run.steps()) steps.push(step);
    const result = await run.result();
    assert.equal(result.endedBy, 'answer');
    assert.equal(result.answer, 'The tool said: hello from the tool.');
    assert.equal(result.model, 'scripted');
    assert.deepEqual(
      steps.map((s) => s.toolCalls.length),
      [1, 0],
      'the iterator yields both steps, in order',
    );
    assert.deepEqual(result.modelSteps, steps);
    assert.equal(result.calls.length, 1);
    assert.equal(result.calls[0]!.name, 'mcp__echo__echo');
    assert.equal(result.calls[0]!.outcome.status, 'ok');
    assert.equal(result.calls[0]!.id, steps[0]!.toolCalls[0]!.id);
    assert.ok(steps[0]!.usage.inputTokens! > 0, 'token usage is recorded');

    const requests = (await model.requests()).filter((r) => r.key === 'echo hello');
    assert.deepEqual(
      requests.map((r) => r.step),
      [0, 1],
    );
    assert.ok(requests[0]!.tools.includes('mcp__echo__echo'), 'the tools are offered by their public names');
    assert.match(
      requests[0]!.system ?? '',
      /^You are a careful assistant\.\n\n/,
      "the operator's instructions come first",
    );
    assert.match(requests[0]!.system ?? '', /echo/, 'then the servers paragraph');
    assert.match(requests[1]!.toolResults.join('\n'), /hello from the tool/, "the tool's result reaches the model");

    // Without `conversation`, the session's latest turn as visibility lists it (it lags a moment).
    await waitUntil(
      'visibility to list the first turn',
      async () => (await h.client.listTurns(sessionId)).length === 1,
    );
    const next = await h.client.runModelTurn({ sessionId, servers, model: { name: 'scripted', prompt: 'and again?' } });
    assert.equal(next.answer, 'Still here.');
    const again = (await model.requests()).find((r) => r.key === 'and again');
    assert.equal(again?.messages, 6, 'the system prompt, the first turn (4 messages) and the new prompt');
    const fresh = await h.client.runModelTurn({
      sessionId,
      servers,
      model: { name: 'scripted', prompt: 'and again, anew', newConversation: true },
    });
    assert.equal(fresh.answer, 'Still here.');
    const anew = (await model.requests()).filter((r) => r.key === 'and again').at(-1);
    assert.equal(anew?.messages, 2, 'a new conversation sends the system prompt and its prompt');
  });

  test("parallel tool calls of one step all run, and each result goes back under the model's ID", async () => {
    const result = await h.client.runModelTurn({
      sessionId: session('parallel'),
      servers,
      model: { name: 'scripted', prompt: 'two at once' },
    });
    assert.equal(result.answer, 'Both ran.');
    assert.deepEqual(result.calls.map((c) => c.arguments.text).sort(), ['first', 'second']);
    const last = (await model.requests()).filter((r) => r.key === 'two at once').at(-1)!;
    assert.equal(last.toolResults.length, 2);
  });

  test("a 429 waits for its Retry-After and a 500 is retried; the step's request runs until it is answered", async () => {
    const result = await h.client.runModelTurn({
      sessionId: session('retry'),
      servers,
      model: { name: 'scripted', prompt: 'rate limited' },
    });
    assert.equal(result.answer, 'made it');
    const tries = (await model.requests()).filter((r) => r.key === 'rate limited');
    assert.deepEqual(
      tries.map((r) => r.status),
      [429, 500, 200],
    );
    assert.ok(
      tries[1]!.at - tries[0]!.at >= 1900,
      `the retry waited for Retry-After: ${tries[1]!.at - tries[0]!.at} ms`,
    );
  });

  test('a request the model refuses (400) is not retried, and the turn fails saying why', async () => {
    await assert.rejects(
      h.client.runModelTurn({
        sessionId: session('refused'),
        servers,
        model: { name: 'scripted', prompt: 'refused request' },
      }),
      (err: Error) => {
        const text = `${err.message} ${String((err.cause as Error | undefined)?.message)} ${JSON.stringify(err, Object.getOwnPropertyNames(err))}`;
        assert.match(text, /400/);
        assert.match(text, /context length exceeded/);
        return true;
      },
    );
    assert.equal((await model.requests()).filter((r) => r.key === 'refused request').length, 1, 'asked once');
  });

  test('the step limit ends the turn; calls the last step asked for are not run', async () => {
    const result = await h.client.runModelTurn({
      sessionId: session('limit'),
      servers,
      model: { name: 'scripted', prompt: 'loop forever', maxSteps: 2 },
    });
    assert.equal(result.endedBy, 'maxSteps');
    assert.equal(result.modelSteps?.length, 2);
    assert.deepEqual(
      result.calls.map((c) => c.arguments.text),
      ['one'],
    );
  });

  test('the deadline ends the turn while a step waits for the model; endTurn ends it after the running step', async () => {
    const late = await h.client.runModelTurn({
      sessionId: session('deadline'),
      servers,
      model: { name: 'scripted', prompt: 'slow to answer', deadlineMs: 1500 },
    });
    assert.equal(late.endedBy, 'deadline');
    assert.equal(late.modelSteps?.length, 0);

    const run = await h.client.startModelTurn({
      sessionId: session('end'),
      servers,
      model: { name: 'scripted', prompt: 'slow with a call' },
    });
    await waitUntil('the model to be asked', async () =>
      (await model.requests()).some((r) => r.key === 'slow with a call'),
    );
    await h.client.endTurn(run.turnId);
    const ended = await run.result();
    assert.equal(ended.endedBy, 'endTurn');
    assert.equal(ended.modelSteps?.length, 1, 'the running step finished');
    assert.deepEqual(ended.calls, [], 'the calls it asked for did not run');
  });

  test('a model the operator did not name, or a key field in the input, is refused', async () => {
    await assert.rejects(
      h.client.runModelTurn({ sessionId: session('unknown'), servers, model: { name: 'nope', prompt: 'hi' } }),
      /model "nope" is not in .*models\.json \(models there: scripted\)/,
    );
    await assert.rejects(
      h.client.runModelTurn({
        sessionId: session('key'),
        servers,
        model: { name: 'scripted', prompt: 'hi', apiKey: 'x' } as never,
      }),
      /unknown field "apiKey"/,
    );
  });

  test("the model's key is in no history, no log and no result", async () => {
    const sessionId = session('leak');
    const result = await h.client.runModelTurn({
      sessionId,
      servers,
      model: { name: 'scripted', prompt: 'echo hello' },
    });
    const history = await h.client.transcript(result.turnId);
    const handle = h.client['client' as never] as {
      workflow: { getHandle(id: string): { fetchHistory(): Promise<unknown> } };
    };
    const raw = JSON.stringify(historyToJSON((await handle.workflow.getHandle(result.turnId).fetchHistory()) as never));
    const forms = [KEY, Buffer.from(KEY).toString('base64')];
    for (const form of forms) {
      assert.ok(!raw.includes(form), 'history');
      assert.ok(!JSON.stringify(history).includes(form), 'transcript');
      assert.ok(!JSON.stringify(result).includes(form), 'result');
      assert.ok(!h.logs.join('\n').includes(form), 'worker logs');
      assert.ok(!runtimeLogs.join('\n').includes(form), 'SDK logs');
    }
    assert.ok(
      (await model.requests()).every((r) => r.status !== 401),
      'every request carried the key',
    );
  });
});
