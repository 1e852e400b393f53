/**
 * Where a command finds its Temporal server, the same way for every command: TEMPORAL_ADDRESS (or a
 * Temporal config profile that names an address, with its TLS and API key) when set; otherwise the
 * running `durable-mcp dev` of the data dir, found through the state file it writes.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Connection } from '@temporalio/client';
import { temporalClient } from '../client/temporalClient.js';
import { resolveTemporalTarget, type ConnectionOptions, type TemporalTarget } from '../connection/index.js';
import type { Env } from '../settings/index.js';
import { UsageError } from './common.js';

/** What a running `durable-mcp dev` writes so other commands can find it. */
export interface DevState {
  address: string;
  namespace: string;
  uiAddress?: string;
  pid: number;
  serverPid: number;
  taskQueue: string;
}

/** Files under the data dir (DMCP_DATA_DIR): the dev server's database and the running dev's state. */
export const devStateFile = (dataDir: string) => join(dataDir, 'dev.json');
export const devDbFile = (dataDir: string) => join(dataDir, 'temporal.db');

/** Records a running `dev` for the commands started after it. */
export async function writeDevState(state: DevState, dataDir: string): Promise<void> {
  // The data dir holds the turn key, the payload store and the dev database: the operator's alone.
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await writeFile(devStateFile(dataDir), `${JSON.stringify(state, null, 2)}\n`);
}

/** Forgets the running `dev` when it stops. */
export async function removeDevState(dataDir: string): Promise<void> {
  await rm(devStateFile(dataDir), { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The running `durable-mcp dev` of this data dir, if there is one and it answers. */
export async function runningDev(dataDir: string): Promise<DevState | undefined> {
  const dev = await answeringDev(dataDir);
  await dev?.connection.close();
  return dev?.state;
}

/** Like {@link runningDev}, with the connection that found it answering, left open for the caller. */
async function answeringDev(dataDir: string): Promise<{ state: DevState; connection: Connection } | undefined> {
  let state: DevState;
  try {
    state = JSON.parse(await readFile(devStateFile(dataDir), 'utf8')) as DevState;
  } catch {
    return undefined;
  }
  if (!alive(state.pid) || !alive(state.serverPid)) return undefined;
  try {
    return {
      state,
      connection: await temporalClient.Connection.connect({ address: state.address, connectTimeout: 2000 }),
    };
  } catch {
    return undefined;
  }
}

/** A Temporal server a command can use: a configured one, or a running `dev`. */
export interface TemporalServer {
  address: string;
  /** TEMPORAL_NAMESPACE or the profile's when either names one; else the running dev's; else `default`. */
  namespace: string;
  /** TLS, API key and gRPC metadata of a configured server; none for a running dev. */
  options: ConnectionOptions;
  /** One line for logs and messages; never a secret. */
  summary: string;
  /** What the environment and the profile say, whichever server was found. */
  target: TemporalTarget;
  /** The running `durable-mcp dev` this is, when no server is configured. */
  dev?: DevState;
  /** With `keepDevConnection`: the connection that found the dev answering, the caller's to use and close. */
  devConnection?: Connection;
}

/** Why a command that needs a server (and starts none) cannot run. */
export const NO_TEMPORAL_SERVER =
  'no Temporal server: set TEMPORAL_ADDRESS (or a Temporal config profile), or start `durable-mcp dev` first';

/**
 * The configured server, else (given `dataDir`) the running `dev` of that data dir, else undefined.
 * @throws ConnectionConfigError when a TEMPORAL_* variable or the profile cannot be used.
 */
export async function findTemporalServer(
  env: Env,
  options: { dataDir?: string; keepDevConnection?: boolean } = {},
): Promise<TemporalServer | undefined> {
  const target = resolveTemporalTarget(env);
  if (target.address)
    return {
      address: target.address,
      namespace: target.namespace,
      options: target.options,
      summary: target.summary,
      target,
    };
  if (options.dataDir === undefined) return undefined;
  const found = await answeringDev(options.dataDir);
  if (!found) return undefined;
  const { state, connection } = found;
  if (!options.keepDevConnection) await connection.close();
  return {
    address: state.address,
    namespace: target.namespaceExplicit ? target.namespace : state.namespace,
    options: {},
    summary: `${state.address} (durable-mcp dev)`,
    target,
    dev: state,
    ...(options.keepDevConnection ? { devConnection: connection } : {}),
  };
}

/**
 * {@link findTemporalServer} for commands that start no server of their own (`worker`, `api`).
 * @throws UsageError naming what to set when there is none.
 */
export async function requireTemporalServer(env: Env, dataDir: string): Promise<TemporalServer> {
  const server = await findTemporalServer(env, { dataDir });
  if (!server) throw new UsageError(NO_TEMPORAL_SERVER);
  return server;
}
