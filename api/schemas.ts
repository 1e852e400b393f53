/**
 * The API's bodies: one zod schema each, used both to validate requests and to generate the
 * OpenAPI document (no second copy). Response schemas describe what history holds
 * (`contract/`), loosely where a server decides the shape (content blocks, input schemas). What
 * a path or query names is in `paramSchemas.ts`, the event stream in `eventSchemas.ts`.
 */
import { z } from '@hono/zod-openapi';
import {
  AGENT_ID_PATTERN,
  CallErrorKind,
  END_TURN_DETACH_UPDATE_ID,
  END_TURN_UPDATE_ID,
  InputAction,
  InputKind,
  MAX_INPUT_TEXT_CHARS,
  LayerKind,
  LoginProblemKind,
  ProtocolEra,
  MAX_BATCH_CALLS,
  MAX_BATCH_GROUP_CALLS,
  MAX_CALL_ID_CHARS,
  MAX_TASK_ID_CHARS,
  MAX_TOOL_NAME_CHARS,
  ServerState,
  TURN_LIMIT_RANGES,
  TransportKind,
  TurnEndedBy,
} from '../contract/index.js';
import { ERROR_STATUS } from './errors.js';
import { ModelTurnSchema, TranscriptModelStepSchema, modelResultFields } from './modelSchemas.js';

const JsonObject = z.record(z.string(), z.unknown());
/** A link the API answers with: a path on the API itself, relative to its address. */
const ApiLink = z.string().openapi({ format: 'uri-reference' });

export const CallRequestSchema = z
  .object({
    id: z
      .string()
      .min(1)
      .max(MAX_CALL_ID_CHARS)
      .refine(
        (id) => id !== END_TURN_UPDATE_ID && id !== END_TURN_DETACH_UPDATE_ID,
        `"${END_TURN_UPDATE_ID}" and "${END_TURN_DETACH_UPDATE_ID}" are reserved for ending the turn`,
      )
      .openapi({
        description: "The model's tool-call ID; the call's identity: sending it again returns the recorded outcome.",
        example: 'toolu_01',
      }),
    name: z
      .string()
      .min(1)
      .max(MAX_TOOL_NAME_CHARS)
      .openapi({ description: "Public tool name, as listed in the turn's tools.", example: 'mcp__everything__echo' }),
    arguments: JsonObject.optional().openapi({
      description: 'The tool arguments (a JSON object).',
      example: { message: 'hi' },
    }),
    taskId: z
      .string()
      .min(1)
      .max(MAX_TASK_ID_CHARS)
      .regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only')
      .optional()
      .openapi({
        description:
          "Take up this MCP task instead of calling the tool: one that a call of the same tool left running when its turn ended with `detach` (its outcome's `detached.takeUp`). The turn polls it and fetches its result, which becomes this call's outcome; nothing is created.",
        example: '56c1a4b35ea4422a0409aaff14c790cd',
      }),
  })
  .strict()
  .openapi('CallRequest');

export const EndTurnSchema = z
  .object({
    detach: z.boolean().optional().openapi({
      description:
        "Do not wait for calls that run as MCP tasks: each is answered as `detached` (its task goes on; its outcome's `detached` says how a later turn takes it up). Other calls are still waited for (default false).",
    }),
    endSession: z
      .boolean()
      .optional()
      .openapi({ description: "End the session too, once the turn's calls are done (default false)." }),
  })
  .strict()
  .openapi('EndTurn');

/**
 * A turn's limits, each in the range the workflow accepts: a limit the workflow would refuse is a
 * 400 here, naming the field, and one it accepts is never refused here.
 */
function limitsSchema() {
  const fields = Object.entries(TURN_LIMIT_RANGES).map(([field, { min, max }]) => [
    field,
    z.number().int().min(min).max(max).optional(),
  ]);
  return z
    .object(
      Object.fromEntries(fields) as { -readonly [K in keyof typeof TURN_LIMIT_RANGES]: z.ZodOptional<z.ZodNumber> },
    )
    .strict();
}

