/**
 * The worker's side of the shelf: the agent's servers read from the shelf workflow for each turn
 * that names an agent, and the logins of shelf servers (tokens from the deployment's token store,
 * opened on first use so a worker that never meets a shelf server never creates a key file).
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { hashEntries } from '../config/load.js';
import type { LoadedConfig } from '../config/types.js';
import type { LoginCredentials } from '../mcp/login.js';
import { createCredentials, type Credentials } from '../plane/credentials.js';
import { shelfLayerText } from '../plane/shelf.js';
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

export function createWorkerShelf(options: WorkerShelfOptions): WorkerShelf {
  let shelf: ShelfClient | undefined;
  let store: Promise<TokenStore> | undefined;
  let credentials: Promise<Credentials> | undefined;
  const openStore = () => (store ??= tokenStoreFromSettings(options.settings));
  const openCredentials = () => (credentials ??= openStore().then((s) => createCredentials({ store: s, logger: options.logger.child({ part: 'oauth' }) })));
  let opened: Credentials | undefined;
  const lazy: LoginCredentials = {
    accessToken: async (server, url) => (opened = await openCredentials()).accessToken(server, url),
    afterUnauthorized: async (server, url, failed) => (opened = await openCredentials()).afterUnauthorized(server, url, failed),
    secretsOf: (server) => opened?.secretsOf?.(server) ?? [],
  };
  return {
    credentials: lazy,
    attach(client) {
      shelf = new ShelfClient({ client, taskQueue: options.taskQueue, by: 'worker' });
    },
    async layerFor(agent) {
      if (!shelf) throw new Error('the worker is not connected yet');
      return shelfLayerText(await shelf.read(), agent, options.turnKey, options.env);
    },
    async withLoginIds(config) {
      if (!config.servers.some((s) => s.login !== undefined)) return config;
      const tokens = await openStore();
      const servers = await Promise.all(config.servers.map(async (s) => {
        if (s.login === undefined) return s;
        const loginId = await tokens.loginId(s.login);
        return loginId === undefined ? s : { ...s, loginId };
      }));
      return { ...config, servers, hash: hashEntries(servers) };
    },
  };
}
