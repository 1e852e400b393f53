/**
 * The shelf as one worker reads it for one agent's turn: the `mcp.json` text of the servers whose
 * proofs verify with its turn key, and the machine logins among them. Pure.
 */
import { agentIdProblem, isMachineGrant, type MachineGrant, type ShelfState } from '../contract/index.js';
import { shelfConfigEntry, verifyShelfGrant, verifyShelfServer } from './shelf.js';
import type { MachineClient } from './shelfMachineClient.js';

/**
 * The machine logins among the servers granted to `agent` whose server and grant proofs verify
 * with the worker's turn key: only an entry the operator signed may have the workers send a
 * client's secret anywhere. Pure.
 */
export function machineClientsOf(
  state: ShelfState,
  agent: string,
  key: Buffer | undefined,
): Map<string, MachineClient> {
  const out = new Map<string, MachineClient>();
  if (!key || agentIdProblem(agent)) return out;
  const servers = new Map(state.servers.map((s) => [s.name, s]));
  for (const grant of state.grants) {
    const server = grant.agent === agent ? servers.get(grant.server) : undefined;
    const entry = server?.entry;
    if (!server || entry?.type === 'stdio' || !isMachineGrant(entry?.oauth?.grant)) continue;
    if (!verifyShelfServer(key, server) || !verifyShelfGrant(key, grant, server.entry)) continue;
    out.set(server.name, { ...entry.oauth!, grant: entry.oauth!.grant! as MachineGrant });
  }
  return out;
}

/**
 * The shelf layer of one agent's turn: the `mcp.json` text of the servers granted to `agent` whose
 * server and grant proofs verify with the worker's turn key (`text` undefined when there are none),
 * and a warning for each one left out because a proof does not verify. Pure.
 * @param env the worker's environment: which variables are secret (see {@link shelfConfigEntry}).
 */
export function shelfLayerText(
  state: ShelfState,
  agent: string,
  key: Buffer | undefined,
  env: NodeJS.ProcessEnv = {},
): { text: string | undefined; warnings: string[] } {
  const warnings: string[] = [];
  if (agentIdProblem(agent)) return { text: undefined, warnings };
  const servers = new Map(state.servers.map((s) => [s.name, s]));
  const entries: Record<string, unknown> = {};
  const grants = state.grants.filter((g) => g.agent === agent).sort((a, b) => a.server.localeCompare(b.server));
  for (const grant of grants) {
    const server = servers.get(grant.server);
    if (!server) continue;
    if (!key) {
      warnings.push(
        `shelf: server "${server.name}" not used: this worker has no turn key to check the shelf's proofs with`,
      );
      continue;
    }
    if (!verifyShelfServer(key, server)) {
      warnings.push(
        `shelf: server "${server.name}" not used: it is not signed with this worker's turn key (put it on the shelf again from a machine holding the key: durable-mcp mcp forget ${server.name}, then mcp add)`,
      );
      continue;
    }
    if (!verifyShelfGrant(key, grant, server.entry)) {
      warnings.push(
        `shelf: server "${server.name}" not used for agent "${agent}": the grant is not signed with this worker's turn key (grant it again: durable-mcp mcp grant ${server.name} --agent ${agent})`,
      );
      continue;
    }
    entries[server.name] = shelfConfigEntry(server.entry, env);
  }
  if (Object.keys(entries).length === 0) return { text: undefined, warnings };
  return { text: `${JSON.stringify({ mcpServers: entries }, null, 2)}\n`, warnings };
}
