/**
 * The framework adapters' pure parts and their call plumbing, on a stand-in Turn: what each
 * framework hands the model for each kind of outcome, the tool definitions, the tool-call ID
 * as the call ID, and cancellation on abort (including an abort that comes before the workflow
 * has started the call). The real turn, servers and frameworks' loops are in
 * test/integration/adapters*.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RunContext } from '@openai/agents-core';
import type { Turn } from '../../client/turnClient.js';
import type { CallOutcome, ToolInfo } from '../../contract/index.js';
import { DEFAULT_SHAPE_LIMITS, shapeForModel } from '../../shaping/index.js';
import { modelOutput, toolSet } from '../../adapters/aiSdk.js';
import { functionToolName, functionTools, toolOutput } from '../../adapters/openaiAgents.js';
import { structuredTools, toolMessage } from '../../adapters/langchain.js';
import {
  CallAbortedError,
  MissingToolCallIdError,
  objectSchema,
  runDurableCall,
  turnBriefing,
  type DurableToolResult,
} from '../../adapters/durableCall.js';
import { smallImage } from './fixtures-images.js';

const base = { startedAt: '2026-01-01T00:00:00.000Z', durationMs: 5, attempts: 1 };

async function result(outcome: CallOutcome): Promise<DurableToolResult> {
  return { outcome, model: await shapeForModel(outcome, DEFAULT_SHAPE_LIMITS) };
}

const png = async () => (await smallImage('png')).toString('base64');

/** Each kind of outcome, and what each framework must hand the model for it. */
const cases: { name: string; outcome: () => Promise<CallOutcome>; failed: boolean; images: number; text: RegExp }[] = [
  {
    name: 'text',
    outcome: async () => ({ ...base, status: 'ok', isError: false, content: [{ type: 'text', text: 'hello' }] }),
    failed: false,
    images: 0,
    text: /<toolOutput>\nhello\n<\/toolOutput>/,
  },
  {
    name: 'tool error (isError)',
    outcome: async () => ({ ...base, status: 'ok', isError: true, content: [{ type: 'text', text: 'no such file' }] }),
    failed: true,
    images: 0,
    text: /The tool reported an error:\nno such file/,
  },
  {
    name: 'transport failure',
    outcome: async () => ({
      ...base,
      status: 'error',
      isError: false,
      content: [],
      errorKind: 'unknown_result',
      errorMessage: 'the worker was lost; it may have had an effect',
    }),
    failed: true,
    images: 0,
    text: /Tool call failed: the worker was lost/,
  },
  {
    name: 'image',
    outcome: async () => ({
      ...base,
      status: 'ok',
      isError: false,
      content: [
        { type: 'text', text: 'a picture' },
        { type: 'image', data: await png(), mimeType: 'image/png' },
      ],
    }),
    failed: false,
    images: 1,
    text: /1 image \(content\[1\]\) follows/,
  },
  {
    name: 'tool error with an image',
    outcome: async () => ({
      ...base,
      status: 'ok',
      isError: true,
      content: [{ type: 'image', data: await png(), mimeType: 'image/png' }],
    }),
    failed: true,
    images: 1,
    text: /The tool reported an error:/,
  },
];

describe('what each framework hands the model', () => {
  for (const c of cases) {
    test(`AI SDK: ${c.name}`, async () => {
      const r = await result(await c.outcome());
      const out = modelOutput(r);
      if (c.images === 0) {
        assert.equal(out.type, c.failed ? 'error-text' : 'text');
        assert.match((out as { value: string }).value, c.text);
      } else {
        assert.equal(out.type, 'content');
        const value = (out as { value: { type: string; text?: string; data?: string; mediaType?: string }[] }).value;
        assert.match(value[0]!.text ?? '', c.text);
        assert.deepEqual(
          value.slice(1).map((v) => [v.type, v.mediaType, v.data]),
          r.model.images.map((i) => ['image-data', 'image/png', i.data]),
        );
      }
    });

    test(`OpenAI Agents: ${c.name}`, async () => {
      const r = await result(await c.outcome());
      const out = toolOutput(r);
      assert.equal(out[0]!.type, 'text');
      assert.match((out[0] as { text: string }).text, c.text);
      assert.deepEqual(
        out.slice(1),
        r.model.images.map((i) => ({ type: 'image', image: { data: i.data, mediaType: 'image/png' } })),
      );
      assert.equal(out.length, 1 + c.images);
    });

    test(`LangChain: ${c.name}`, async () => {
      const r = await result(await c.outcome());
      const m = toolMessage('mcp__s__t', 'call_9', r);
      assert.equal(m.tool_call_id, 'call_9');
      assert.equal(m.name, 'mcp__s__t');
      assert.equal(m.status, c.failed ? 'error' : 'success');
      assert.equal(m.artifact, r, 'the whole result rides along as the artifact');
      const blocks = m.content as { type: string; text?: string; mimeType?: string; data?: string }[];
      assert.match(blocks[0]!.text ?? '', c.text);
      assert.deepEqual(
        blocks.slice(1),
        r.model.images.map((i) => ({ type: 'image', mimeType: 'image/png', data: i.data })),
      );
    });
  }
});

