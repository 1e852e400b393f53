/**
 * The AI SDK driving a durable turn against server-everything, with the SDK's mock model scripted
 * to call two tools, so it runs without network or keys:
 *
 *   npm run build && node dist/examples/aiSdk.js
 *
 * With a real model, replace `scriptedModel()` with e.g. `anthropic('claude-sonnet-4-5')` (from
 * `@ai-sdk/anthropic`) and keep the rest. Copied with connect.ts into your project, it runs as it is.
 */
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { toolSet, turnBriefing, withDurableTurn } from 'durable-mcp/ai-sdk';
import { describeResult, everythingSpec, exampleSession } from './connect.js';

type Step = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
const usage: Step['usage'] = {
  inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: undefined, text: undefined, reasoning: undefined },
};

/** A model that calls echo and get-tiny-image, then answers. */
function scriptedModel(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: [
      {
        content: [
          {
            type: 'tool-call',
            toolCallId: 'call_echo',
            toolName: 'mcp__everything__echo',
            input: JSON.stringify({ message: 'hello durable' }),
          },
          { type: 'tool-call', toolCallId: 'call_image', toolName: 'mcp__everything__get-tiny-image', input: '{}' },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      },
      {
        content: [{ type: 'text', text: 'The server echoed "hello durable" and sent a tiny PNG.' }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      },
    ],
  });
}

const session = await exampleSession();
try {
  const { value: result, turn } = await withDurableTurn(
    session.client,
    { sessionId: `example-ai-sdk-${Date.now()}`, servers: { inlineSpecs: [everythingSpec] } },
    (durable) => {
      const { system } = turnBriefing(durable, 'You are a helpful assistant.');
      process.stdout.write(`System prompt:\n${system}\n\n`);
      return generateText({
        model: scriptedModel(),
        system,
        prompt: 'Echo "hello durable", then show me the tiny image.',
        tools: toolSet(durable),
        stopWhen: stepCountIs(5),
      });
    },
  );
  process.stdout.write('What the model read:\n');
  for (const message of result.response.messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const { output } = part;
      const text =
        output.type === 'content'
          ? output.value.flatMap((v) => (v.type === 'text' ? [v.text] : [])).join(' ')
          : 'value' in output
            ? String(output.value)
            : output.type;
      const images =
        output.type === 'content'
          ? output.value.flatMap((v) => (v.type === 'image-data' ? [{ mediaType: v.mediaType, data: v.data }] : []))
          : [];
      process.stdout.write(`${describeResult(part.toolCallId, part.toolName, text, images)}\n`);
    }
  }
  process.stdout.write(`Model: ${result.text}\n`);
  process.stdout.write(
    `Turn ${turn.turnId} ended (${turn.endedBy}), ${turn.calls.length} calls recorded (see it again: npx durable-mcp transcript ${turn.turnId})\n`,
  );
} finally {
  await session.close();
}
