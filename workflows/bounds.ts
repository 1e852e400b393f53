/**
 * What a turn accepts from its caller. A call or a batch past these bounds is refused before it
 * runs: after it ran, its outcome, its history events and its place in the workflow's memory are
 * already spent, and Temporal's own limits (pending activities per run, Updates per run, payload
 * size) would fail the whole turn instead of the one request.
 */
import {
  MAX_BATCH_CALLS,
  MAX_BATCH_GROUP_CALLS,
  MAX_CALL_ID_CHARS,
  MAX_NESTING_DEPTH,
  MAX_TOOL_NAME_CHARS,
  END_TURN_UPDATE_ID,
  TURN_LIMIT_RANGES,
  nestedDeeperThan,
  MAX_MODEL_DEADLINE_MS,
  MAX_MODEL_STEPS,
  MODEL_NAME_PATTERN,
  CONVERSATION_REF_PATTERN,
  MAX_PROMPT_CHARS,
  type CallRequest,
  type TurnLimits,
} from '../contract/index.js';

// The API checks the same bounds before it starts a turn: they live in the contract.
export { MAX_BATCH_CALLS, MAX_BATCH_GROUP_CALLS, MAX_CALL_ID_CHARS, MAX_TOOL_NAME_CHARS } from '../contract/index.js';

/**
 * Size of a call's arguments as JSON. They are recorded in the Update's history event, where
 * Temporal refuses payloads over 2 MB; 1 MiB keeps a clear message well before that.
 */
export const MAX_ARGUMENTS_JSON_CHARS = 1024 * 1024;
/** Nesting depth of arguments (see MAX_NESTING_DEPTH). */
export const MAX_ARGUMENTS_DEPTH = MAX_NESTING_DEPTH;

/** Why `request` cannot run, or undefined when it can. Pure: the Update validator and batch check use it. */
export function callRequestProblem(request: unknown): string | undefined {
  if (request === null || typeof request !== 'object' || Array.isArray(request))
    return 'a call must be { id: string, name: string, arguments?: object }';
  const { id, name, arguments: args } = request as Partial<CallRequest>;
  if (typeof id !== 'string' || id === '') return 'a call needs a non-empty string id';
  if (id.length > MAX_CALL_ID_CHARS) return `call id is ${id.length} characters; at most ${MAX_CALL_ID_CHARS}`;
  if (id === END_TURN_UPDATE_ID)
    return `call id "${END_TURN_UPDATE_ID}" is reserved for ending the turn; use another id`;
  if (typeof name !== 'string' || name === '') return `call ${id}: needs a non-empty string name`;
  if (name.length > MAX_TOOL_NAME_CHARS)
    return `call ${id}: tool name is ${name.length} characters; at most ${MAX_TOOL_NAME_CHARS}`;
  if (args === undefined) return undefined;
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    return `call ${id}: arguments must be a JSON object`;
  if (nestedDeeperThan(args, MAX_ARGUMENTS_DEPTH))
    return `call ${id}: arguments nest deeper than ${MAX_ARGUMENTS_DEPTH} levels`;
  const size = JSON.stringify(args).length;
  if (size > MAX_ARGUMENTS_JSON_CHARS)
    return `call ${id}: arguments are ${size} characters of JSON; at most ${MAX_ARGUMENTS_JSON_CHARS}`;
  return undefined;
}

/** Why a batch cannot run, or undefined when it can: group and total sizes, each call, unique IDs. */
export function batchProblem(batch: unknown): string | undefined {
  if (!Array.isArray(batch)) return 'a batch must be an array of groups of calls';
  let total = 0;
  const ids = new Set<string>();
  for (const [index, group] of batch.entries()) {
    if (!Array.isArray(group)) return `batch group ${index + 1} must be an array of calls`;
    if (group.length > MAX_BATCH_GROUP_CALLS) {
      return `batch group ${index + 1} has ${group.length} calls; at most ${MAX_BATCH_GROUP_CALLS} run in parallel (split it into several groups)`;
    }
    total += group.length;
    if (total > MAX_BATCH_CALLS) return `the batch has more than ${MAX_BATCH_CALLS} calls; split it into several turns`;
    for (const request of group) {
      const problem = callRequestProblem(request);
      if (problem) return problem;
      const id = (request as CallRequest).id;
      if (ids.has(id)) return `call id ${id} appears twice in the batch; each call needs its own id`;
      ids.add(id);
    }
  }
  return undefined;
}