const absolutePath = z.string().min(1).max(4096).regex(/^\//, 'an absolute path');

export const StartTurnSchema = z
  .object({
    workspace: absolutePath.optional().openapi({
      description:
        'The turn\'s workspace (absolute; default: the API process\'s working directory). Given, it is also offered to the servers as their MCP root, where the worker allows it (DMCP_WORKSPACE_ROOTS) and the entry does not say "roots": false.',
    }),
    servers: z
      .object({
        mcpConfigFiles: z.array(absolutePath).max(32).optional(),
        inlineSpecs: z.array(z.string().min(1).max(4096)).max(32).optional(),
        plugins: z.array(absolutePath).max(32).optional(),
      })
      .strict()
      .optional()
      .openapi({
        description: 'Config references, resolved on the worker; each must be allowed by the API (see docs/api.md).',
      }),
    limits: limitsSchema().optional(),
    turn: z
      .number()
      .int()
      .min(1)
      .max(999_999_999)
      .optional()
      .openapi({ description: 'Turn number; give it to make a retried start attach to the same turn.' }),
    agent: z
      .string()
      .regex(
        AGENT_ID_PATTERN,
        'an agent ID: letters, digits and . _ : @ / -, starting with a letter or digit, at most 128',
      )
      .optional()
      .openapi({
        description:
          "Run as this agent: its servers granted on the shelf join the turn. The token's prefixes must start the agent ID; the workspace must be under DMCP_WORKSPACE_ROOTS (the agent is signed with it).",
        example: 'support-bot',
      }),
    endSession: z.boolean().optional().openapi({
      description:
        "End the session with this turn: once its calls are done, the worker stops the session's servers instead of keeping them for a next turn (default false).",
    }),
    calls: z
      .array(z.array(CallRequestSchema).min(1).max(MAX_BATCH_GROUP_CALLS))
      .min(1)
      .max(MAX_BATCH_CALLS)
      .optional()
      .openapi({
        description:
          `Batch form: groups run in order, the calls of a group in parallel; the answer holds every outcome. ` +
          `At most ${MAX_BATCH_CALLS} calls in all, each with its own ID; the turn refuses more (422).`,
      }),
    model: ModelTurnSchema.optional(),
  })
  .strict()
  .openapi('StartTurn');

export const ServerStatusSchema = z
  .object({
    name: z.string(),
    layer: z.enum(LayerKind),
    source: z.string(),
    transport: z.enum(TransportKind),
    state: z.enum(ServerState),
    tools: z.array(z.string()),
    error: z.string().optional(),
    warnings: z.array(z.string()),
    pid: z.number().int().optional(),
    login: z.enum(LoginProblemKind).optional(),
    era: z.enum(ProtocolEra).optional().openapi({
      description: 'The MCP wire era the server landed on: legacy (2025 and earlier) or modern (2026-07-28).',
    }),
  })
  .openapi('ServerStatus');

export const TurnStatusSchema = z
  .object({
    mcp: z.enum(['on', 'off']),
    servers: z.array(ServerStatusSchema),
    warnings: z.array(z.string()),
    reportedAt: z.string().openapi({ description: 'ISO time the worker produced the status.' }),
  })
  .openapi('TurnStatus');

export const ToolSchema = z
  .object({
    name: z.string(),
    server: z.string(),
    tool: z.string(),
    description: z.string(),
    inputSchema: JsonObject,
    annotations: JsonObject.optional(),
    timeoutMs: z.number().optional(),
    retry: z.enum(['safe', 'never']).optional(),
    taskSupport: z.enum(['optional', 'required']).optional().openapi({
      description:
        "The tool may run as an MCP task (its listing's `execution.taskSupport`; `optional` for every tool of a 2026-07-28 server that offers the tasks extension).",
    }),
    tasks: z
      .literal('prefer')
      .optional()
      .openapi({ description: 'The server entry\'s `"tasks": "prefer"`: a task-optional tool runs as a task.' }),
  })
  .openapi('Tool');

/** A content block: text, image, audio, resource link or embedded resource (binary data as links in transcripts). */
export const ContentBlockSchema = z.looseObject({ type: z.string() }).openapi('ContentBlock');

export const OutcomeSchema = z
  .object({
    status: z.enum(['ok', 'error']),
    content: z.array(ContentBlockSchema),
    isError: z.boolean(),
    structuredContent: JsonObject.optional(),
    errorKind: z.enum(CallErrorKind).optional(),
    errorMessage: z.string().optional(),
    startedAt: z.string(),
    durationMs: z.number(),
    attempts: z.number().int(),
    approvedArguments: JsonObject.optional().openapi({
      description: 'The arguments the call ran with because a person approved it with these instead of its own',
    }),
    detached: z
      .object({
        taskId: z.string(),
        server: z.string(),
        sessionId: z.string(),
        remote: z.boolean(),
        expiresAt: z.string().optional(),
        takeUp: z.object({ name: z.string(), taskId: z.string() }),
      })
      .optional()
      .openapi({
        description:
          'With errorKind `detached`: the MCP task the call left running when its turn ended with `detach`, and the call request (`takeUp`, with a new `id`) that fetches its result in a later turn.',
      }),
  })
  .openapi('Outcome');

export const ModelViewSchema = z
  .object({
    text: z.string(),
    images: z.array(
      z.object({ mimeType: z.string(), data: z.string(), bytes: z.number().int(), index: z.number().int() }),
    ),
    cutTokens: z.number().int(),
    cutApproximate: z.boolean(),
    notes: z.array(z.string()),
  })
  .openapi('ModelView');

export const CallResultSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    outcome: OutcomeSchema,
    model: ModelViewSchema.optional().openapi({ description: 'With ?render=model: what the model should read.' }),
  })
  .openapi('CallResult');

