/**
 * An agent's servers: those granted to it on the shelf, each with whether its proofs verify. Any
 * token whose prefixes reach the agent may read them (as they reach its turns), or the shelf scope.
 */
import { createRoute } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { ShelfServer } from '../contract/index.js';
import { verifyShelfGrant, verifyShelfServer } from '../plane/shelf.js';
import { tokenAllowsAgent } from './auth.js';
import { ApiError } from './errors.js';
import { API, errors, ok, type ApiApp, type Env } from './routing.js';
import { shelfRefusal, type ShelfFor } from './shelf.js';
import { AgentParams, AgentServersSchema } from './shelfSchemas.js';

/** Any token: the route decides by its prefixes, or the shelf scope. */
const ANY_TOKEN = [{ bearer: [] }];

/**
 * Adds `GET /agents/{agent}/servers`.
 * @param turnKey the operator's turn key, which the servers' proofs are verified with.
 */
export function registerAgentRoutes(app: ApiApp, shelfFor: ShelfFor, turnKey: Buffer | undefined): void {
  const agentScope: MiddlewareHandler<Env> = async (c, next) => {
    const token = c.get('token');
    const agent = c.req.param('agent') ?? '';
    if (!token || (!token.shelf && !tokenAllowsAgent(token, agent)))
      throw new ApiError('forbidden', `the token may not reach agent ${JSON.stringify(agent)}`);
    return next();
  };
  app.use(`${API}/agents/:agent/servers`, agentScope);

  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/agents/{agent}/servers`,
      tags: ['shelf'],
      security: ANY_TOKEN,
      summary: 'The servers granted to an agent',
      description: 'Needs the shelf scope, or a token whose prefixes reach the agent.',
      request: { params: AgentParams },
      responses: { 200: ok(AgentServersSchema, "The agent's servers, by name"), ...errors() },
    }),
    async (c) => {
      const { agent } = c.req.valid('param');
      const state = await shelfFor(c).read().catch(shelfRefusal);
      const byName = new Map<string, ShelfServer>(state.servers.map((s) => [s.name, s]));
      const servers = state.grants
        .filter((g) => g.agent === agent && byName.has(g.server))
        .sort((a, b) => a.server.localeCompare(b.server))
        .map((g) => {
          const s = byName.get(g.server)!;
          const verified =
            turnKey !== undefined && verifyShelfServer(turnKey, s) && verifyShelfGrant(turnKey, g, s.entry);
          return { name: s.name, entry: s.entry, grantedAt: g.grantedAt, verified };
        });
      return c.json({ agent, servers }, 200);
    },
  );
}
