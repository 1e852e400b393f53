/**
 * An API server for a test or a bench: on 127.0.0.1, a free port, one token allowed everything,
 * inline servers and the given workspace allowed, the documented shaping limits. `options` override.
 */
import pino from 'pino';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type ApiServerOptions, type RunningApi } from '../../api/server.js';
import type { TurnClient } from '../../client/turnClient.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';

export function startTestApi(
  turns: TurnClient,
  token: string,
  workspace: string,
  options: Partial<ApiServerOptions> = {},
): Promise<RunningApi> {
  return startApiServer({
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    turns,
    tokens: parseTokens(`${hashToken(token)} *`, 'DMCP_API_TOKENS'),
    boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [workspace] },
    maxBodyBytes: 64 * 1024,
    callWaitMs: 20_000,
    shapeLimits: DEFAULT_SHAPE_LIMITS,
    ...options,
  });
}
