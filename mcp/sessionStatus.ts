import type { ServerStatus, TurnStatus } from '../contract/index.js';
import type { ManagedServer } from './managedServer.js';
import { keptTools, type Session } from './poolSession.js';
import type { SessionToolNames } from './sessionTools.js';
import type { ToolNameMap } from './toolNames.js';

/** The session's status as of now: each server's state and public tools, and what the model should know. */
export function sessionStatus(
  session: Session,
  toolNames: SessionToolNames,
  scrub: (text: string) => string,
): TurnStatus {
  const config = session.config;
  const reportedAt = new Date().toISOString();
  if (!config || config.off) return { mcp: config?.off ? 'off' : 'on', servers: [], warnings: [], reportedAt };
  const names = toolNames.of(session);
  const servers = [...session.servers.values()].map((server) => serverStatus(server, names));
  for (const refused of config.refused) {
    servers.push({
      name: refused.name,
      layer: refused.layer,
      source: refused.source,
      transport: refused.transport,
      state: 'failed',
      tools: [],
      error: scrub(refused.reason),
      warnings: [],
    });
  }
  servers.sort((a, b) => a.name.localeCompare(b.name));
  return { mcp: 'on', servers, warnings: config.warnings.map(scrub), reportedAt };
}

function serverStatus(server: ManagedServer, names: ToolNameMap): ServerStatus {
  const { entry } = server;
  const base = {
    name: entry.name,
    layer: entry.layer,
    source: entry.source,
    transport: entry.type,
    warnings: [] as string[],
  };
  if (!entry.enabled) return { ...base, state: 'disabled', tools: [] };
  if (server.state !== 'ready') {
    const login = server.loginProblem ? { login: server.loginProblem.kind } : {};
    return { ...base, state: 'failed', tools: [], error: server.error ?? `server is ${server.state}`, ...login };
  }
  const offered = new Set(server.tools.map((t) => t.name));
  const kept = keptTools(server);
  for (const wanted of entry.tools ?? []) {
    if (!offered.has(wanted))
      base.warnings.push(`tool "${wanted}" is listed in "tools" but the server does not offer it`);
  }
  for (const refused of server.refusedTools)
    base.warnings.push(`tool ${JSON.stringify(refused.name)} left out: ${refused.reason}`);
  // A connected server whose login a request found wanting (more scope, or a new authorization server).
  const scopeProblem =
    server.loginProblem?.kind === 'insufficient_scope' || server.loginProblem?.kind === 'moved'
      ? server.loginProblem
      : undefined;
  if (scopeProblem)
    base.warnings.push(scopeProblem.kind === 'moved' ? scopeProblem.message : `its login ${scopeProblem.message}`);
  if (server.junkLines > 0) {
    base.warnings.push(
      `the server wrote ${server.junkLines} non-protocol line(s) to stdout, first: ${JSON.stringify(server.firstJunkLine)}; they were dropped`,
    );
  }
  return {
    ...base,
    state: base.warnings.length > 0 ? 'degraded' : 'ready',
    tools: kept.map((t) => names.publicName(entry.name, t.name)!),
    pid: server.pid,
    ...(server.era ? { era: server.era } : {}),
    ...(scopeProblem ? { login: scopeProblem.kind } : {}),
  };
}
