import type { ServerEntry } from '../config/types.js';
import type { ToolInfo } from '../contract/index.js';
import { keptTools, readyServers, type Session } from './poolSession.js';
import { ToolNameMap, describeTool, type ToolPrefix } from './toolNames.js';

/** The task fields of a listed tool: its task support, and the entry's `"tasks": "prefer"` where it matters. */
function taskFields(support: unknown, mode: ServerEntry['tasks']): Pick<ToolInfo, 'taskSupport' | 'tasks'> {
  if (support !== 'optional' && support !== 'required') return {};
  return { taskSupport: support, ...(support === 'optional' && mode === 'prefer' ? { tasks: 'prefer' as const } : {}) };
}

/**
 * Each session's public tool names: one map per listing, so public names are unique across all of
 * the session's servers. Kept while the ready servers, their entries and their listings are the
 * same objects (a new listing or entry is a new object): every call checks its public name against it.
 */
export class SessionToolNames {
  private readonly maps = new WeakMap<Session, { key: unknown[]; map: ToolNameMap }>();

  constructor(private readonly prefix: ToolPrefix) {}

  of(session: Session): ToolNameMap {
    const ready = readyServers(session);
    const key = ready.flatMap((s) => [s, s.entry, s.tools]);
    const kept = this.maps.get(session);
    if (kept && kept.key.length === key.length && kept.key.every((k, i) => k === key[i])) return kept.map;
    const refs = ready.flatMap((s) => keptTools(s).map((t) => ({ server: s.entry.name, tool: t.name })));
    const map = new ToolNameMap(refs, this.prefix);
    this.maps.set(session, { key, map });
    return map;
  }
}

/** The tools of the session's ready servers, as the model will see them, by public name. */
export function sessionTools(session: Session, names: ToolNameMap): ToolInfo[] {
  const out: ToolInfo[] = [];
  for (const server of readyServers(session)) {
    for (const tool of keptTools(server)) {
      out.push({
        name: names.publicName(server.entry.name, tool.name)!,
        server: server.entry.name,
        tool: tool.name,
        description: describeTool(server.entry.name, tool.description),
        inputSchema: tool.inputSchema as Record<string, unknown>,
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
        ...(server.entry.toolTimeoutMs ? { timeoutMs: server.entry.toolTimeoutMs } : {}),
        // 'auto' (or nothing) leaves the decision to the annotations.
        ...(server.entry.retry === 'safe' || server.entry.retry === 'never' ? { retry: server.entry.retry } : {}),
        ...taskFields(server.offersModernTasks ? 'optional' : tool.execution?.taskSupport, server.entry.tasks),
      });
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}
