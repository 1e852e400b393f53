/**
 * Input requests: a tool call that asks a person (MCP elicitation, form or URL mode). Each request
 * is a recorded fact of its turn; the answer arrives as an Update keyed by the request's ID. The
 * checks here run inside the workflow's Update validator, so they are pure and deterministic.
 */
import { canonicalJson } from './governance.js';

/** What a server asks for: `form` (a flat object of primitive fields) or `url` (a page the person opens). */
export const InputKind = ['form', 'url'] as const;
export type InputKind = (typeof InputKind)[number];

/** How a person answered: the MCP elicitation actions. */
export const InputAction = ['accept', 'decline', 'cancel'] as const;
export type InputAction = (typeof InputAction)[number];

/** One question a call asks while it runs; what every caller sees (never an answer). */
export interface InputRequest {
  /** The turn-unique ID the answer is sent under (`answerInput` Update ID): `<callId>:<round>:<key>`. */
  requestId: string;
  /** The call that asks (the model's tool-call ID). */
  callId: string;
  /** Public name of the tool that asks. */
  tool: string;
  /** The server's own key for this request within its round. */
  key: string;
  /** 1 for the call's first round of questions, 2 for the next, ... */
  round: number;
  kind: InputKind;
  message: string;
  /** Form mode: the restricted JSON Schema of the answer (a flat object of primitive fields). */
  requestedSchema?: Record<string, unknown>;
  /** URL mode: the page to show the person; the worker never opens it. */
  url?: string;
  /** URL mode: the server's elicitation ID. */
  elicitationId?: string;
  /** Workflow time the request was recorded (ISO). */
  askedAt: string;
  /**
   * Set when the question is the operator's: may this call run? (`permissions.ask`, or a PreToolUse
   * hook that asks). Its form is {@link APPROVAL_SCHEMA}; the request ID names the call and the hash
   * of its arguments, so an answer approves exactly this call with exactly these arguments.
   * `edits`: the rule that lets the answer give other arguments (`content.arguments`, a JSON object).
   */
  approval?: { argumentsHash: string; why: string; edits?: string };
}

/** The answer to one {@link InputRequest}. `content` only with `accept` of a form request. */
export interface InputAnswer {
  action: InputAction;
  content?: Record<string, string | number | boolean | string[]>;
}

/** What the `answerInput` Update returns: the action taken, never the answer's content. */
export interface InputAnswerReceipt {
  requestId: string;
  action: InputAction;
}

/**
 * How an unattended caller answers every request (`durable-mcp run --answer-input`):
 * `accept-defaults` accepts with the schema's defaults (SEP-1034), refused when a required field
 * has none; `decline` and `cancel` answer so.
 */
export const UnattendedAnswer = ['accept-defaults', 'decline', 'cancel', 'approve', 'deny'] as const;
export type UnattendedAnswer = (typeof UnattendedAnswer)[number];

/** What a call's activity returns when its server asks for input (2026-07-28 `input_required`). */
export interface InputRequiredOutcome {
  status: 'input_required';
  /** The embedded requests by the server's key, as the activity read them (elicitation only). */
  requests: InputRequestSpec[];
  /** The server's opaque state, echoed byte for byte on the next attempt. */
  requestState?: string;
  /** Answers the worker gave itself (roots), sent along with the person's answers. */
  ownResponses?: Record<string, unknown>;
}

/** One embedded request as the server sent it. */
export interface InputRequestSpec {
  key: string;
  kind: InputKind;
  message: string;
  requestedSchema?: Record<string, unknown>;
  url?: string;
  elicitationId?: string;
}

/** The answers sent back with the next attempt of a call, by the server's request key. */
export interface InputReply {
  inputResponses: Record<string, InputAnswer>;
  requestState?: string;
  /** See {@link InputRequiredOutcome.ownResponses}. */
  ownResponses?: Record<string, unknown>;
}

/** Longest an input request's message, key or URL may be before the request is refused. */
export const MAX_INPUT_TEXT_CHARS = 8192;
/** Longest answer (its `content` as JSON) a person may send, whatever the schema allows. */
export const MAX_INPUT_ANSWER_CHARS = 65_536;
/** Most items a list field of an answer may hold, whatever the schema allows. */
export const MAX_INPUT_ANSWER_ITEMS = 256;
/** Rounds of questions one call may ask before it ends as an error (the SDK's own default). */
export const MAX_INPUT_ROUNDS = 10;
/**
 * Largest `requestState` (UTF-8 bytes) a call may record. The state is kept twice a round (the
 * activity's result and the next attempt's input) for up to {@link MAX_INPUT_ROUNDS} rounds, so one
 * call stores at most about 1.3 MiB of it; a continuation token of a few fields, or a signed blob of
 * a few KiB, fits with room to spare.
 */
