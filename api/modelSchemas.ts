/**
 * Model turns over HTTP: what a turn's start names (`model`), what each model step recorded, what a
 * model turn's result adds, and what a turn says while it runs. The bounds are the workflow's own
 * (`workflows/bounds.ts` `modelTurnProblem`): a model the workflow would refuse is a 400 here,
 * naming the field, and one it accepts is never refused here.
 */
import { z } from '@hono/zod-openapi';
import {
  DEFAULT_MAX_MODEL_STEPS,
  DEFAULT_MODEL_DEADLINE_MS,
  MAX_MODEL_DEADLINE_MS,
  MAX_MODEL_STEPS,
  MAX_PROMPT_CHARS,
  MODEL_NAME_PATTERN,
  CONVERSATION_REF_PATTERN,
} from '../contract/index.js';

/** Tokens of one model step, as the provider reported them. */
export const ModelUsageSchema = z
  .object({
    inputTokens: z.number().int().optional(),
    outputTokens: z.number().int().optional(),
    totalTokens: z.number().int().optional(),
  })
  .openapi('ModelUsage');

/** The calls a model step asked for: their IDs in the turn's `calls`, and their tools. */
export const StepToolCallsSchema = z.array(z.object({ id: z.string(), name: z.string() }));

/** A model step as a transcript shows it: where it goes among the calls, its attempts and failures. */
export const TranscriptModelStepSchema = z
  .object({
    step: z.number().int(),
    model: z.string(),
    callsBefore: z.number().int(),
    attempts: z.number().int(),
    failures: z.array(z.string()),
    text: z.string().optional(),
    toolCalls: StepToolCallsSchema.optional(),
    finishReason: z.string().optional(),
    usage: ModelUsageSchema.optional(),
    modelId: z.string().optional(),
  })
  .openapi('TranscriptModelStep');

export const ModelTurnSchema = z
  .strictObject(
    {
      name: z
        .string()
        .regex(MODEL_NAME_PATTERN, 'a model name: 1-64 letters, digits and . _ : -, starting with a letter or digit')
        .openapi({
          description:
            "A model the workers' operator named in `models.json`. The key and the endpoint stay on the workers: no field of the request holds them.",
          example: 'gpt-4o',
        }),
      prompt: z
        .string()
        .min(1, 'the prompt is empty')
        .max(MAX_PROMPT_CHARS)
        .openapi({ description: "The person's message that starts the turn.", example: 'What is in the README?' }),
      conversation: z
        .string()
        .regex(CONVERSATION_REF_PATTERN, 'the `conversation` of a model turn of this session')
        .optional()
        .openapi({
          description:
            "Continue this conversation: the `conversation` a model turn of the same session ended with. Absent: the session's latest turn's conversation is continued (none: a new one).",
        }),
      newConversation: z.boolean().optional().openapi({
        description: "Start a new conversation instead of continuing the session's latest one (default false).",
      }),
      maxSteps: z
        .number()
        .int()
        .min(1)
        .max(MAX_MODEL_STEPS)
        .optional()
        .openapi({
          description: `Most model steps before the turn ends with \`maxSteps\` (default ${DEFAULT_MAX_MODEL_STEPS}).`,
        }),
      deadlineMs: z
        .number()
        .int()
        .min(1000)
        .max(MAX_MODEL_DEADLINE_MS)
        .optional()
        .openapi({
          description: `Most time the loop runs from the turn's start, waits for people included, before the turn ends with \`deadline\` (ms; default ${DEFAULT_MODEL_DEADLINE_MS}).`,
        }),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown field ${JSON.stringify(issue.keys[0])}: a turn names a model of the workers' models.json, never a key or an endpoint`
          : undefined,
    },
  )
  .openapi('ModelTurn', {
    description:
      'Model form of a turn: it runs its own model loop (the named model, the tool calls it asks for) until its answer, in the background: 202, then GET the turn for its result. Not with `calls`.',
  });

export const ModelStepSchema = z
  .object({
    step: z.number().int().openapi({ description: '1-based.' }),
    text: z.string().openapi({ description: 'What the model said in this step.' }),
    toolCalls: StepToolCallsSchema.openapi({
      description: "The calls it asked for: their IDs in the turn's `calls`, and their tools.",
    }),
    finishReason: z.string().openapi({ description: "The provider's finish reason (`stop`, `tool-calls`, ...)." }),
    usage: ModelUsageSchema,
  })
  .openapi('ModelStep');

/** What a model turn's result adds to a turn's result. */
export const modelResultFields = {
  model: z.string().optional().openapi({ description: "A model turn's model (its name in `models.json`)." }),
  answer: z.string().optional().openapi({ description: "A model turn's answer: its last step's text." }),
  modelSteps: z
    .array(ModelStepSchema)
    .optional()
    .openapi({ description: "A model turn's steps, in order; their calls are in `calls`." }),
  conversation: z.string().optional().openapi({
    description: "The conversation the session's next model turn continues (its `model.conversation`).",
  }),
};

export const ModelTurnStartedSchema = z
  .object({
    sessionId: z.string(),
    turnId: z.string(),
    turn: z.string(),
    model: z.string(),
    state: z.literal('running'),
    poll: z.string().openapi({ format: 'uri-reference', description: 'GET this for the result.' }),
    links: z.object({
      calls: z.string().openapi({ format: 'uri-reference' }),
      end: z.string().openapi({ format: 'uri-reference' }),
      transcript: z.string().openapi({ format: 'uri-reference' }),
    }),
  })
  .openapi('ModelTurnStarted');

export const TurnRunningSchema = z
  .object({
    sessionId: z.string(),
    turnId: z.string(),
    turn: z.string(),
    state: z.literal('running'),
    phase: z.enum(['starting', 'ready', 'ended']).optional(),
    callsDone: z.number().int().optional(),
    callsInFlight: z.number().int().optional(),
    modelSteps: z
      .array(ModelStepSchema)
      .optional()
      .openapi({ description: "A model turn's steps so far, as they finish." }),
    poll: z.string().openapi({ format: 'uri-reference', description: 'GET this again for the result.' }),
  })
  .openapi('TurnRunning');
