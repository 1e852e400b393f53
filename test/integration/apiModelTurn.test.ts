/**
 * A model turn over the HTTP API (fetch only): the API in-process, a real worker whose config dir
 * names the scripted OpenAI-compatible model server in `models.json`. The start answers 202 at
 * once, the turn is polled while its model loop runs, and its result carries the answer, the
 * model's steps and the call it asked for. A request naming a key is refused before any turn starts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { RunningApi } from '../../api/server.js';
import { fixtureServer, killGroups, startHarness, tempDir, writeConfigDir, type Harness } from '../support/harness.js';
import { startModelServer, writeModelsJson, type ModelServer } from '../support/models.js';
import { startTestApi } from '../support/api.js';

const TOKEN = `api-model-turn-${randomBytes(16).toString('hex')}`;
const AUTH = { authorization: `Bearer ${TOKEN}` };
const KEY = `sk-test-${randomBytes(24).toString('hex')}`;
const SCRIPT = {
  prompts: {
    'echo hello': [
      { toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'hello over http' } }] },
      // The answer takes a moment, so a poll sees the first step while the turn still runs.
      { text: 'The tool said: hello over http.', delayMs: 1500 },
    ],
  },
  steps: [{ text: 'default answer' }],
};

interface Json {
  [key: string]: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('model turns over the HTTP API', () => {
  const started = new Set<number>();
  let h: Harness;
  let model: ModelServer;
  let api: RunningApi;
  let dir: string;
  const session = (name: string) => `api-model-${name}-${randomBytes(4).toString('hex')}`;

  const request = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: { ...AUTH, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
  };

  before(async () => {
    dir = await tempDir('dmcp-api-model-');
    model = await startModelServer(dir, 'model', SCRIPT, started, { MODEL_KEY: KEY });
    const configDir = `${dir}/config`;
    const env = await writeConfigDir(configDir, {});
    await writeModelsJson(configDir, {
      scripted: {
        provider: 'openai-compatible',
        model: 'scripted-1',
        baseURL: model.baseURL,
        apiKeyEnv: 'SCRIPTED_MODEL_KEY',
      },
    });
    h = await startHarness('api-model-turn', { ...env, SCRIPTED_MODEL_KEY: KEY });
    api = await startTestApi(h.client, TOKEN, dir);
  });
  after(async () => {
    await api?.close();
    await h?.stop();
    killGroups(started);
  });

  test('a model turn starts with 202, is polled while it runs, and answers with its steps and calls', async () => {
    const sessionId = session('answer');
    const start = await request('POST', `/api/v1/sessions/${sessionId}/turns`, {
      workspace: dir,
      servers: { inlineSpecs: [`echo:${process.execPath} ${fixtureServer}`] },
      model: { name: 'scripted', prompt: 'please echo hello' },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    assert.equal(start.body.turnId, `${sessionId}/turn-1`);
    assert.equal(start.body.state, 'running');
    assert.equal(start.body.model, 'scripted');
    assert.equal(start.headers.get('location'), start.body.poll);

    const running: Json[] = [];
    let result: Awaited<ReturnType<typeof request>>;
    for (const until = Date.now() + 60_000; ; ) {
      result = await request('GET', start.body.poll as string);
      if (result.status !== 202) break;
      running.push(result.body);
      assert.equal(result.body.state, 'running');
      assert.equal(result.headers.get('retry-after'), '1');
      assert.ok(Date.now() < until, 'the model turn did not end within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(result.status, 200, JSON.stringify(result.body));
    const turn = result.body;
    assert.equal(turn.endedBy, 'answer');
    assert.equal(turn.answer, 'The tool said: hello over http.');
    assert.equal(turn.model, 'scripted');
    assert.equal(turn.modelSteps.length, 2);
    assert.equal(turn.calls.length, 1);
    const call = turn.calls[0];
    assert.equal(call.name, 'mcp__echo__echo');
    assert.deepEqual(call.arguments, { text: 'hello over http' });
    assert.equal(call.outcome.status, 'ok');
    assert.deepEqual(turn.modelSteps[0].toolCalls, [{ id: call.id, name: 'mcp__echo__echo' }]);
    assert.match(turn.conversation, /^[0-9a-f]{64}$/, 'the conversation the next turn continues');
    const firstStep = running.find((r) => r.modelSteps?.length === 1);
    assert.ok(firstStep, `a poll while the turn ran showed its first step: ${JSON.stringify(running.at(-1))}`);
    assert.deepEqual(firstStep.modelSteps[0], turn.modelSteps[0], 'the step as the result has it');
    assert.equal(running.at(-1)!.callsDone, 1, "while the model wrote its answer, the step's call had run");

    // The model read the tool's result before it answered.
    const asked = (await model.requests()).filter((r) => r.key === 'echo hello');
    assert.match(asked.at(-1)!.toolResults.join('\n'), /hello over http/);
    // The key went to the model only, never into the answer.
    assert.ok(!JSON.stringify(turn).includes(KEY));
  });

  test('a request naming a key or an endpoint is refused, naming the field, and starts no turn', async () => {
    const sessionId = session('key');
    for (const field of ['apiKey', 'baseURL']) {
      const res = await request('POST', `/api/v1/sessions/${sessionId}/turns`, {
        model: { name: 'scripted', prompt: 'hi', [field]: 'x' },
      });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'bad_request');
      assert.equal(res.body.error.field, `body.model.${field}`);
      assert.match(res.body.error.message, new RegExp(`unknown field "${field}"`));
    }
    const both = await request('POST', `/api/v1/sessions/${sessionId}/turns`, {
      model: { name: 'scripted', prompt: 'hi' },
      calls: [[{ id: 'c1', name: 'mcp__echo__echo' }]],
    });
    assert.equal(both.status, 422);
    assert.equal(both.body.error.field, 'body.calls');
    assert.deepEqual((await request('GET', `/api/v1/sessions/${sessionId}/turns`)).body.turns, []);
  });

  test('a model turn that fails is 409 turn_failed on its poll, saying why', async () => {
    const sessionId = session('unknown');
    const start = await request('POST', `/api/v1/sessions/${sessionId}/turns`, {
      model: { name: 'nope', prompt: 'hi' },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    let res: { status: number; body: Json };
    for (const until = Date.now() + 30_000; ; ) {
      res = await request('GET', start.body.poll as string);
      if (res.status !== 202) break;
      assert.ok(Date.now() < until, 'the turn did not end within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'turn_failed');
    assert.match(res.body.error.message, /model "nope" is not in/);
  });
});
