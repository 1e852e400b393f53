/** What `durable-mcp mcp list` and `mcp log` show, from the shelf and what was learned besides it (pure). */
import type { ProtocolEra, ShelfEntry, ShelfOAuthClient, ShelfServer, ShelfState } from '../../../contract/index.js';
import { isMachineGrant } from '../../../contract/shelf.js';
import { sameServerUrl } from '../../../text/sameUrl.js';

/** What `mcp list` learned about one server besides the shelf. */
export interface ServerFacts {
  /** The token store's login ID, when the server has a login. */
  loginId?: string;
  /** When the authorization server refused the login's refresh: it is over until a new login. */
  expiredAt?: Date;
  /** The address the login was made for (a server forgotten and put back elsewhere keeps its old login file). */
  loginUrl?: string;
  /** A login started and not finished. */
  pendingSince?: Date;
  /** Scopes the server refused the login's token for (403 `insufficient_scope`): a new login asks for them. */
  wantedScope?: string;
  /** The authorization server the server's metadata names instead of the login's: a new login registers there. */
  movedTo?: string;
  /** What one connection attempt learned (remote servers that some agent has). */
  probe?: ProbeResult;
}

export type ProbeResult =
  | { kind: 'reachable'; era?: ProtocolEra }
  | { kind: 'unauthorized' }
  | { kind: 'unreachable'; why: string }
  | { kind: 'not_probed'; why: string };

export interface ListRow {
  name: string;
  transport: ShelfEntry['type'];
  /** The URL, or the command line. */
  where: string;
  state: string;
  agents: string[];
  addedAt: string;
  addedBy: string;
}

/** The command line of a stdio entry, quoted where a word needs it. */
export function commandLine(entry: ShelfEntry): string {
  if (entry.type !== 'stdio') return entry.url;
  return [entry.command, ...entry.args]
    .map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}

/**
 * One server's state: `not granted` (no agent has it), `command` (a stdio server, not probed),
 * `logged in`, `logged in, wants more access (scope ...)`, `its authorization server moved to ...`, `login started <time>, not finished`, `wants an account`, `reachable`,
 * `unreachable: <why>`.
 */
export function serverState(server: ShelfServer, agents: string[], facts: ServerFacts): string {
  if (agents.length === 0) return 'not granted';
  if (server.entry.type === 'stdio') return 'command';
  if (isMachineGrant(server.entry.oauth?.grant)) return machineState(server.name, server.entry.oauth, facts);
  if (facts.loginId !== undefined && facts.loginUrl !== undefined && !sameServerUrl(facts.loginUrl, server.entry.url)) {
    return `logged in for another address (${facts.loginUrl}), so not used: durable-mcp mcp login ${server.name}`;
  }
  if (facts.loginId !== undefined && facts.movedTo)
    return `its authorization server moved to ${facts.movedTo}: durable-mcp mcp login ${server.name}`;
  if (facts.loginId !== undefined && facts.expiredAt)
    return `login expired or revoked ${facts.expiredAt.toISOString()}: durable-mcp mcp login ${server.name}`;
  if (facts.loginId !== undefined && facts.wantedScope)
    return `logged in, wants more access (scope ${facts.wantedScope}): durable-mcp mcp login ${server.name}`;
  if (facts.loginId !== undefined) return 'logged in';
  if (facts.pendingSince)
    return `login started ${facts.pendingSince.toISOString()}, not finished: durable-mcp mcp login ${server.name}`;
  const probe = facts.probe;
  if (!probe) return 'not probed';
  switch (probe.kind) {
    case 'reachable':
      return probe.era ? `reachable (${probe.era === 'modern' ? 'MCP 2026-07-28' : 'legacy MCP'})` : 'reachable';
    case 'unauthorized':
      return hasAuthorizationHeader(server.entry)
        ? 'reachable (answers 401 without the bearer token the workers send)'
        : `wants an account: durable-mcp mcp login ${server.name}`;
    case 'unreachable':
      return `unreachable: ${probe.why}`;
    case 'not_probed':
      return `not probed: ${probe.why}`;
  }
}

/** A machine login's state: it needs no login, whatever the token store holds, unless its pinned authorization server moved. */
function machineState(name: string, client: ShelfOAuthClient, facts: ServerFacts): string {
  const variable = client.privateKeyEnv ?? client.clientSecretEnv;
  const scope = facts.wantedScope
    ? `; wants more access (scope ${facts.wantedScope}), asked for at the next grant`
    : '';
  const moved =
    facts.loginId !== undefined && facts.movedTo
      ? `; its authorization server moved to ${facts.movedTo}, where no grant is made: if the move is expected, durable-mcp mcp logout ${name}`
      : '';
  if (client.grant === 'id_jag')
    return `cross-app access (the workers exchange the ID token in ${client.idTokenEnv} at the identity provider, then present it with ${variable})${scope}${moved}`;
  return `client credentials (the workers get tokens with ${variable})${scope}${moved}`;
}

function hasAuthorizationHeader(entry: ShelfEntry): boolean {
  return entry.type !== 'stdio' && Object.keys(entry.headers ?? {}).some((k) => k.toLowerCase() === 'authorization');
}

/** The rows of `mcp list`, by server name. */
export function listRows(state: ShelfState, facts: ReadonlyMap<string, ServerFacts>): ListRow[] {
  return [...state.servers]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((s) => {
      const agents = state.grants
        .filter((g) => g.server === s.name)
        .map((g) => g.agent)
        .sort();
      return {
        name: s.name,
        transport: s.entry.type,
        where: commandLine(s.entry),
        state: serverState(s, agents, facts.get(s.name) ?? {}),
        agents,
        addedAt: s.addedAt,
        addedBy: s.addedBy,
      };
    });
}

/** Rows as an aligned table with a header line. */
export function renderTable(rows: ListRow[]): string[] {
  const table = [
    ['SERVER', 'TRANSPORT', 'WHERE', 'STATE', 'AGENTS'],
    ...rows.map((r) => [r.name, r.transport, r.where, r.state, r.agents.join(', ') || '-']),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** The log as lines, oldest first. */
export function renderLog(state: ShelfState): string[] {
  return state.log.map(
    (e) => `${e.at}  ${e.op.padEnd(6)}  ${e.server}${e.agent !== undefined ? ` (agent ${e.agent})` : ''}  by ${e.by}`,
  );
}
