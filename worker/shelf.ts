/**
 * The worker's side of the shelf: the agent's servers read from the shelf workflow for each turn
 * that names an agent, and the logins of shelf servers (tokens from the deployment's token store,
 * opened on first use so a worker that never meets a shelf server never creates a key file).
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { hashEntries } from '../config/load.js';
import type { LoadedConfig } from '../config/types.js';
import type { LoginCredentials, LoginToken } from '../mcp/login.js';
import { createCredentials, loginProblem, type Credentials } from '../plane/credentials.js';
import { machineLoginId } from '../plane/machineGrant.js';
import { isMachineGrant, type ShelfState } from '../contract/shelf.js';
import { machineClientsOf, shelfLayerText } from '../plane/shelfLayer.js';
import type { MachineClient } from '../plane/shelfMachineClient.js';
import { ShelfClient } from '../plane/shelfClient.js';
import { tokenStoreFromSettings, type TokenStore } from '../plane/tokenStore.js';
import type { Settings } from '../settings/index.js';

/** What a worker needs to give turns their agents' shelf servers and those servers' logins. */
export interface WorkerShelf {
  /** For `loadConfig`'s `shelf` option: the agent's verified servers as `mcp.json` text. */
  layerFor(agent: string): Promise<{ text?: string; warnings: string[] }>;
  /** The pool's credentials for shelf servers with a login. */
  credentials: LoginCredentials;
  /** Stamps each shelf server with its login's ID, so a new login (or a logout) restarts it. */
  withLoginIds(config: LoadedConfig): Promise<LoadedConfig>;
  /** Called once the worker's Temporal client exists. */
  attach(client: Client): void;
}

