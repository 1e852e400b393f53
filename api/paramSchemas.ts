/** What a request's path and query name: a session, a turn, a call, a block, an input request. */
import { z } from '@hono/zod-openapi';
import {
  INPUT_REQUEST_ID_PATTERN,
  MAX_CALL_ID_CHARS,
  MAX_INPUT_REQUEST_ID_CHARS,
  SESSION_ID_PATTERN,
} from '../contract/index.js';

export const SessionIdParam = z
  .string()
  .regex(SESSION_ID_PATTERN, 'letters, digits, ".", "_", ":" or "-", starting with a letter or digit, at most 128')
  .openapi({ param: { name: 'sessionId', in: 'path' }, example: 'agent-7' });

export const TurnParam = z
  .string()
  .regex(/^turn-[1-9]\d{0,8}$/, 'turn-<n>')
  .openapi({ param: { name: 'turn', in: 'path' }, example: 'turn-1' });

export const CallIdParam = z
  .string()
  .min(1)
  .max(MAX_CALL_ID_CHARS)
  .openapi({ param: { name: 'callId', in: 'path' }, example: 'toolu_01' });

export const IndexParam = z
  .string()
  .regex(/^\d{1,4}$/, 'a block index')
  .openapi({ param: { name: 'index', in: 'path' }, example: '0' });

export const SessionParams = z.object({ sessionId: SessionIdParam });
export const TurnParams = z.object({ sessionId: SessionIdParam, turn: TurnParam });
export const CallParams = z.object({ sessionId: SessionIdParam, turn: TurnParam, callId: CallIdParam });
export const ContentParams = z.object({
  sessionId: SessionIdParam,
  turn: TurnParam,
  callId: CallIdParam,
  index: IndexParam,
});

export const InputRequestIdParam = z
  .string()
  .min(1)
  .max(MAX_INPUT_REQUEST_ID_CHARS)
  .regex(INPUT_REQUEST_ID_PATTERN, 'an input request ID is <callId>:<round>:<key>')
  .openapi({ param: { name: 'requestId', in: 'path' }, example: 'toolu_01:1:name' });
export const InputParams = z.object({ sessionId: SessionIdParam, turn: TurnParam, requestId: InputRequestIdParam });

export const CallQuerySchema = z.object({
  render: z
    .enum(['model'])
    .optional()
    .openapi({ description: 'model: also return what the model should read (shaped text and images).' }),
  wait: z
    .string()
    .regex(/^\d{1,6}$/, 'milliseconds')
    .optional()
    .openapi({
      description:
        "How long to wait for the outcome before answering 202 (ms; at most the server's DMCP_API_CALL_WAIT).",
    }),
});