export const MAX_REQUEST_STATE_BYTES = 64 * 1024;

/** The request ID of `key` in `round` of call `callId`. */
/**
 * Longest key a server may ask under: a request ID (`<callId>:<round>:<key>`) is an Update ID, and
 * Temporal refuses IDs past 1000 bytes; a call ID may take 256 characters.
 */
export const MAX_INPUT_KEY_CHARS = 200;
/** Longest request ID (see {@link MAX_INPUT_KEY_CHARS}). */
export const MAX_INPUT_REQUEST_ID_CHARS = 256 + 1 + 3 + 1 + MAX_INPUT_KEY_CHARS;

export function inputRequestId(callId: string, round: number, key: string): string {
  return `${callId}:${round}:${key}`;
}

/**
 * The shape of every input request ID (`<callId>:<round>:<key>`). An answer is sent as an Update
 * whose ID is the request ID, and Temporal de-duplicates Update IDs across Update names: an
 * "answer" under the ID of an earlier call would be given that call's outcome. Checked before sending.
 * Unanchored and ASCII-only, so JavaScript and the OpenAPI tools that read it agree on what it matches.
 */
export const INPUT_REQUEST_ID_PATTERN = /:[0-9]+:/;

/** What is wrong with an answer, naming the field, or undefined when it may be sent. */
export interface InputAnswerProblem {
  field: string;
  message: string;
}

type FieldSchema = Record<string, unknown>;

/**
 * The schema's own field definitions (an unusable schema has none). Only own properties count: a
 * name such as `constructor` must not find a member of `Object.prototype`.
 */
function fieldsOf(schema: Record<string, unknown> | undefined): Map<string, FieldSchema | undefined> {
  const props = schema?.properties;
  if (typeof props !== 'object' || props === null || Array.isArray(props)) return new Map();
  return new Map(
    Object.entries(props).map(([name, field]) => [
      name,
      typeof field === 'object' && field !== null && !Array.isArray(field) ? (field as FieldSchema) : undefined,
    ]),
  );
}

function requiredOf(schema: Record<string, unknown> | undefined): string[] {
  const req = schema?.required;
  return Array.isArray(req) ? req.filter((r): r is string => typeof r === 'string') : [];
}

/** The values an enum field allows (`enum`, or `oneOf`/`anyOf` of `const`). */
function enumValues(field: FieldSchema): unknown[] | undefined {
  if (Array.isArray(field.enum)) return field.enum;
  const alternatives = Array.isArray(field.oneOf) ? field.oneOf : Array.isArray(field.anyOf) ? field.anyOf : undefined;
  return alternatives?.map((a) => (a as { const?: unknown }).const);
}

/**
 * Checks an answer against its request: the action is one of the three, `content` comes only with
 * `accept` of a form, and an accepted form carries every required field, each of the type and
 * within the bounds its schema gives (and ours: {@link MAX_INPUT_TEXT_CHARS} per string,
 * {@link MAX_INPUT_ANSWER_ITEMS} per list, {@link MAX_INPUT_ANSWER_CHARS} in all), and no field the
 * schema does not define as its own.
 */
export function inputAnswerProblem(
  request: Pick<InputRequest, 'kind' | 'requestedSchema'>,
  answer: unknown,
): InputAnswerProblem | undefined {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
    return { field: 'answer', message: 'the answer must be an object with "action"' };
  const { action, content, ...rest } = answer as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined)
    return {
      field: extra,
      message: `an answer has only "action" and "content"; ${JSON.stringify(extra)} is not one of them`,
    };
  if (!(InputAction as readonly unknown[]).includes(action))
    return { field: 'action', message: `"action" must be one of ${InputAction.join(', ')}` };
  if (action !== 'accept' || request.kind === 'url') {
    if (content !== undefined)
      return { field: 'content', message: `"content" goes only with "accept" of a form request` };
    return undefined;
  }
  if (typeof content !== 'object' || content === null || Array.isArray(content))
    return { field: 'content', message: 'an accepted form answer needs "content", an object of the requested fields' };
  const fields = fieldsOf(request.requestedSchema);
  const given = content as Record<string, unknown>;
  for (const name of requiredOf(request.requestedSchema)) {
    if (!Object.hasOwn(given, name) || given[name] === undefined)
      return { field: `content.${name}`, message: `the required field ${JSON.stringify(name)} is missing` };
  }
  for (const [name, value] of Object.entries(given)) {
    if (!fields.has(name))
      return { field: `content.${name}`, message: `${JSON.stringify(name)} is not a field of the requested schema` };
    const field = fields.get(name);
    if (!field)
      return {
        field: `content.${name}`,
        message: `${JSON.stringify(name)} has no usable definition in the requested schema`,
      };
    const problem = fieldValueProblem(field, value);
    if (problem) return { field: `content.${name}`, message: `${JSON.stringify(name)} ${problem}` };
  }
  const size = JSON.stringify(given).length;
  if (size > MAX_INPUT_ANSWER_CHARS)
    return {
      field: 'content',
      message: `the answer is ${size} characters long as JSON; at most ${MAX_INPUT_ANSWER_CHARS}`,
    };
  return undefined;
}

