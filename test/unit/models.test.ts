/** The pure parts of model turns, table-driven: models.json, what a failed model request means, a turn's model input, the conversation store. */
import assert from 'node:assert/strict';
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseModelsFile } from '../../models/modelsFile.js';
import { classifyModelError, retryAfter, MAX_RETRY_AFTER_MS } from '../../models/modelErrors.js';
import { closeDangling, systemPrompt } from '../../models/modelStep.js';
import { ConversationError, ConversationStore } from '../../models/conversationStore.js';
import { createPayloadCodecs, FilesystemStorageDriver } from '../../payloads/dataConverter.js';
import { modelTurnProblem } from '../../workflows/bounds.js';
import { modelOutput } from '../../shaping/modelOutput.js';
import type { CallOutcome } from '../../contract/index.js';

const FILE = '/etc/dmcp/models.json';

test('models.json: good entries are kept, each bad one is refused alone, naming file, line and field', () => {
  const text = `{
  "instructions": "Be brief.",
  "models": {
    "gpt": { "provider": "openai", "model": "gpt-4o-mini" },
    "local": { "provider": "openai-compatible", "model": "qwen", "baseURL": "http://127.0.0.1:8000/v1" },
    "leaky": { "provider": "openai", "model": "x", "apiKey": "sk-abc" },
    "nourl": { "provider": "openai-compatible", "model": "x" },
    "odd": { "provider": "cohere", "model": "x" },
    "creds": { "provider": "anthropic", "model": "x", "baseURL": "https://u:p@example.com/v1" },
    "bad name!": { "provider": "openai", "model": "x" },
    "env": { "provider": "openai", "model": "x", "apiKeyEnv": "1BAD" }
  },
  "extra": true
}`;
  const parsed = parseModelsFile(text, FILE);
  assert.deepEqual([...parsed.models.keys()], ['gpt', 'local']);
  assert.equal(parsed.instructions, 'Be brief.');
  assert.equal(parsed.models.get('local')?.source, `${FILE}:5`);
  const expected: [RegExp, string][] = [
    [/:6: model "leaky" refused: "apiKey" would put a secret in the file/, 'a key in the file'],
    [/:7: model "nourl" refused: "baseURL" is required/, 'openai-compatible needs a URL'],
    [
      /:8: model "odd" refused: "provider" "cohere" is not one of openai, anthropic, openai-compatible/,
      'unknown provider',
    ],
    [/:9: model "creds" refused: "baseURL" must not carry credentials/, 'credentials in the URL'],
    [/:10: model "bad name!" refused: a model name is/, 'bad name'],
    [/:11: model "env" refused: "apiKeyEnv" "1BAD" is not a variable name/, 'bad variable name'],
    [/:13: unknown top-level field "extra" ignored/, 'unknown top-level field'],
  ];
  for (const [pattern, what] of expected)
    assert.ok(
      parsed.problems.some((p) => pattern.test(p)),
      `${what}: ${parsed.problems.join('\n')}`,
    );
  assert.ok(!parsed.problems.join('\n').includes('sk-abc'), 'a refused key is never repeated');
  assert.ok(!parsed.problems.join('\n').includes('u:p@'), 'credentials in a URL are never repeated');
});

test('models.json: a file that is not JSON, or not an object, refuses every model and says where', () => {
  for (const [text, pattern] of [
    ['{"models": {', /models\.json:1: /],
    ['[]', /models\.json:1: the top level is an array/],
    ['{"models": []}', /"models" is an array/],
  ] as const) {
    const parsed = parseModelsFile(text, FILE);
    assert.equal(parsed.models.size, 0);
    assert.match(parsed.problems.join('\n'), pattern);
  }
});

