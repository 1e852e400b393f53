/**
 * The scripted model server (test/fixtures/modelServer.ts) as a real process on 127.0.0.1, spoken to
 * with plain fetch: step selection, tool calls, streaming, scripted failures, the API key and the log.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { killGroups, readLines, startListening, tempDir } from '../support/harness.js';

const modelFixture = fileURLToPath(new URL('../fixtures/modelServer.js', import.meta.url));
const started = new Set<number>();

const STREAMED = 'A streamed answer that spans several chunks of text.';
const SCRIPT = {
  prompts: {
    weather: [
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo', days: 2 } }] },
      { text: 'Sunny in Oslo.' },
    ],
    'stream me': [{ text: STREAMED, chunkDelayMs: 2 }],
    flaky: [{ fail: [{ status: 429, retryAfter: '1', message: 'slow down' }], text: 'made it' }],
    refuse: [{ always: { status: 400, message: 'context too long' } }],
  },
  steps: [{ text: 'default answer' }],
};

interface Chat {
  choices: { message: { content: string | null; tool_calls?: ToolCallOut[] }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  model: string;
}
interface Chunk {
  choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[];
  usage?: { completion_tokens: number };
}
interface ToolCallOut {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

async function startModel(dir: string, name: string, env: NodeJS.ProcessEnv = {}) {
  const scriptFile = join(dir, `${name}.json`);
  const logFile = join(dir, `${name}.log`);
  await writeFile(scriptFile, JSON.stringify(SCRIPT));
  const base = await startListening(
    [modelFixture, scriptFile, logFile],
    /^model server listening on (http:\/\/127\.0\.0\.1:\d+\/v1)$/m,
    started,
    env,
  );
  return { base, logFile };
}

function post(base: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
  });
}

const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
const user = (content: unknown) => ({ role: 'user', content });
const assistantCall = { role: 'assistant', content: null, tool_calls: [] };

describe('scripted model server', { timeout: 20_000 }, () => {
  let dir: string;
  let base: string;
  let logFile: string;

  before(async () => {
    dir = await tempDir('dmcp-model-');
    ({ base, logFile } = await startModel(dir, 'plain'));
  });
  after(() => killGroups(started));

  const logged = async () => (await readLines(logFile)).map((l) => JSON.parse(l) as Record<string, unknown>);

  test('a tool-call step answers deterministic ids, finish_reason tool_calls and JSON arguments', async () => {
    const body = { model: 'm-1', tools, messages: [{ role: 'system', content: 'be brief' }, user('weather?')] };
    const res = await post(base, body);
    assert.equal(res.status, 200);
    const chat = (await res.json()) as Chat;
    assert.equal(chat.model, 'm-1');
    const [choice] = chat.choices;
    assert.equal(choice!.finish_reason, 'tool_calls');
    assert.equal(choice!.message.content, null);
    const [call] = choice!.message.tool_calls!;
    assert.match(call!.id, /^call_[0-9a-f]{6}_0_0$/);
    assert.equal(call!.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call!.function.arguments), { city: 'Oslo', days: 2 });
    assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);
    const again = (await (await post(base, body)).json()) as Chat;
    assert.equal(again.choices[0]!.message.tool_calls![0]!.id, call!.id, 'a retried step keeps its ids');
    const line = (await logged()).find((l) => l.key === 'weather' && l.n === 1);
    assert.deepEqual(
      { step: line?.step, stream: line?.stream, status: line?.status, tools: line?.tools, system: line?.system },
      { step: 0, stream: false, status: 200, tools: ['get_weather'], system: 'be brief' },
    );
  });

  test('after one assistant message the next step answers text with finish_reason stop', async () => {
    const messages = [user('weather?'), assistantCall, { role: 'tool', tool_call_id: 'x', content: '12 C' }];
    const chat = (await (await post(base, { model: 'm', messages })).json()) as Chat;
    assert.equal(chat.choices[0]!.message.content, 'Sunny in Oslo.');
    assert.equal(chat.choices[0]!.finish_reason, 'stop');
    assert.equal(chat.choices[0]!.message.tool_calls, undefined);
    const line = (await logged()).find((l) => l.key === 'weather' && l.step === 1);
    assert.deepEqual(line?.toolResults, ['12 C']);
  });

  test('a streamed text step reassembles to the text, then a usage chunk and [DONE]', async () => {
    const body = {
      model: 'm',
      stream: true,
      stream_options: { include_usage: true },
      messages: [user([{ type: 'text', text: 'please stream me' }])],
    };
    const res = await post(base, body);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = (await res.text()).split('\n\n').filter(Boolean);
    assert.equal(events.at(-1), 'data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')) as Chunk);
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    assert.ok(chunks.length > 5, 'the text comes in several chunks');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.equal(text, STREAMED);
    assert.equal(chunks.at(-2)!.choices[0]!.finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1)!.choices, []);
    assert.ok(chunks.at(-1)!.usage!.completion_tokens >= 1);
  });

  test('fail answers 429 with Retry-After first, then the step; the log counts the tries', async () => {
    const body = { model: 'm', messages: [user('a flaky one')] };
    const first = await post(base, body);
    assert.equal(first.status, 429);
    assert.equal(first.headers.get('retry-after'), '1');
    assert.equal(((await first.json()) as { error: { message: string } }).error.message, 'slow down');
    const second = await post(base, body);
    assert.equal(second.status, 200);
    assert.equal(((await second.json()) as Chat).choices[0]!.message.content, 'made it');
    const lines = (await logged()).filter((l) => l.key === 'flaky');
    assert.deepEqual(
      lines.map((l) => [l.n, l.status]),
      [
        [1, 429],
        [2, 200],
      ],
    );
  });

  test('always answers its error on every try', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await post(base, { model: 'm', messages: [user('refuse this')] });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { error: { message: string } }).error.message, 'context too long');
    }
  });

  test('a step past the end of the script answers 500 naming the step', async () => {
    const messages = [user('weather?'), assistantCall, assistantCall];
    const res = await post(base, { model: 'm', messages });
    assert.equal(res.status, 500);
    assert.match(await res.text(), /script has no step 2 for weather/);
    const fallback = (await (await post(base, { model: 'm', messages: [user('hi')] })).json()) as Chat;
    assert.equal(fallback.choices[0]!.message.content, 'default answer');
  });

  test('bad JSON is 400 and other routes are 404', async () => {
    const bad = await fetch(`${base}/chat/completions`, { method: 'POST', body: '{nope' });
    assert.equal(bad.status, 400);
    assert.equal((await fetch(`${base}/models`)).status, 404);
  });

  test('with MODEL_KEY a wrong key gets 401 and the key is never logged', async () => {
    const keyed = await startModel(dir, 'keyed', { MODEL_KEY: 'sk-secret-123' });
    const body = { model: 'm', messages: [user('hi')] };
    const wrong = await post(keyed.base, body, { authorization: 'Bearer nope' });
    assert.equal(wrong.status, 401);
    assert.deepEqual(await wrong.json(), { error: { message: 'invalid api key', type: 'invalid_request_error' } });
    assert.equal((await post(keyed.base, body)).status, 401);
    const right = await post(keyed.base, body, { authorization: 'Bearer sk-secret-123' });
    assert.equal(right.status, 200);
    const log = (await readLines(keyed.logFile)).join('\n');
    assert.doesNotMatch(log, /sk-secret|nope/);
    assert.deepEqual(
      (await readLines(keyed.logFile)).map((l) => (JSON.parse(l) as { status: number }).status),
      [401, 401, 200],
    );
  });
});
