/**
 * The OpenAI Agents SDK driving a durable turn against server-everything, with the SDK's scripted
 * test model calling two tools, so it runs without network or keys:
 *
 *   npm run build && node dist/examples/openaiAgents.js
 *
 * With a real model, replace `model: scriptedModel()` with `model: 'gpt-4.1'` (OPENAI_API_KEY set)
 * and keep the rest. Copied with connect.ts into your project, it runs as it is.
 */
import { Agent, Runner } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents/testing';
import { functionToolName, functionTools, turnBriefing, withDurableTurn } from 'durable-mcp/openai-agents';
import { describeResult, everythingSpec, exampleSession } from './connect.js';

/** A model that calls echo and get-tiny-image, then answers. */
function scriptedModel(): ScriptedModel {
  return new ScriptedModel([
    [
      functionCall(functionToolName('mcp__everything__echo'), { message: 'hello durable' }, { callId: 'call_echo' }),
      functionCall(functionToolName('mcp__everything__get-tiny-image'), {}, { callId: 'call_image' }),
    ],
    [assistantMessage('The server echoed "hello durable" and sent a tiny PNG.')],
  ]);
}

const session = await exampleSession();
try {
  const { value: result, turn } = await withDurableTurn(
    session.client,
    { sessionId: `example-openai-agents-${Date.now()}`, servers: { inlineSpecs: [everythingSpec] } },
    (durable) => {
      const { system } = turnBriefing(durable, 'You are a helpful assistant.');
      process.stdout.write(`System prompt:\n${system}\n\n`);
      const agent = new Agent({
        name: 'assistant',
        instructions: system,
        model: scriptedModel(),
        tools: functionTools(durable),
      });
      // Traces would go to OpenAI's tracing API, which needs a key.
      return new Runner({ tracingDisabled: true }).run(agent, 'Echo "hello durable", then show me the tiny image.');
    },
  );
  process.stdout.write('What the model read:\n');
  for (const item of result.newItems) {
    if (item.type !== 'tool_call_output_item' || item.rawItem.type !== 'function_call_result') continue;
    const { callId, name, output } = item.rawItem;
    const parts = (Array.isArray(output) ? output : [output]) as { type: string; text?: string; image?: unknown }[];
    const text = parts.flatMap((p) => (typeof p.text === 'string' ? [p.text] : [])).join(' ');
    const images = parts.flatMap((p) => {
      const m = typeof p.image === 'string' ? /^data:([^;]+);base64,(.*)$/s.exec(p.image) : null;
      return m ? [{ mediaType: m[1]!, data: m[2]! }] : [];
    });
    process.stdout.write(`${describeResult(callId, name, text, images)}\n`);
  }
  process.stdout.write(`Model: ${String(result.finalOutput)}\n`);
  process.stdout.write(
    `Turn ${turn.turnId} ended (${turn.endedBy}), ${turn.calls.length} calls recorded (see it again: npx durable-mcp transcript ${turn.turnId})\n`,
  );
} finally {
  await session.close();
}
