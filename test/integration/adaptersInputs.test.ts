/**
 * A framework run whose tool asks a person: the adapter's `onInput` answers each question as it is
 * asked and the model reads the outcome. Real Temporal, the AI SDK's own mock model, a real
 * 2026-era server over HTTP.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { toolSet } from '../../adapters/aiSdk.js';
import type { InputAnswer, InputHandler } from '../../client/turnClient.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';
import { killStartedServers, modernHttpServer, provisionLog } from '../support/inputs.js';

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
const usage: GenerateResult['usage'] = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

describe('adapters answer the questions a tool asks', { timeout: 90_000 }, () => {
  let h: Harness;
  let dir: string;
  let logFile: string;
  let file: string;

  before(async () => {
    dir = await tempDir('dmcp-adapter-inputs-');
    logFile = join(dir, 'server.log');
    const url = await modernHttpServer(logFile);
    file = join(dir, 'mcp.json');
    await writeFile(file, JSON.stringify({ mcpServers: { db: { url } } }));
    h = await startHarness('adapter-inputs');
  });
  after(async () => {
    killStartedServers();
    await h?.stop();
  });

  test('AI SDK: onInput answers both rounds, a refused answer is asked again with the reason, the model reads the outcome', async () => {
    const turn = await h.client.startTurn({ sessionId: `adapter-inputs-${randomBytes(4).toString('hex')}`, workspace: dir, servers: { mcpConfigFiles: [file] } });
    const model = new MockLanguageModelV3({
      doGenerate: [
        { content: [{ type: 'tool-call', toolCallId: 'toolu_ai', toolName: 'mcp__db__provision', input: '{}' }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] },
        { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
      ],
    });
    const asked: [string, string | undefined][] = [];
    const onInput: InputHandler = (request, { refused }): InputAnswer => {
      asked.push([request.requestId, refused]);
      if (request.key === 'name') return { action: 'accept', content: { name: refused ? 'adapter-db' : 'x' } };
      return { action: 'accept', content: { confirm: true } };
    };
    await generateText({ model, prompt: 'Provision.', tools: toolSet(turn, { onInput, inputPollMs: 100 }), stopWhen: stepCountIs(2) });
    assert.equal(asked[0]![0], 'toolu_ai:1:name');
    assert.equal(asked[0]![1], undefined);
    assert.equal(asked[1]![0], 'toolu_ai:1:name', 'asked again after the turn refused the short name');
    assert.match(asked[1]![1] ?? '', /name/, 'with the reason naming the field');
    assert.deepEqual(asked.slice(2).map((a) => a[0]), ['toolu_ai:2:confirm']);
    const prompt = JSON.stringify(model.doGenerateCalls[1]!.prompt);
    assert.match(prompt, /Provisioned adapter-db/, 'the model reads the outcome');
    assert.equal((await provisionLog(logFile)).filter((e) => e.completed === true).length, 1, 'the server completed once');
    await turn.end();
  });
});
