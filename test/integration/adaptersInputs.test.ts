/**
 * A framework run whose tool asks a person: the adapter's `onInput` answers each question as it is
 * asked and the model reads the outcome. Real Temporal, each framework's own scripted model, a real
 * 2026-era server over HTTP and server-everything (2025-era) over stdio.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { Agent, Runner } from '@openai/agents-core';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents-core/testing';
import { ToolMessage } from '@langchain/core/messages';
import { toolSet } from '../../adapters/aiSdk.js';
import { functionToolName, functionTools } from '../../adapters/openaiAgents.js';
import { structuredTools } from '../../adapters/langchain.js';
import type { InputAnswer, InputHandler } from '../../client/turnClient.js';
import { everythingServer, startHarness, tempDir, type Harness } from '../support/harness.js';
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
  let legacyFile: string;

  before(async () => {
    dir = await tempDir('dmcp-adapter-inputs-');
    logFile = join(dir, 'server.log');
    const url = await modernHttpServer(logFile);
    file = join(dir, 'mcp.json');
    await writeFile(file, JSON.stringify({ mcpServers: { db: { url } } }));
    legacyFile = join(dir, 'legacy.json');
    await writeFile(
      legacyFile,
      JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everythingServer, 'stdio'] } } }),
    );
    h = await startHarness('adapter-inputs');
  });
  after(async () => {
    killStartedServers();
    await h?.stop();
  });

  test('AI SDK: onInput answers both rounds, a refused answer is asked again with the reason, the model reads the outcome', async () => {
    const turn = await h.client.startTurn({
      sessionId: `adapter-inputs-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [{ type: 'tool-call', toolCallId: 'toolu_ai', toolName: 'mcp__db__provision', input: '{}' }],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        },
        {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage,
          warnings: [],
        },
      ],
    });
    const asked: [string, string | undefined][] = [];
    const onInput: InputHandler = (request, { refused }): InputAnswer => {
      asked.push([request.requestId, refused]);
      if (request.key === 'name') return { action: 'accept', content: { name: refused ? 'adapter-db' : 'x' } };
      return { action: 'accept', content: { confirm: true } };
    };
    await generateText({
      model,
      prompt: 'Provision.',
      tools: toolSet(turn, { onInput, inputPollMs: 100 }),
      stopWhen: stepCountIs(2),
    });
    assert.equal(asked[0]![0], 'toolu_ai:1:name');
    assert.equal(asked[0]![1], undefined);
    assert.equal(asked[1]![0], 'toolu_ai:1:name', 'asked again after the turn refused the short name');
    assert.match(asked[1]![1] ?? '', /name/, 'with the reason naming the field');
    assert.deepEqual(
      asked.slice(2).map((a) => a[0]),
      ['toolu_ai:2:confirm'],
    );
    const prompt = JSON.stringify(model.doGenerateCalls[1]!.prompt);
    assert.match(prompt, /Provisioned adapter-db/, 'the model reads the outcome');
    assert.equal(
      (await provisionLog(logFile)).filter((e) => e.completed === true).length,
      1,
      'the server completed once',
    );
    await turn.end();
  });

  /** Answers `provision`'s two rounds, the name first too short, and records what was asked. */
  function provisionAnswers(): { asked: [string, string | undefined][]; onInput: InputHandler } {
    const asked: [string, string | undefined][] = [];
    return {
      asked,
      onInput: (request, { refused }): InputAnswer => {
        asked.push([request.requestId, refused]);
        if (request.key === 'name') return { action: 'accept', content: { name: refused ? 'framework-db' : 'x' } };
        return { action: 'accept', content: { confirm: true } };
      },
    };
  }

  test('OpenAI Agents: onInput answers both rounds, a refused answer is asked again, the model reads the outcome', async () => {
    const turn = await h.client.startTurn({
      sessionId: `adapter-inputs-oa-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const { asked, onInput } = provisionAnswers();
    const model = new ScriptedModel([
      [functionCall(functionToolName('mcp__db__provision'), {}, { callId: 'call_oa' })],
      [assistantMessage('done')],
    ]);
    const agent = new Agent({
      name: 'durable',
      instructions: 'Provision.',
      model,
      tools: functionTools(turn, { onInput, inputPollMs: 100 }),
    });
    await new Runner({ tracingDisabled: true }).run(agent, 'Provision.', { maxTurns: 3 });
    assert.deepEqual(
      asked.map((a) => a[0]),
      ['call_oa:1:name', 'call_oa:1:name', 'call_oa:2:confirm'],
    );
    assert.match(asked[1]![1] ?? '', /name/, 'asked again with the reason naming the field');
    assert.match(
      JSON.stringify(model.calls[1]!.request.input),
      /Provisioned framework-db/,
      'the model reads the outcome',
    );
    await turn.end();
  });

  test('LangChain: onInput answers both rounds of a 2026-era server and the question a 2025-era server asks mid-call', async () => {
    const turn = await h.client.startTurn({
      sessionId: `adapter-inputs-lc-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file, legacyFile] },
    });
    const { asked, onInput } = provisionAnswers();
    const legacyAsked: string[] = [];
    const tools = new Map(
      structuredTools(turn, {
        inputPollMs: 100,
        onInput: (request, info) => {
          if (request.tool !== 'mcp__everything__trigger-elicitation-request') return onInput(request, info);
          legacyAsked.push(request.requestId);
          return { action: 'accept', content: { name: 'Grace' } };
        },
      }).map((t) => [t.name, t]),
    );
    const modern = await tools
      .get('mcp__db__provision')!
      .invoke({ id: 'lc_1', name: 'mcp__db__provision', args: {}, type: 'tool_call' });
    assert.ok(ToolMessage.isInstance(modern));
    assert.match(JSON.stringify(modern.content), /Provisioned framework-db/);
    assert.deepEqual(
      asked.map((a) => a[0]),
      ['lc_1:1:name', 'lc_1:1:name', 'lc_1:2:confirm'],
    );
    const legacy = await tools
      .get('mcp__everything__trigger-elicitation-request')!
      .invoke({ id: 'lc_2', name: 'mcp__everything__trigger-elicitation-request', args: {}, type: 'tool_call' });
    assert.match(JSON.stringify(legacy.content), /User provided the requested information/);
    assert.match(JSON.stringify(legacy.content), /Grace/);
    assert.deepEqual(legacyAsked, ['lc_2:1:elicitation']);
    await turn.end();
  });
});
