/**
 * Model turns: a turn that runs its own model loop. What the turn's input names, what one model step
 * (an activity) takes and returns, and what the turn's result says of its steps.
 */
import type { CallOutcome } from './history.js';

/** The providers a model in the operator's `models.json` may use. */
export const ModelProvider = ['openai', 'anthropic', 'openai-compatible'] as const;
export type ModelProvider = (typeof ModelProvider)[number];

/** What a model's name in `models.json` (and a turn naming it) may look like: `gpt-4o`, `local.qwen`. */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** What a model turn's `conversation` looks like: the stored head its previous turn ended with. */
export const CONVERSATION_REF_PATTERN = /^[0-9a-f]{64}$/;

/** Default of {@link ModelTurnInput.maxSteps}. */
export const DEFAULT_MAX_MODEL_STEPS = 25;
/** Largest {@link ModelTurnInput.maxSteps}: a step costs about a dozen events, far below Temporal's 51,200. */
export const MAX_MODEL_STEPS = 1000;
/** Default of {@link ModelTurnInput.deadlineMs}: 30 minutes. */
export const DEFAULT_MODEL_DEADLINE_MS = 30 * 60_000;
/** Longest {@link ModelTurnInput.deadlineMs}: a week, as long as a person may take to answer a question. */
export const MAX_MODEL_DEADLINE_MS = 7 * 24 * 60 * 60_000;
/** Longest prompt a turn's input carries (characters). */
export const MAX_PROMPT_CHARS = 100_000;
/** Tool calls of one model step that run at once; the rest wait for a free place. */
export const MODEL_STEP_PARALLEL_CALLS = 8;

/** The model a turn runs, and what it is asked. */
export interface ModelTurnInput {
  /** A model the worker's operator named in `models.json`. Never a key or an endpoint: those stay on workers. */
  name: string;
  /** The person's message that starts the turn. */
  prompt: string;
  /**
   * The session's conversation so far: the `conversation` its previous model turn ended with. The
   * worker continues it only for the same session. Absent: a new conversation.
   */
  conversation?: string;
  /** Most model steps before the turn ends with `maxSteps` (default 25, at most 1000). */
  maxSteps?: number;
  /** Most time the loop runs, from the turn's start, in ms (default 30 min), waits included. */
  deadlineMs?: number;
}

/** A tool as the model sees it: public name, description and input schema. */
export interface ModelTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** A call's outcome handed back to the model, for the tool call that asked for it. */
export interface ToolResultInput {
  toolCallId: string;
  toolName: string;
  outcome: CallOutcome;
}

/** What the model step activity takes: references, the new messages, never the whole conversation. */
export interface ModelStepInput {
  sessionId: string;
  /** The model's name in `models.json`. */
  model: string;
  /** 1-based step of the turn. */
  step: number;
  /** The conversation so far (a stored head); absent: a new one. */
  parent?: string;
  /** The person's prompt (the turn's first step only). */
  prompt?: string;
  /** The results of the previous step's tool calls. */
  toolResults?: ToolResultInput[];
  /** What the model is told and offered: given inline on a turn's first step, by reference after. */
  context?: { serversParagraph: string; tools: ModelTool[] };
  /** The stored context of an earlier step of the same turn. */
  contextRef?: string;
}

/** A tool call the model asked for. */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** Tokens of one step, as the provider reported them (absent when it did not). */
export interface ModelUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

/** What one model step produced. */
export interface ModelStepResult {
  /** The conversation with this step's messages: the next step's `parent`. */
  head: string;
  /** The stored context, for the turn's later steps. */
  contextRef: string;
  text: string;
  toolCalls: ModelToolCall[];
  /** The provider's finish reason (`stop`, `tool-calls`, `length`, ...). */
  finishReason: string;
  usage: ModelUsage;
  /** The model ID the provider answered for. */
  modelId: string;
}

/** One model step in the turn's result. */
export interface ModelStepRecord {
  step: number;
  text: string;
  /** The calls this step asked for: their IDs in the turn's `calls`, and their tools. */
  toolCalls: { id: string; name: string }[];
  finishReason: string;
  usage: ModelUsage;
}
