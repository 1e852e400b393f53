/**
 * The routes that need no token: health, readiness, the OpenAPI document and its reference page.
 */
import { createRoute } from '@hono/zod-openapi';
import type { TurnClient } from '../client/turnClient.js';
import { REFERENCE_PAGE_CSP, referenceAsset, referencePage } from './referencePage.js';
import { ApiError } from './errors.js';
import { API, hostRefused, ok, type ApiApp } from './routing.js';
import { SESSION_EVENT_DATA } from './eventSchemas.js';
import * as S from './schemas.js';

/** Adds `/healthz` (the process is up) and `/readyz` (Temporal answers). */
export function registerHealthRoutes(app: ApiApp, turns: Pick<TurnClient, 'client'>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/healthz',
      tags: ['operations'],
      summary: 'The process is up',
      security: [],
      responses: { 200: ok(S.HealthSchema, 'Up'), ...hostRefused },
    }),
    (c) => c.json({ ok: true }, 200),
  );
  app.openapi(
    createRoute({
      method: 'get',
      path: '/readyz',
      tags: ['operations'],
      summary: 'Temporal is reachable',
      security: [],
      responses: {
        200: ok(S.HealthSchema, 'Ready'),
        503: ok(S.HealthSchema, 'Temporal is not reachable'),
        ...hostRefused,
      },
    }),
    async (c) => {
      try {
        await withTimeout(turns.client.connection.workflowService.getSystemInfo({}), 3000);
        return c.json({ ok: true, temporal: 'reachable' }, 200);
      } catch {
        return c.json({ ok: false, temporal: 'unreachable' }, 503);
      }
    },
  );
}

/**
 * Adds the OpenAPI document (built from every route registered on `app`) and its page.
 * @param tokenSource where the API's tokens come from, as the document tells its readers.
 */
export function registerDocument(app: ApiApp, tokenSource: 'configured' | 'dataDir' = 'configured'): void {
  app.doc31(`${API}/openapi.json`, {
    openapi: '3.1.0',
    info: {
      title: 'durable-mcp API',
      version: '1',
      description:
        'Turns, tool calls (idempotent by call ID), server status, events and transcripts of durable-mcp. Every fact lives in Temporal.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
  });
  for (const [, name, schema] of SESSION_EVENT_DATA) app.openAPIRegistry.register(name, schema);
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description:
      (tokenSource === 'dataDir'
        ? "The token in the file api.token of the API's data dir (DMCP_DATA_DIR), created 0600 when the API first starts without DMCP_API_TOKENS: it reaches every session and agent, and has the shelf scope. "
        : 'A token whose SHA-256 is configured in DMCP_API_TOKENS or DMCP_API_TOKENS_FILE: it reaches the sessions and agents its prefixes start; `shelf` routes need an entry ending in the word shelf. ') +
      'Every route needs one except /healthz, /readyz, this document and its page. A `Host` that is not a name of the API and a cross-site `Origin` are refused with 403 before the token is looked at.',
  });
  app.get(`${API}/docs`, (c) => {
    c.header('Content-Security-Policy', REFERENCE_PAGE_CSP);
    return c.html(referencePage(`${API}/docs`));
  });
  app.get(`${API}/docs/:asset`, async (c) => {
    const asset = await referenceAsset(c.req.param('asset'), `${API}/openapi.json`);
    if (!asset) throw new ApiError('not_found', 'no such file of the reference page', 'path.asset');
    c.header('Cache-Control', 'public, max-age=3600');
    return c.body(asset.body, 200, { 'Content-Type': asset.type });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), ms))),
  ]).finally(() => clearTimeout(timer));
}
