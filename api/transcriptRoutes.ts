/**
 * A turn read back from its history: the transcript, and the bytes of the binary content its
 * outcomes hold (the transcript links to them rather than inlining them).
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { TurnClient } from '../client/turnClient.js';
import type { Transcript } from '../client/transcript.js';
import { binaryOf, linkBinaryContent } from './content.js';
import { ApiError } from './errors.js';
import { API, callPath, errors, ok, readTranscript, type ApiApp } from './routing.js';
import { ContentParams, TurnParams } from './paramSchemas.js';
import * as S from './schemas.js';

/** Adds a turn's transcript and the bytes of its binary content blocks. */
export function registerTranscriptRoutes(app: ApiApp, turns: TurnClient): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/turns/{turn}/transcript`,
      tags: ['transcripts'],
      summary: 'A turn rendered from its history (across continue-as-new runs)',
      description: 'Images, audio and blobs are links (`href`) to their bytes, authorized like the rest.',
      request: { params: TurnParams },
      responses: { 200: ok(S.TranscriptSchema, 'The transcript'), ...errors(404) },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const t = await readTranscript(turns, sessionId, turn);
      return c.json(linkedTranscript(t, sessionId, turn), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/turns/{turn}/calls/{callId}/content/{index}`,
      tags: ['transcripts'],
      summary: "The bytes of one binary content block of a call's outcome",
      description:
        'Images are served as the type their bytes show; other blocks as application/octet-stream (audio as its declared audio type).',
      request: { params: ContentParams },
      responses: {
        200: {
          description: 'The bytes',
          content: {
            'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) },
            'image/png': { schema: z.string().openapi({ format: 'binary' }) },
          },
        },
        ...errors(404),
      },
    }),
    async (c) => {
      const { sessionId, turn, callId, index } = c.req.valid('param');
      const t = await readTranscript(turns, sessionId, turn);
      const call = t.calls.find((x) => x.id === callId);
      const bin = binaryOf(call?.outcome?.content[Number(index)]);
      if (!bin)
        throw new ApiError(
          'not_found',
          `no binary content block ${index} in call ${JSON.stringify(callId)}`,
          'path.index',
        );
      c.header('Content-Security-Policy', "default-src 'none'");
      c.header('Content-Disposition', `inline; filename="${callId.replace(/[^\w.-]/g, '_')}-${index}"`);
      return c.body(new Uint8Array(bin.bytes), 200, { 'Content-Type': bin.contentType });
    },
  );
}

/** The transcript as JSON for a client: binary content as links. */
function linkedTranscript(t: Transcript, sessionId: string, turn: string) {
  return {
    ...t,
    calls: t.calls.map((c) => ({
      ...c,
      ...(c.outcome
        ? {
            outcome: {
              ...c.outcome,
              content: linkBinaryContent(c.outcome.content, `${callPath(sessionId, turn, c.id)}/content`),
            },
          }
        : {}),
    })),
  };
}