/** Why `value` does not fit one primitive field of a restricted elicitation schema. */
function fieldValueProblem(field: FieldSchema, value: unknown): string | undefined {
  const type = field.type;
  if (type === 'boolean') return typeof value === 'boolean' ? undefined : 'must be true or false';
  if (type === 'number' || type === 'integer') {
    if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
    if (type === 'integer' && !Number.isInteger(value)) return 'must be a whole number';
    if (typeof field.minimum === 'number' && value < field.minimum) return `must be at least ${field.minimum}`;
    if (typeof field.maximum === 'number' && value > field.maximum) return `must be at most ${field.maximum}`;
    return undefined;
  }
  if (type === 'array') {
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) return 'must be a list of strings';
    if (value.length > MAX_INPUT_ANSWER_ITEMS) return `must hold at most ${MAX_INPUT_ANSWER_ITEMS} items`;
    const long = (value as string[]).find((v) => v.length > MAX_INPUT_TEXT_CHARS);
    if (long !== undefined) return `may hold items of at most ${MAX_INPUT_TEXT_CHARS} characters`;
    const allowed =
      typeof field.items === 'object' && field.items !== null ? enumValues(field.items as FieldSchema) : undefined;
    const bad = allowed ? value.find((v) => !allowed.includes(v)) : undefined;
    if (bad !== undefined)
      return `may not hold ${JSON.stringify(bad)}; allowed: ${allowed!.map((a) => JSON.stringify(a)).join(', ')}`;
    if (typeof field.minItems === 'number' && value.length < field.minItems)
      return `must hold at least ${field.minItems} items`;
    if (typeof field.maxItems === 'number' && value.length > field.maxItems)
      return `must hold at most ${field.maxItems} items`;
    return undefined;
  }
  if (typeof value !== 'string') return 'must be a string';
  if (value.length > MAX_INPUT_TEXT_CHARS) return `must be at most ${MAX_INPUT_TEXT_CHARS} characters long`;
  const allowed = enumValues(field);
  if (allowed && !allowed.includes(value)) return `must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`;
  if (typeof field.minLength === 'number' && value.length < field.minLength)
    return `must be at least ${field.minLength} characters long`;
  if (typeof field.maxLength === 'number' && value.length > field.maxLength)
    return `must be at most ${field.maxLength} characters long`;
  return formatProblem(field.format, value);
}

function formatProblem(format: unknown, value: string): string | undefined {
  if (format === 'email' && !/^[^\s@]+@[^\s@]+$/.test(value)) return 'must be an email address';
  if (format === 'uri' && !/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(value)) return 'must be a URI';
  if (format === 'date' && !/^\d{4}-\d{2}-\d{2}$/.test(value)) return 'must be a date (YYYY-MM-DD)';
  if (format === 'date-time' && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value))
    return 'must be a date and time (RFC 3339)';
  return undefined;
}

/**
 * The answer `accept-defaults` gives (SEP-1034): accept with every field that has a default; a
 * required field without one cannot be answered so, and the request is declined instead, naming it.
 */
export function defaultsAnswer(request: Pick<InputRequest, 'kind' | 'requestedSchema'>): {
  answer: InputAnswer;
  missing?: string;
} {
  if (request.kind === 'url') return { answer: { action: 'decline' }, missing: 'url' };
  const defaults: [string, string | number | boolean | string[]][] = [];
  for (const [name, field] of fieldsOf(request.requestedSchema)) {
    const value = field?.default;
    if (
      typeof value === 'string' ||
      typeof value === 'number' ||
      typeof value === 'boolean' ||
      (Array.isArray(value) && value.every((v) => typeof v === 'string'))
    )
      defaults.push([name, value as string | number | boolean | string[]]);
  }
  // fromEntries defines own fields: assigning one named `__proto__` would set the prototype instead.
  const content = Object.fromEntries(defaults);
  const missing = requiredOf(request.requestedSchema).find((name) => !Object.hasOwn(content, name));
  if (missing !== undefined) return { answer: { action: 'decline' }, missing };
  return { answer: { action: 'accept', content } };
}