export const CallPendingSchema = z
  .object({
    id: z.string(),
    state: z.literal('running'),
    poll: ApiLink.openapi({ description: 'GET this for the outcome.' }),
    progress: JsonObject.optional().openapi({
      description:
        "The latest progress the server reported (its notification's fields); for a call that runs as an MCP task, where the task stood at the latest poll (taskId, status, statusMessage, message).",
    }),
  })
  .openapi('CallPending');

export const TASK_STATUSES = [
  'working',
  'input_required',
  'completed',
  'failed',
  'cancelled',
  'lost',
  'unknown',
] as const;

/** A call's MCP task as its polls recorded it. */
export const TaskRecordSchema = z
  .object({
    taskId: z.string(),
    status: z.enum(TASK_STATUSES).openapi({
      description:
        '`lost`: the stdio server process that ran it is gone; `unknown`: the server no longer knows it (its TTL ran out).',
    }),
    statusMessage: z.string().optional(),
    polls: z.number().int(),
    changes: z.array(
      z.object({ poll: z.number().int(), status: z.enum(TASK_STATUSES), statusMessage: z.string().optional() }),
    ),
  })
  .openapi('TaskRecord');

export const CallRecordSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    arguments: JsonObject,
    outcome: OutcomeSchema.optional(),
    failures: z.array(z.string()),
    summary: z.string().optional(),
    inputs: z
      .array(
        z.looseObject({
          key: z.string(),
          round: z.number().int(),
          kind: z.enum(InputKind),
          message: z.string(),
          action: z.enum(InputAction).optional(),
        }),
      )
      .optional()
      .openapi({
        description:
          'The questions the call asked a person, round by round, and how each was answered (never the content).',
      }),
    task: TaskRecordSchema.optional(),
  })
  .openapi('CallRecord');

export const TurnStartedSchema = z
  .object({
    sessionId: z.string(),
    turnId: z.string(),
    turn: z.string(),
    workerQueue: z.string(),
    status: TurnStatusSchema,
    tools: z.array(ToolSchema),
    serversParagraph: z.string(),
    links: z.object({ calls: ApiLink, end: ApiLink, transcript: ApiLink }),
  })
  .openapi('TurnStarted');

export const TurnResultSchema = z
  .object({
    sessionId: z.string(),
    turnId: z.string(),
    turn: z.string(),
    endedBy: z.enum(TurnEndedBy),
    calls: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        arguments: JsonObject,
        taskId: z.string().optional(),
        outcome: OutcomeSchema,
      }),
    ),
    callsBefore: z.number().int().optional(),
    ...modelResultFields,
  })
  .openapi('TurnResult');