/**
 * Why a turn's limits cannot be used, with the first field out of range (`limits`, or
 * `limits.<name>`), or undefined when they can. A heartbeat timeout too short for the worker's
 * beats, say, would fail every call as a lost worker, and a safe one three times over.
 */
export function limitsRefusal(limits: unknown): { field: string; message: string } | undefined {
  if (limits === undefined) return undefined;
  if (limits === null || typeof limits !== 'object' || Array.isArray(limits))
    return { field: 'limits', message: 'limits must be an object of whole numbers' };
  for (const [field, { min, max }] of Object.entries(TURN_LIMIT_RANGES)) {
    const value = (limits as Record<string, unknown>)[field as keyof TurnLimits];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      return {
        field: `limits.${field}`,
        message: `limits.${field} is ${typeof value === 'number' ? value : JSON.stringify(value)}; it must be a whole number from ${min} to ${max}`,
      };
    }
  }
  return undefined;
}

/** Why a model turn's input cannot run, and its field; undefined when it can. Never a key or an endpoint: those are not fields. */
export function modelTurnProblem(model: unknown, batch: boolean): { message: string; field: string } | undefined {
  if (batch)
    return { message: 'a model turn runs the calls its model asks for; start it without a batch', field: 'calls' };
  if (model === null || typeof model !== 'object' || Array.isArray(model))
    return { message: 'model must be { name, prompt, conversation?, maxSteps?, deadlineMs? }', field: 'model' };
  const m = model as Record<string, unknown>;
  const extra = Object.keys(m).filter((k) => !['name', 'prompt', 'conversation', 'maxSteps', 'deadlineMs'].includes(k));
  if (extra.length > 0)
    return {
      message: `unknown field ${JSON.stringify(extra[0])}: a turn names a model of the worker's models.json, never a key or an endpoint`,
      field: `model.${extra[0]}`,
    };
  if (typeof m.name !== 'string' || !MODEL_NAME_PATTERN.test(m.name))
    return {
      message: 'model name must be 1-64 letters, digits and . _ : -, starting with a letter or digit',
      field: 'model.name',
    };
  if (typeof m.prompt !== 'string' || m.prompt === '') return { message: 'the prompt is empty', field: 'model.prompt' };
  if (m.prompt.length > MAX_PROMPT_CHARS)
    return {
      message: `the prompt is ${m.prompt.length} characters; at most ${MAX_PROMPT_CHARS}`,
      field: 'model.prompt',
    };
  if (
    m.conversation !== undefined &&
    (typeof m.conversation !== 'string' || !CONVERSATION_REF_PATTERN.test(m.conversation))
  )
    return {
      message: 'conversation must be the `conversation` of a model turn of this session',
      field: 'model.conversation',
    };
  if (
    m.maxSteps !== undefined &&
    !(Number.isInteger(m.maxSteps) && (m.maxSteps as number) >= 1 && (m.maxSteps as number) <= MAX_MODEL_STEPS)
  )
    return { message: `maxSteps must be an integer from 1 to ${MAX_MODEL_STEPS}`, field: 'model.maxSteps' };
  if (
    m.deadlineMs !== undefined &&
    !(
      Number.isInteger(m.deadlineMs) &&
      (m.deadlineMs as number) >= 1000 &&
      (m.deadlineMs as number) <= MAX_MODEL_DEADLINE_MS
    )
  )
    return {
      message: `deadlineMs must be an integer from 1000 to ${MAX_MODEL_DEADLINE_MS} (a week)`,
      field: 'model.deadlineMs',
    };
  return undefined;
}
