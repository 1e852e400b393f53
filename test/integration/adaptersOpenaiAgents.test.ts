import { Agent, Runner } from '@openai/agents-core';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents-core/testing';
import { functionToolName, functionTools } from '../../adapters/openaiAgents.js';
import { adapterSuite, type ScriptedCall, type SeenResult } from '../fixtures/adapterScenario.js';

type Request = ScriptedModel['calls'][number]['request'];

/** The function-call results after the model's last function call in one request, as the model receives them. */
function seenIn(request: Request): SeenResult[] {
  const items = typeof request.input === 'string' ? [] : [...request.input];
  const lastCall = items.map((i) => i.type).lastIndexOf('function_call');
  const seen: SeenResult[] = [];
  for (const item of items.slice(lastCall + 1)) {
    if (item.type !== 'function_call_result') continue;
    const parts =
      typeof item.output === 'string'
        ? [{ type: 'text', text: item.output }]
        : Array.isArray(item.output)
          ? item.output
          : [item.output];
    const texts: string[] = [];
    const images: SeenResult['images'] = [];
    for (const part of parts as { type: string; text?: string; image?: unknown }[]) {
      if ((part.type === 'input_text' || part.type === 'text') && typeof part.text === 'string') texts.push(part.text);
      if (part.type === 'input_image' || part.type === 'image') {
        const url = typeof part.image === 'string' ? part.image : '';
        const m = /^data:([^;]+);base64,(.*)$/s.exec(url);
        images.push(m ? { mediaType: m[1]!, data: m[2]! } : { mediaType: 'unknown', data: JSON.stringify(part.image) });
      }
    }
    seen.push({ id: item.callId, text: texts.join('\n'), images });
  }
  return seen;
}

adapterSuite({
  name: 'openai-agents',
  // Function-call outputs have no error flag: the error is in the text.
  // The runner skips a function call whose callId already has a result in the conversation.
  dropsRepeatedCallIds: true,
  errorFlag: false,
  async run(turn, steps: ScriptedCall[][], { system, signal }) {
    const model = new ScriptedModel([
      ...steps.map((calls) => calls.map((c) => functionCall(functionToolName(c.name), c.args, { callId: c.id }))),
      [assistantMessage('done')],
    ]);
    const agent = new Agent({ name: 'durable', instructions: system, model, tools: functionTools(turn) });
    await new Runner({ tracingDisabled: true }).run(agent, 'Use the tools.', {
      maxTurns: steps.length + 2,
      ...(signal ? { signal } : {}),
    });
    return steps.map((_, i) => seenIn(model.calls[i + 1]!.request));
  },
});