export const SessionEndedSchema = z
  .object({
    sessionId: z.string(),
    turnsEnded: z.array(z.string()).openapi({ description: 'The open turns of the session that were ended.' }),
    workers: z
      .number()
      .int()
      .min(0)
      .openapi({ description: 'Workers that answered; one that is gone took its servers with it.' }),
    servers: z.number().int().min(0).openapi({ description: 'Servers of the session stopped on them.' }),
  })
  .strict()
  .openapi('SessionEnded');

export const TranscriptSchema = z
  .object({
    turnId: z.string(),
    sessionId: z.string().optional(),
    workerQueue: z.string().optional(),
    status: TurnStatusSchema.optional(),
    serversParagraph: z.string().optional(),
    tools: z.array(ToolSchema),
    calls: z.array(CallRecordSchema),
    modelSteps: z.array(TranscriptModelStepSchema).optional().openapi({
      description: "A model turn's steps, in order; `callsBefore` places each among `calls`",
    }),
    answer: z.string().optional().openapi({ description: "A model turn's answer once it ended" }),
    endedBy: z.enum(TurnEndedBy).optional(),
    state: z.enum(['running', 'completed', 'failed', 'terminated', 'timed out', 'cancelled', 'continued']),
    failure: z.string().optional(),
    otherRuns: z.array(z.string()).optional().openapi({
      description:
        "Run IDs of other executions at this workflow ID that are not the turn's run chain, left out of the transcript",
    }),
  })
  .openapi('Transcript');

export const SessionStatusSchema = z
  .object({
    sessionId: z.string(),
    turnId: z.string(),
    reportedAt: z.string().optional(),
    status: TurnStatusSchema.optional(),
    sessionEndedAt: z.string().optional().openapi({
      description:
        'When the session was ended after this turn started: its servers were stopped then, whatever the status says of them',
    }),
  })
  .openapi('SessionStatus');

export const TurnListSchema = z
  .object({ sessionId: z.string(), turns: z.array(z.object({ turnId: z.string(), turn: z.string(), href: ApiLink })) })
  .openapi('TurnList');

export const InputRequestSchema = z
  .object({
    requestId: z.string().openapi({ description: 'Answer under this ID: `<callId>:<round>:<key>`.' }),
    callId: z.string(),
    tool: z.string(),
    key: z.string(),
    round: z.number().int(),
    kind: z.enum(InputKind),
    message: z.string(),
    requestedSchema: JsonObject.optional().openapi({
      description: 'Form mode: the restricted JSON Schema of the answer.',
    }),
    url: z
      .string()
      .optional()
      .openapi({ description: 'URL mode: the page to show the person (the worker never opens it).' }),
    elicitationId: z.string().optional(),
    askedAt: z.string(),
  })
  .openapi('InputRequest');

export const InputListSchema = z.object({ inputs: z.array(InputRequestSchema) }).openapi('InputList');

const AnswerValue = z.union([
  z.string().max(MAX_INPUT_TEXT_CHARS),
  z.number(),
  z.boolean(),
  z.array(z.string().max(MAX_INPUT_TEXT_CHARS)).max(256),
]);
export const InputAnswerSchema = z
  .object({
    action: z.enum(InputAction),
    content: z
      .record(z.string().max(256), AnswerValue)
      .optional()
      .openapi({ description: 'With `accept` of a form request: the requested fields.' }),
  })
  .strict()
  .openapi('InputAnswer');

export const InputReceiptSchema = z
  .object({ requestId: z.string(), action: z.enum(InputAction) })
  .openapi('InputReceipt');

export const CancelResultSchema = z.object({ id: z.string(), cancelled: z.boolean() }).openapi('CancelResult');

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]]),
      message: z.string(),
      field: z.string().optional(),
      requestId: z.string(),
    }),
  })
  .openapi('Error');

export const HealthSchema = z.object({ ok: z.boolean(), temporal: z.string().optional() }).openapi('Health');