export interface WorkerShelfOptions {
  settings: Pick<Settings, 'dataDir' | 'oauth'>;
  taskQueue: string;
  turnKey: Buffer | undefined;
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/** Agents whose last shelf layer is kept for a turn when the shelf cannot be read; the oldest go first. */
const AGENTS_KEPT = 1000;

/**
 * The pool's credentials for shelf servers, over credentials opened on first use. The token store
 * failing is the server's problem, named in its status; the turn goes on.
 */
function lazyCredentials(open: () => Promise<Credentials>): LoginCredentials {
  let opened: Credentials | undefined;
  const storeProblem = (server: string, err: unknown): LoginToken => ({
    problem: loginProblem('refresh_failed', server, {
      reason: `the token store: ${(err as Error)?.message ?? String(err)}`,
    }),
  });
  return {
    accessToken: async (server, url) => {
      try {
        return await (opened = await open()).accessToken(server, url);
      } catch (err) {
        return storeProblem(server, err);
      }
    },
    afterUnauthorized: async (server, url, failed) => {
      try {
        return await (opened = await open()).afterUnauthorized(server, url, failed);
      } catch (err) {
        return storeProblem(server, err);
      }
    },
    insufficientScope: async (server, url, denied, scope) => {
      const fallback = loginProblem('insufficient_scope', server, { ...(scope ? { scope } : {}) });
      try {
        return (await (opened = await open()).insufficientScope?.(server, url, denied, scope)) ?? fallback;
      } catch {
        return fallback;
      }
    },
    authorizationServerMoved: async (server, url, resourceMetadataUrl) => {
      try {
        return await (opened = await open()).authorizationServerMoved?.(server, url, resourceMetadataUrl);
      } catch {
        // The token store's trouble is named by the refresh that comes next.
        return undefined;
      }
    },
    secretsOf: (server) => opened?.secretsOf?.(server) ?? [],
  };
}

/**
 * The shelf's machine logins as last read, with those `found` for this turn's agent: a server no
 * longer on the shelf, or no longer a machine login, is dropped.
 */
function updateMachines(
  machines: Map<string, MachineClient>,
  state: ShelfState,
  found: Map<string, MachineClient>,
): void {
  const onShelf = new Set(state.servers.map((s) => s.name));
  for (const name of machines.keys()) if (!onShelf.has(name)) machines.delete(name);
  for (const s of state.servers) {
    const client = found.get(s.name);
    if (client) machines.set(s.name, client);
    else if (s.entry.type === 'stdio' || !isMachineGrant(s.entry.oauth?.grant)) machines.delete(s.name);
  }
}

export function createWorkerShelf(options: WorkerShelfOptions): WorkerShelf {
  let shelf: ShelfClient | undefined;
  const lastRead = new Map<string, { layer: { text?: string; warnings: string[] }; at: string }>();
  let store: Promise<TokenStore> | undefined;
  let credentials: Promise<Credentials> | undefined;
  // A store that failed to open (a key file with loose permissions, say) is tried again next time:
  // the operator's fix must not wait for a worker restart.
  const openStore = () =>
    (store ??= tokenStoreFromSettings(options.settings).catch((err: unknown) => {
      store = undefined;
      throw err;
    }));
  const openCredentials = () =>
    (credentials ??= openStore().then(
      (s) =>
        createCredentials({
          store: s,
          logger: options.logger.child({ part: 'oauth' }),
          env: options.env,
          machineClient: (server) => machines.get(server),
        }),
      (err: unknown) => {
        credentials = undefined;
        throw err;
      },
    ));
  // The machine logins of the shelf as last read: their workers get tokens by themselves.
  const machines = new Map<string, MachineClient>();
  const lazy = lazyCredentials(openCredentials);
  return {
    credentials: lazy,
    attach(client) {
      shelf = new ShelfClient({ client, taskQueue: options.taskQueue, by: 'worker' });
    },
    async layerFor(agent) {
      if (!shelf) throw new Error('the worker is not connected yet');
      let layer: { text?: string; warnings: string[] };
      try {
        const state = await shelf.read();
        const read = shelfLayerText(state, agent, options.turnKey, options.env);
        updateMachines(machines, state, machineClientsOf(state, agent, options.turnKey));
        layer = { ...(read.text !== undefined ? { text: read.text } : {}), warnings: read.warnings };
      } catch (err) {
        // A shelf that does not answer this once must not take the agent's servers away: the config
        // would change and the session's servers (and their state) would be restarted.
        const kept = lastRead.get(agent);
        if (!kept) throw err;
        return {
          ...kept.layer,
          warnings: [
            ...kept.layer.warnings,
            `shelf: could not be read (${(err as Error)?.message ?? String(err)}); the servers it granted at ${kept.at} are used`,
          ],
        };
      }
      lastRead.delete(agent);
      lastRead.set(agent, { layer, at: new Date().toISOString() });
      if (lastRead.size > AGENTS_KEPT) lastRead.delete(lastRead.keys().next().value!);
      return layer;
    },
    async withLoginIds(config) {
      if (!config.servers.some((s) => s.login !== undefined)) return config;
      const warnings: string[] = [];
      let tokens: TokenStore | undefined;
      try {
        tokens = await openStore();
      } catch (err) {
        warnings.push(`logins of shelf servers not read: ${(err as Error)?.message ?? String(err)}`);
      }
      const servers = await Promise.all(
        config.servers.map(async (s) => {
          if (s.login === undefined) return s;
          // Known before its first token, so that token does not restart the server.
          const machine = machines.get(s.login);
          if (machine) return { ...s, loginId: machineLoginId(s.login, machine) };
          if (!tokens) return s;
          const loginId = await tokens.loginId(s.login).catch((err: unknown) => {
            warnings.push(`${s.name}: its login could not be read (${(err as Error)?.message ?? String(err)})`);
            return undefined;
          });
          return loginId === undefined ? s : { ...s, loginId };
        }),
      );
      return { ...config, servers, warnings: [...config.warnings, ...warnings], hash: hashEntries(servers) };
    },
  };
}