test('objectSchema: an MCP input schema as a tool parameter schema', () => {
  const rows: [Record<string, unknown>, Record<string, unknown>][] = [
    [{ type: 'object' }, { type: 'object', properties: {} }],
    [{}, { type: 'object', properties: {} }],
    [
      { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
      { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
    ],
  ];
  for (const [input, expected] of rows) assert.deepEqual(objectSchema(input), expected);
});

test('turnBriefing: the instructions, then the servers paragraph', () => {
  const turn = {
    serversParagraph: 'MCP servers for this turn:\n- s: connected',
    status: { mcp: 'on' as const, servers: [], warnings: [], reportedAt: 'now' },
  };
  assert.equal(turnBriefing(turn, 'Be brief.\n').system, 'Be brief.\n\nMCP servers for this turn:\n- s: connected');
  assert.equal(turnBriefing(turn).system, turn.serversParagraph);
  assert.equal(turnBriefing(turn, 'x').status, turn.status);
});

test('functionToolName: what the OpenAI Agents SDK names a tool', () => {
  assert.equal(functionToolName('mcp__everything__get-tiny-image'), 'mcp__everything__get_tiny_image');
  assert.equal(functionToolName('mcp__a_b__c.d'), 'mcp__a_b__c_d');
});

// --- the call plumbing, on a stand-in Turn ---

const tools: ToolInfo[] = [
  {
    name: 'mcp__s__echo',
    server: 's',
    tool: 'echo',
    description: 'Echoes.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  },
  { name: 'mcp__s__get-x', server: 's', tool: 'get-x', description: 'Gets x.', inputSchema: { type: 'object' } },
];

interface FakeTurn {
  turn: Turn;
  requests: { id: string; name: string; arguments?: Record<string, unknown> }[];
  cancels: string[];
  finish(): void;
}

/** A Turn whose calls stay open until `finish()`, and whose cancelCall finds the call only on the `findsOnTry`-th try. */
function fakeTurn(toolList: ToolInfo[] = tools, findsOnTry = 1): FakeTurn {
  const requests: FakeTurn['requests'] = [];
  const cancels: string[] = [];
  let release: () => void = () => undefined;
  const open = new Promise<void>((resolve) => (release = resolve));
  const turn = {
    tools: toolList,
    serversParagraph: 'servers',
    status: { mcp: 'on', servers: [], warnings: [], reportedAt: 'now' },
    async callToolForModel(request: FakeTurn['requests'][number]) {
      requests.push(request);
      await open;
      return result({ ...base, status: 'ok', isError: false, content: [{ type: 'text', text: `ran ${request.id}` }] });
    },
    async cancelCall(id: string) {
      cancels.push(id);
      if (cancels.length < findsOnTry) return false;
      release();
      return true;
    },
  } as unknown as Turn;
  return { turn, requests, cancels, finish: () => release() };
}

describe('runDurableCall', () => {
  test('the request goes out with the given ID; without an abort nothing is cancelled', async () => {
    const f = fakeTurn();
    const pending = runDurableCall(
      f.turn,
      { id: 'call_1', name: 'mcp__s__echo', arguments: { text: 'x' } },
      new AbortController().signal,
    );
    f.finish();
    assert.match((await pending).model.text, /ran call_1/);
    assert.deepEqual(f.requests, [{ id: 'call_1', name: 'mcp__s__echo', arguments: { text: 'x' } }]);
    assert.deepEqual(f.cancels, []);
  });

  test('an abort before the call is sent: nothing is sent', async () => {
    const f = fakeTurn();
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      runDurableCall(f.turn, { id: 'call_1', name: 'mcp__s__echo' }, controller.signal),
      CallAbortedError,
    );
    assert.deepEqual(f.requests, []);
  });

  test('an abort while the workflow has not started the call yet: the cancellation is sent again until it lands', async () => {
    const f = fakeTurn(tools, 3);
    const controller = new AbortController();
    const pending = runDurableCall(f.turn, { id: 'call_2', name: 'mcp__s__echo' }, controller.signal);
    controller.abort();
    await pending;
    assert.deepEqual(f.cancels, ['call_2', 'call_2', 'call_2']);
  });
});

describe('the tools each adapter builds', () => {
  test('AI SDK: description and JSON schema from MCP; execute sends the toolCallId as the call ID', async () => {
    const f = fakeTurn();
    const set = toolSet(f.turn);
    assert.deepEqual(Object.keys(set), ['mcp__s__echo', 'mcp__s__get-x']);
    const echo = set.mcp__s__echo!;
    assert.equal(echo.description, 'Echoes.');
    assert.deepEqual((echo.inputSchema as { jsonSchema: unknown }).jsonSchema, {
      type: 'object',
      properties: { text: { type: 'string' } },
    });
    const pending = echo.execute!({ text: 'hi' }, { toolCallId: 'toolu_7', messages: [] });
    f.finish();
    assert.match(((await pending) as DurableToolResult).model.text, /ran toolu_7/);
    assert.deepEqual(f.requests, [{ id: 'toolu_7', name: 'mcp__s__echo', arguments: { text: 'hi' } }]);
    assert.deepEqual(Object.keys(toolSet(f.turn, { filter: (t) => t.tool === 'get-x' })), ['mcp__s__get-x']);
  });

  test('OpenAI Agents: non-strict function tools; the callId is the call ID; no callId is an error the model reads', async () => {
    const f = fakeTurn();
    const [echo] = functionTools(f.turn);
    assert.equal(echo!.name, 'mcp__s__echo');
    assert.equal(echo!.strict, false);
    assert.deepEqual(echo!.parameters, { type: 'object', properties: { text: { type: 'string' } } });
    const context = new RunContext();
    const pending = echo!.invoke(context, JSON.stringify({ text: 'hi' }), {
      toolCall: { type: 'function_call', callId: 'fc_1', name: 'mcp__s__echo', arguments: '{"text":"hi"}' },
    });
    f.finish();
    assert.match(JSON.stringify(await pending), /ran fc_1/);
    assert.deepEqual(f.requests, [{ id: 'fc_1', name: 'mcp__s__echo', arguments: { text: 'hi' } }]);
    const withoutId = await echo!.invoke(context, '{}');
    assert.match(String(withoutId), /without a tool-call ID/);
  });

  test('OpenAI Agents: two tools the SDK would give one name are refused, naming both', () => {
    const clash: ToolInfo[] = [tools[1]!, { ...tools[1]!, name: 'mcp__s__get_x', tool: 'get_x' }];
    assert.throws(
      () => functionTools(fakeTurn(clash).turn),
      /mcp__s__get-x and mcp__s__get_x would both be named mcp__s__get_x/,
    );
  });

  test("LangChain: structured tools; the tool call's id is the call ID; bare arguments are refused", async () => {
    const f = fakeTurn();
    const [echo] = structuredTools(f.turn);
    assert.equal(echo!.name, 'mcp__s__echo');
    assert.equal(echo!.description, 'Echoes.');
    const pending = echo!.invoke({ id: 'lc_1', name: 'mcp__s__echo', args: { text: 'hi' }, type: 'tool_call' });
    f.finish();
    const message = await pending;
    assert.equal(message.tool_call_id, 'lc_1');
    assert.deepEqual(f.requests, [{ id: 'lc_1', name: 'mcp__s__echo', arguments: { text: 'hi' } }]);
    await assert.rejects(echo!.invoke({ text: 'hi' }), MissingToolCallIdError);
  });
});
