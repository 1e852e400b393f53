/**
 * One model step on a worker: the operator's model by name, the conversation read from the store
 * by its head, the step's new messages (the prompt, or the previous step's tool results, shaped as
 * the adapters shape them), one request without retries (Temporal retries the step), and the
 * messages it added stored as one node. Keys are read from the worker's environment for each step
 * and go nowhere but the model's endpoint.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LanguageModel, ModelMessage, ToolSet } from 'ai';
import type { Logger } from 'pino';
import type { ModelStepInput, ModelStepResult, ToolResultInput } from '../contract/index.js';
import { DEFAULT_SHAPE_LIMITS, shapeForModel, type ShapeLimits } from '../shaping/index.js';
import { modelOutput } from '../shaping/modelOutput.js';
import { ConversationError, type ContextNode, type ConversationStore } from './conversationStore.js';
import { classifyModelError, ModelConfigError, ModelRequestError } from './modelErrors.js';
import { importAi, languageModel } from './providers.js';
import { PromptCache, withPrefix, type ProviderMessages } from './promptCache.js';
import { parseModelsFile, type ModelEntry } from './modelsFile.js';

/** What {@link createModelService} needs. */
export interface ModelServiceOptions {
  /** The worker's trusted config dir, where `models.json` sits beside `mcp.json`; absent: no models. */
  configDir?: string;
  /** Where keys are read (`apiKeyEnv`). */
  env: NodeJS.ProcessEnv;
  store: ConversationStore;
  logger: Logger;
  /** What the model reads of a tool result (default: the TurnClient's defaults). */
  shapeLimits?: ShapeLimits;
}

/** Runs model steps. */
export interface ModelService {
  /** Runs one step; `onText` gets the answer's text as it is produced. */
  step(input: ModelStepInput, signal: AbortSignal, onText?: (text: string) => void): Promise<ModelStepResult>;
}

const NOT_RUN = 'not run: the turn ended before this call ran';

export function createModelService(options: ModelServiceOptions): ModelService {
  const reported = new Set<string>();
  const prompts = new PromptCache();
  const limits = options.shapeLimits ?? DEFAULT_SHAPE_LIMITS;

  async function entryFor(name: string): Promise<{ entry: ModelEntry; instructions?: string }> {
    if (options.configDir === undefined)
      throw new ModelConfigError(`model ${JSON.stringify(name)}: this worker has no config dir, so no models.json`);
    const file = join(options.configDir, 'models.json');
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      throw new ModelConfigError(
        `model ${JSON.stringify(name)}: the worker has no ${file}; its operator names models there`,
      );
    }
    const parsed = parseModelsFile(text, file);
    for (const problem of parsed.problems) {
      if (reported.has(problem)) continue;
      reported.add(problem);
      options.logger.warn({ problem }, 'models.json: part of the file is refused');
    }
    const entry = parsed.models.get(name);
    if (entry) return { entry, ...(parsed.instructions !== undefined ? { instructions: parsed.instructions } : {}) };
    const refused = parsed.problems.find((p) => p.includes(`model ${JSON.stringify(name)} refused`));
    const known = [...parsed.models.keys()].join(', ') || 'none';
    throw new ModelConfigError(refused ?? `model ${JSON.stringify(name)} is not in ${file} (models there: ${known})`);
  }

  return {
    async step(input, signal, onText = () => undefined) {
      const { entry, instructions } = await entryFor(input.model);
      const { model, key } = await languageModel(entry, options.env);
      const { context, contextRef, earlier, added } = await stepMessages(options.store, input, instructions, limits);
      // Only what is new since the last step, when this worker sent that one (see PromptCache).
      const before = prompts.get(input.parent);
      const last = earlier.at(-1);
      const incremental = before !== undefined && last?.role === 'assistant';
      let sent: ProviderMessages | undefined;
      const answer = await askModel({
        model,
        key,
        name: input.model,
        context,
        messages: incremental ? [last, ...added] : [...earlier, ...added],
        prefix: incremental ? before : [],
        onSent: (s) => (sent = s),
        onText,
        signal,
      });
      const assistant: ModelMessage = {
        role: 'assistant',
        content: [
          ...(answer.text !== '' || answer.toolCalls.length === 0
            ? [{ type: 'text' as const, text: answer.text }]
            : []),
          ...answer.toolCalls.map((c) => ({
            type: 'tool-call' as const,
            toolCallId: c.id,
            toolName: c.name,
            input: c.arguments,
          })),
        ],
      };
      const head = await options.store.put({
        kind: 'messages',
        sessionId: input.sessionId,
        ...(input.parent !== undefined ? { parent: input.parent } : {}),
        messages: [...added, assistant],
      });
      if (sent !== undefined) prompts.set(head, sent, input.parent);
      return { head, contextRef, ...answer };
    },
  };
}

