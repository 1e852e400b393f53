/** The event stream of a session: the `data` of each event, and the stream as OpenAPI describes it. */
import { z } from '@hono/zod-openapi';
import {
  ErrorSchema,
  InputRequestSchema,
  OutcomeSchema,
  TASK_STATUSES,
  TranscriptSchema,
  TurnStatusSchema,
} from './schemas.js';
import { ModelUsageSchema, StepToolCallsSchema } from './modelSchemas.js';

const eventBase = { sessionId: z.string().optional(), turnId: z.string() };

/** The `data` of each event (JSON), by component name; `api/events.ts` builds them. */
export const SESSION_EVENT_DATA: [event: string, name: string, schema: z.ZodType][] = [
  [
    'mcp.status',
    'McpStatusEvent',
    z
      .object({
        ...eventBase,
        reportedAt: z.string(),
        status: TurnStatusSchema,
        serversParagraph: z.string().optional(),
      })
      .openapi('McpStatusEvent'),
  ],
  [
    'call.started',
    'CallStartedEvent',
    z.object({ ...eventBase, id: z.string(), name: z.string() }).openapi('CallStartedEvent'),
  ],
  [
    'call.input_required',
    'CallInputRequiredEvent',
    z
      .object({
        ...eventBase,
        id: z.string(),
        name: z.string(),
        ...InputRequestSchema.pick({
          requestId: true,
          key: true,
          round: true,
          kind: true,
          message: true,
          requestedSchema: true,
          url: true,
          elicitationId: true,
        }).shape,
      })
      .openapi('CallInputRequiredEvent'),
  ],
  [
    'call.progress',
    'CallProgressEvent',
    z
      .object({
        ...eventBase,
        id: z.string(),
        name: z.string(),
        taskId: z.string(),
        poll: z.number().int(),
        status: z.enum(TASK_STATUSES),
        statusMessage: z.string().optional(),
      })
      .openapi('CallProgressEvent'),
  ],
  [
    'call.finished',
    'CallFinishedEvent',
    z
      .object({
        ...eventBase,
        id: z.string(),
        name: z.string(),
        status: OutcomeSchema.shape.status,
        isError: z.boolean(),
        errorKind: OutcomeSchema.shape.errorKind,
        durationMs: z.number(),
        attempts: z.number().int(),
      })
      .openapi('CallFinishedEvent'),
  ],
  [
    'model.step',
    'ModelStepEvent',
    z
      .object({
        ...eventBase,
        step: z.number().int(),
        model: z.string(),
        text: z.string(),
        toolCalls: StepToolCallsSchema,
        finishReason: z.string().optional(),
        usage: ModelUsageSchema.optional(),
      })
      .openapi('ModelStepEvent'),
  ],
  [
    'model.text',
    'ModelTextEvent',
    z
      .object({ turnId: z.string(), step: z.number().int(), attempt: z.number().int(), text: z.string() })
      .openapi('ModelTextEvent', { description: "A piece of a model step's text, as the model produced it" }),
  ],
  [
    'model.reset',
    'ModelResetEvent',
    z.object({ turnId: z.string(), step: z.number().int(), attempt: z.number().int() }).openapi('ModelResetEvent', {
      description: "The step is tried again (this attempt): the text sent of it so far is void, this attempt's follows",
    }),
  ],
  [
    'call.approval_required',
    'CallApprovalRequiredEvent',
    z
      .object({
        ...eventBase,
        id: z.string(),
        name: z.string(),
        requestId: z.string(),
        message: z.string(),
        requestedSchema: z.record(z.string(), z.unknown()).optional(),
        approval: z.object({ argumentsHash: z.string(), why: z.string(), edits: z.string().optional() }).optional(),
      })
      .openapi('CallApprovalRequiredEvent', {
        description:
          'A call waits for a person: answer `{decision: approve|deny, reason?}` at `.../inputs/{requestId}`',
      }),
  ],
  [
    'turn.ended',
    'TurnEndedEvent',
    z
      .object({
        ...eventBase,
        state: TranscriptSchema.shape.state,
        endedBy: TranscriptSchema.shape.endedBy,
        answer: z.string().optional(),
      })
      .openapi('TurnEndedEvent'),
  ],
  ['error', 'StreamErrorEvent', ErrorSchema.shape.error.openapi('StreamErrorEvent')],
];

/**
 * One event of the stream, as OpenAPI 3.1 describes an item of `text/event-stream` (the fields of
 * the event, `data` a JSON text of the named schema). The stream's last event, `error`, has no ID:
 * it is sent once when reading Temporal failed, and the stream ends.
 */
export function sessionEventSchema() {
  return {
    oneOf: SESSION_EVENT_DATA.map(([event, name]) => ({
      type: 'object' as const,
      properties: {
        event: { type: 'string' as const, const: event },
        data: {
          type: 'string' as const,
          contentMediaType: 'application/json',
          contentSchema: { $ref: `#/components/schemas/${name}` },
        },
        id: { type: 'string' as const },
        retry: { type: 'integer' as const },
      },
      required: event === 'error' ? ['event', 'data'] : ['event', 'data', 'id'],
    })),
  };
}
