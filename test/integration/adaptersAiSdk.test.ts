import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { toolSet } from '../../adapters/aiSdk.js';
import { adapterSuite, type ScriptedCall, type SeenResult } from '../fixtures/adapterScenario.js';

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

const usage: GenerateResult['usage'] = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** The AI SDK's mock model answering each step with its tool calls, then with text. */
export function scriptedModel(steps: ScriptedCall[][]): MockLanguageModelV3 {
  const responses: GenerateResult[] = steps.map((calls) => ({
    content: calls.map((c) => ({
      type: 'tool-call' as const,
      toolCallId: c.id,
      toolName: c.name,
      input: JSON.stringify(c.args),
    })),
    finishReason: { unified: 'tool-calls', raw: undefined },
    usage,
    warnings: [],
  }));
  responses.push({
    content: [{ type: 'text', text: 'done' }],
    finishReason: { unified: 'stop', raw: undefined },
    usage,
    warnings: [],
  });
  return new MockLanguageModelV3({ doGenerate: responses });
}

/** The tool results answering the last assistant message of a model call's prompt, as the provider receives them. */
function seenIn(prompt: MockLanguageModelV3['doGenerateCalls'][number]['prompt']): SeenResult[] {
  const seen: SeenResult[] = [];
  const lastAssistant = prompt.map((m) => m.role).lastIndexOf('assistant');
  for (const message of prompt.slice(lastAssistant + 1)) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const { output } = part;
      if (output.type === 'text' || output.type === 'error-text') {
        seen.push({ id: part.toolCallId, text: output.value, images: [], isError: output.type === 'error-text' });
      } else if (output.type === 'content') {
        const text = output.value.flatMap((v) => (v.type === 'text' ? [v.text] : [])).join('\n');
        const images = output.value.flatMap((v) =>
          v.type === 'image-data' ? [{ mediaType: v.mediaType, data: v.data }] : [],
        );
        seen.push({ id: part.toolCallId, text, images, isError: false });
      } else {
        seen.push({ id: part.toolCallId, text: JSON.stringify(output), images: [] });
      }
    }
  }
  return seen;
}

adapterSuite({
  name: 'ai-sdk',
  dropsRepeatedCallIds: false,
  errorFlag: true,
  async run(turn, steps, { system, signal }) {
    const model = scriptedModel(steps);
    await generateText({
      model,
      system,
      prompt: 'Use the tools.',
      tools: toolSet(turn),
      stopWhen: stepCountIs(steps.length + 1),
      abortSignal: signal,
    });
    // Request i+1 carries the results of step i after its last assistant message.
    return steps.map((_, i) => seenIn(model.doGenerateCalls[i + 1]!.prompt));
  },
});