/** The step's context (stored on a turn's first step), the conversation so far, and the messages this step adds. */
async function stepMessages(
  store: ConversationStore,
  input: ModelStepInput,
  instructions: string | undefined,
  limits: ShapeLimits,
) {
  const { sessionId } = input;
  const context = input.context
    ? ({
        kind: 'context',
        sessionId,
        system: systemPrompt(instructions, input.context.serversParagraph),
        tools: input.context.tools,
      } satisfies ContextNode)
    : await storedContext(store, input);
  const contextRef = input.context ? await store.put(context) : input.contextRef!;
  const earlier = await store.messages(input.parent, sessionId);
  const added = [
    ...(input.prompt !== undefined ? closeDangling(earlier) : []),
    ...(await toolMessages(input.toolResults, limits)),
  ];
  if (input.prompt !== undefined) added.push({ role: 'user', content: input.prompt });
  return { context, contextRef, earlier, added };
}

/** One request to the model, without the SDK's retries (the step's activity retries are the rule). */
async function askModel(ask: {
  model: LanguageModel;
  key?: string;
  name: string;
  context: ContextNode;
  messages: ModelMessage[];
  prefix: ProviderMessages;
  onSent: (sent: ProviderMessages) => void;
  onText: (text: string) => void;
  signal: AbortSignal;
}): Promise<Omit<ModelStepResult, 'head' | 'contextRef'>> {
  const ai = await importAi();
  const tools: ToolSet = Object.fromEntries(
    ask.context.tools.map((t) => [
      t.name,
      ai.tool({ description: t.description, inputSchema: ai.jsonSchema(t.inputSchema) }),
    ]),
  );
  // Streamed, so the text reaches the turn's stream as it is produced; the step's result is the same.
  const result = ai.streamText({
    model: withPrefix(ai.wrapLanguageModel, ask.model, ask.prefix, ask.onSent),
    system: ask.context.system,
    messages: ask.messages,
    tools,
    maxRetries: 0,
    abortSignal: ask.signal,
    // Errors come out of the stream below; the default handler would print them too.
    onError: () => undefined,
  });
  let answer: Omit<ModelStepResult, 'head' | 'contextRef'>;
  try {
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') ask.onText(part.text);
      else if (part.type === 'error') throw part.error;
    }
    const [text, toolCalls, finishReason, usage, response] = await Promise.all([
      result.text,
      result.toolCalls,
      result.finishReason,
      result.usage,
      result.response,
    ]);
    answer = {
      text,
      toolCalls: toolCalls.map((c) => ({
        id: c.toolCallId,
        name: c.toolName,
        arguments: isObject(c.input) ? c.input : {},
      })),
      finishReason,
      usage: usageOf(usage),
      modelId: response.modelId,
    };
  } catch (err) {
    if (ask.signal.aborted) throw err;
    const failure = classifyModelError(err, ask.name);
    const { key } = ask;
    throw new ModelRequestError({
      ...failure,
      message: key ? failure.message.split(key).join('[key]') : failure.message,
    });
  }
  return answer;
}

async function storedContext(store: ConversationStore, input: ModelStepInput): Promise<ContextNode> {
  if (input.contextRef === undefined)
    throw new ConversationError('a model step needs its context or a reference to it');
  const node = await store.get(input.contextRef, input.sessionId);
  if (node.kind !== 'context')
    throw new ConversationError(`${input.contextRef.slice(0, 12)} is not a model turn's context`);
  return node;
}

/** The system prompt: the operator's instructions, then the servers paragraph. */
export function systemPrompt(instructions: string | undefined, serversParagraph: string): string {
  return instructions === undefined || instructions.trim() === ''
    ? serversParagraph
    : `${instructions.trimEnd()}\n\n${serversParagraph}`;
}

/**
 * Results for the calls a conversation's last step asked for but its turn never ran (it reached
 * its step limit or deadline): every provider refuses a conversation whose tool calls have no results.
 */
export function closeDangling(messages: ModelMessage[]): ModelMessage[] {
  const last = messages.at(-1);
  if (last?.role !== 'assistant' || typeof last.content === 'string') return [];
  const calls = last.content.filter((p) => p.type === 'tool-call');
  if (calls.length === 0) return [];
  return [
    {
      role: 'tool',
      content: calls.map((c) => ({
        type: 'tool-result',
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        output: { type: 'error-text', value: NOT_RUN },
      })),
    },
  ];
}

async function toolMessages(results: ToolResultInput[] | undefined, limits: ShapeLimits): Promise<ModelMessage[]> {
  if (results === undefined || results.length === 0) return [];
  const content = await Promise.all(
    results.map(async (r) => ({
      type: 'tool-result' as const,
      toolCallId: r.toolCallId,
      toolName: r.toolName,
      output: modelOutput(r.outcome, await shapeForModel(r.outcome, limits)),
    })),
  );
  return [{ role: 'tool', content }];
}

function usageOf(usage: {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}): ModelStepResult['usage'] {
  return {
    ...(usage.inputTokens !== undefined ? { inputTokens: usage.inputTokens } : {}),
    ...(usage.outputTokens !== undefined ? { outputTokens: usage.outputTokens } : {}),
    ...(usage.totalTokens !== undefined ? { totalTokens: usage.totalTokens } : {}),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
