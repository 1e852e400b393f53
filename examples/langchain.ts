/**
 * LangChain.js driving a durable turn against server-everything: the usual tool loop (model, tool
 * calls, tool messages, model) with @langchain/core's fake chat models scripted to call two tools,
 * so it runs without network or keys:
 *
 *   npm run build && node dist/examples/langchain.js
 *
 * With a real model, replace `scriptedModel()` with e.g. `new ChatOpenAI({ model: 'gpt-4.1' }).bindTools(tools)`
 * (from `@langchain/openai`) and keep the rest. Copied with connect.ts into your project, it runs as it is.
 */
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { RunnableLambda } from '@langchain/core/runnables';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { structuredTools, turnBriefing, withDurableTurn, type DurableStructuredTool } from 'durable-mcp/langchain';
import { describeResult, everythingSpec, exampleSession } from './connect.js';

/**
 * A model that calls echo and get-tiny-image, then answers. @langchain/core's fake chat models
 * answer every request alike, so each step is its own fake, taken in turn.
 */
function scriptedModel(_tools: DurableStructuredTool[]) {
  const steps = [
    new FakeStreamingChatModel({
      responses: [new AIMessage('')],
      chunks: [
        new AIMessageChunk({
          content: '',
          tool_calls: [
            { id: 'call_echo', name: 'mcp__everything__echo', args: { message: 'hello durable' }, type: 'tool_call' },
            { id: 'call_image', name: 'mcp__everything__get-tiny-image', args: {}, type: 'tool_call' },
          ],
        }),
      ],
    }),
    new FakeStreamingChatModel({
      responses: [new AIMessage('The server echoed "hello durable" and sent a tiny PNG.')],
    }),
  ];
  let next = 0;
  return RunnableLambda.from((messages: BaseMessage[]) => steps[Math.min(next++, steps.length - 1)]!.invoke(messages));
}

const session = await exampleSession();
try {
  const { value: messages, turn } = await withDurableTurn(
    session.client,
    { sessionId: `example-langchain-${Date.now()}`, servers: { inlineSpecs: [everythingSpec] } },
    async (durable) => {
      const { system } = turnBriefing(durable, 'You are a helpful assistant.');
      process.stdout.write(`System prompt:\n${system}\n\n`);
      const tools = structuredTools(durable);
      const byName = new Map(tools.map((t) => [t.name, t]));
      const model = scriptedModel(tools);
      const messages: BaseMessage[] = [
        new SystemMessage(system),
        new HumanMessage('Echo "hello durable", then show me the tiny image.'),
      ];
      for (let step = 0; step < 5; step += 1) {
        const reply = await model.invoke(messages);
        messages.push(reply);
        if (!reply.tool_calls?.length) break;
        for (const call of reply.tool_calls)
          messages.push(await byName.get(call.name)!.invoke({ ...call, type: 'tool_call' }));
      }
      return messages;
    },
  );
  process.stdout.write('What the model read:\n');
  for (const m of messages) {
    if (m.type !== 'tool') continue;
    const blocks = m.content as { type: string; text?: string; mimeType?: string; data?: string }[];
    const text = blocks.flatMap((b) => (b.type === 'text' && b.text ? [b.text] : [])).join(' ');
    const images = blocks.flatMap((b) =>
      b.type === 'image' ? [{ mediaType: b.mimeType ?? '', data: b.data ?? '' }] : [],
    );
    process.stdout.write(
      `${describeResult((m as { tool_call_id?: string }).tool_call_id ?? '', m.name ?? '', text, images)}\n`,
    );
  }
  process.stdout.write(`Model: ${String(messages[messages.length - 1]?.content)}\n`);
  process.stdout.write(
    `Turn ${turn.turnId} ended (${turn.endedBy}), ${turn.calls.length} calls recorded (see it again: npx durable-mcp transcript ${turn.turnId})\n`,
  );
} finally {
  await session.close();
}