test('a failed model request: rate limits and server errors are retried, after Retry-After; other 4xx end the turn', () => {
  const now = Date.parse('2026-12-07T12:00:00Z');
  const cases: [unknown, boolean, number | undefined, RegExp][] = [
    [
      { statusCode: 429, message: 'slow down', responseHeaders: { 'retry-after': '3' } },
      true,
      3000,
      /answered 429: slow down$/,
    ],
    [
      { statusCode: 503, message: 'busy', responseHeaders: { 'retry-after': 'Mon, 07 Dec 2026 12:00:10 GMT' } },
      true,
      10_000,
      /503/,
    ],
    [{ statusCode: 500, message: 'oops' }, true, undefined, /500: oops/],
    [{ statusCode: 408, message: 'timeout' }, true, undefined, /408/],
    [{ statusCode: 429, message: 'x', responseHeaders: { 'retry-after': '86400' } }, true, MAX_RETRY_AFTER_MS, /429/],
    [
      { statusCode: 200, message: 'Failed to process successful response' },
      true,
      undefined,
      /the answer broke off: Failed to process/,
    ],
    [{ statusCode: 400, message: 'context too long' }, false, undefined, /400: context too long \(not retried/],
    [{ statusCode: 401, message: 'bad key', responseHeaders: { 'retry-after': '3' } }, false, undefined, /401/],
    [
      new TypeError('fetch failed'),
      true,
      undefined,
      /the request failed: TypeError: fetch failed|the request failed: fetch failed/,
    ],
  ];
  for (const [err, retryable, after, message] of cases) {
    const failure = classifyModelError(err, 'm', now);
    assert.equal(failure.retryable, retryable, JSON.stringify(err));
    assert.equal(failure.retryAfterMs, after, JSON.stringify(err));
    assert.match(failure.message, message);
  }
  assert.equal(retryAfter({ 'retry-after': 'soon' }, now), undefined);
  assert.equal(retryAfter({ 'retry-after': '-1' }, now), undefined);
});

test("a turn's model input: only a name, a prompt and the loop's bounds; never a key or an endpoint", () => {
  const ok = { name: 'gpt', prompt: 'hi' };
  const cases: [unknown, boolean, string | undefined][] = [
    [ok, false, undefined],
    [{ ...ok, maxSteps: 1000, deadlineMs: 1000, conversation: 'a'.repeat(64) }, false, undefined],
    [ok, true, 'calls'],
    [{ ...ok, apiKey: 'sk' }, false, 'model.apiKey'],
    [{ ...ok, baseURL: 'http://evil' }, false, 'model.baseURL'],
    [{ ...ok, name: '../x' }, false, 'model.name'],
    [{ ...ok, prompt: '' }, false, 'model.prompt'],
    [{ ...ok, prompt: 'x'.repeat(100_001) }, false, 'model.prompt'],
    [{ ...ok, maxSteps: 0 }, false, 'model.maxSteps'],
    [{ ...ok, maxSteps: 1.5 }, false, 'model.maxSteps'],
    [{ ...ok, deadlineMs: 10 }, false, 'model.deadlineMs'],
    [{ ...ok, conversation: 'not-a-digest' }, false, 'model.conversation'],
    ['gpt', false, 'model'],
  ];
  for (const [model, batch, field] of cases)
    assert.equal(modelTurnProblem(model, batch)?.field, field, JSON.stringify(model));
});

test("the system prompt is the operator's instructions, then the servers paragraph", () => {
  assert.equal(systemPrompt(undefined, 'Servers: none.'), 'Servers: none.');
  assert.equal(systemPrompt('  ', 'Servers: none.'), 'Servers: none.');
  assert.equal(systemPrompt('Be brief.\n', 'Servers: none.'), 'Be brief.\n\nServers: none.');
});

test("calls a conversation's last step asked for but never ran get a result before the next prompt", () => {
  const calls = closeDangling([
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 't', input: {} }] },
  ]);
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0]!.content, [
    {
      type: 'tool-result',
      toolCallId: 'c1',
      toolName: 't',
      output: { type: 'error-text', value: 'not run: the turn ended before this call ran' },
    },
  ]);
  assert.deepEqual(closeDangling([{ role: 'assistant', content: 'done' }]), []);
  assert.deepEqual(closeDangling([]), []);
});

test('the conversation store: one node per step, read back as one list, only by its own session', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dmcp-conv-'));
  const codecs = createPayloadCodecs({ encryptionKey: Buffer.alloc(32, 7).toString('base64') });
  const store = new ConversationStore(new FilesystemStorageDriver(dir), codecs);
  let head: string | undefined;
  for (let i = 0; i < 3; i++) {
    head = await store.put({
      kind: 'messages',
      sessionId: 's1',
      ...(head !== undefined ? { parent: head } : {}),
      messages: [{ role: 'user', content: `m${i}` }],
    });
  }
  assert.deepEqual(
    (await store.messages(head, 's1')).map((m) => m.content),
    ['m0', 'm1', 'm2'],
  );
  assert.equal((await readdir(dir)).length, 3, 'one stored node per step');
  // Read by a fresh store (another worker): from the files, through the codecs.
  const other = new ConversationStore(new FilesystemStorageDriver(dir), codecs);
  assert.equal((await other.messages(head, 's1')).length, 3);
  await assert.rejects(other.messages(head, 's2'), ConversationError);
  await assert.rejects(other.get('../etc/passwd', 's1'), /not a conversation reference/);
});

test('the model reads that a person approved its call with other arguments, before the result', () => {
  const outcome: CallOutcome = {
    status: 'ok',
    content: [{ type: 'text', text: 'ran' }],
    isError: false,
    startedAt: '2026-12-08T00:00:00.000Z',
    durationMs: 1,
    attempts: 1,
    approvedArguments: { text: 'edited' },
  };
  const view = { text: 'ran', images: [] } as unknown as Parameters<typeof modelOutput>[1];
  assert.deepEqual(modelOutput(outcome, view), {
    type: 'text',
    value: '(A person approved this call with other arguments, and it ran with them: {"text":"edited"})\nran',
  });
  const { approvedArguments: _, ...asAsked } = outcome;
  assert.deepEqual(modelOutput(asAsked, view), { type: 'text', value: 'ran' });
});