/** The answer an unattended caller gives to `request`. */
export function unattendedAnswer(
  mode: UnattendedAnswer,
  request: Pick<InputRequest, 'kind' | 'requestedSchema' | 'approval'>,
): InputAnswer {
  // An approval is given only by `approve`: no other mode, defaults included, lets a call run.
  if (request.approval !== undefined)
    return mode === 'approve'
      ? { action: 'accept', content: { decision: 'approve' } }
      : { action: 'accept', content: { decision: 'deny', reason: `denied by --answer-input ${mode}` } };
  if (mode === 'approve' || mode === 'deny') return { action: 'decline' };
  if (mode === 'accept-defaults') return defaultsAnswer(request).answer;
  return { action: mode };
}

/** The form of an approval: approve or deny, and why (the model reads a denial's reason). */
export const APPROVAL_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    decision: { type: 'string', enum: ['approve', 'deny'], title: 'Let this call run?' },
    reason: { type: 'string', title: 'Why (the model reads it when the call is denied)', maxLength: 2000 },
  },
  required: ['decision'],
};

/** The form of an approval whose rule lets a person run the call with other arguments. */
export const APPROVAL_WITH_EDITS_SCHEMA: Record<string, unknown> = {
  ...APPROVAL_SCHEMA,
  properties: {
    ...(APPROVAL_SCHEMA.properties as Record<string, unknown>),
    arguments: {
      type: 'string',
      title: 'Run it with these arguments instead (a JSON object; with approve only)',
      maxLength: MAX_INPUT_TEXT_CHARS,
    },
  },
};

/**
 * The arguments an approval's answer gives instead of the call's (`content.arguments`, a JSON
 * object as text); a problem when they cannot be used. Undefined `text`: none given.
 */
export function editedArguments(content: Record<string, unknown> | undefined): {
  arguments?: Record<string, unknown>;
  problem?: string;
} {
  const text = content?.arguments;
  if (text === undefined) return {};
  if (content?.decision !== 'approve') return { problem: 'arguments go with "approve" only' };
  let value: unknown;
  try {
    value = JSON.parse(String(text));
  } catch {
    return { problem: 'arguments must be a JSON object, and this is not JSON' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { problem: 'arguments must be a JSON object' };
  return { arguments: value as Record<string, unknown> };
}

/** The turn's memo holds each approval while it waits, under this prefix and its request ID. */
export const APPROVAL_MEMO_PREFIX = 'approval ';

/**
 * A short hash of a call's tool and arguments (FNV-1a, 64 bits, over their canonical JSON), for
 * the approval's request ID: computed in workflow code, which has no crypto module. It binds an
 * answer to the arguments it was asked about; the turn itself never runs a call with others.
 */
export function argumentsHash(name: string, args: Record<string, unknown>): string {
  const text = canonicalJson([name, args]);
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0');
}

/** The key a 2025-era question is recorded under: such a server names none (request ID `<callId>:<n>:elicitation`). */
export const LEGACY_INPUT_KEY = 'elicitation';

/** What a `callTool` activity reports when a 2025-era server asks a person mid-call (`legacyInputAsked`). */
export interface LegacyInputReport {
  /** The call the activity runs (its input's `callId`). */
  callId: string;
  /** Public name of the tool that asks. */
  tool: string;
  /** The question as the server sent it (scrubbed). */
  request: InputRequestSpec;
  /** How long this attempt of the call already waited for earlier questions (ms). */
  waitedMs: number;
}

/** The turn's answer to a {@link LegacyInputReport}: the question's ID and how long it is waited for. */
export interface LegacyInputTicket {
  requestId: string;
  timeoutMs: number;
}

/** The input of `deliverInputAnswer`: the answer to one 2025-era question (`cancel` once it timed out). */
export interface DeliverInputAnswerInput {
  requestId: string;
  answer: InputAnswer;
}

/**
 * Time a 2025-era question's wait in the worker outlasts the turn's own limit for it: the turn
 * sends `cancel` at its limit, and the delivery needs a moment to arrive. A call's start-to-close
 * is stretched by the turn's limit plus this.
 */
export const LEGACY_INPUT_GRACE_MS = 30_000;
