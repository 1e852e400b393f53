/**
 * `durable-mcp setup`: makes a Temporal cluster ready for durable-mcp. Creates the namespace when
 * it is missing and registers the `DmcpSessionId` search attribute (the dev server registers it at
 * start; a cluster or Temporal Cloud namespace does not have it). Idempotent; says plainly what it
 * lacks the right to do, and how an administrator does it instead.
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import proto from '@temporalio/proto';
import { SESSION_ID_SEARCH_ATTRIBUTE } from '../contract/index.js';
import { parseDuration } from '../settings/index.js';
import { permissionDenied, type TemporalTarget } from '../connection/index.js';
import { GrpcStatus, grpcStatusOf } from './common.js';

// @temporalio/proto is CommonJS: its namespaces come through the default export under ESM.
const { IndexedValueType } = proto.temporal.api.enums.v1;

/** The custom search attributes durable-mcp needs, and their types. */
export const REQUIRED_SEARCH_ATTRIBUTES: Record<string, proto.temporal.api.enums.v1.IndexedValueType> = {
  [SESSION_ID_SEARCH_ATTRIBUTE]: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
};

/** A step the connected identity may not take: the message says who can, and with what command. */
export class SetupRefusedError extends Error {
  override name = 'SetupRefusedError';
}

/** Options of {@link runSetup}. */
export interface SetupOptions {
  target: TemporalTarget & { address: string };
  /** Retention of a namespace created here (default 72h, the Temporal CLI's). */
  retention?: string;
  /** Create the namespace when it is missing (default true). */
  createNamespace?: boolean;
  /** One line per step. */
  print: (line: string) => void;
  /** How long to wait for a new search attribute to become visible (default 30 s). */
  visibleWithinMs?: number;
}

const typeName = (t: number) => (IndexedValueType[t] ?? String(t)).replace('INDEXED_VALUE_TYPE_', '').toLowerCase();

const isNotFound = (err: unknown) => grpcStatusOf(err) === GrpcStatus.NOT_FOUND;

/** Whether `listed` has every attribute of `wanted`, with its type. */
function sameTypes(listed: Record<string, number>, wanted: Record<string, number>): boolean {
  return Object.entries(wanted).every(([name, type]) => listed[name] === type);
}

type Services = Pick<Connection, 'workflowService' | 'operatorService'>;
const pause = () => new Promise((r) => setTimeout(r, 250));

/** Describes the namespace, creating it when missing (and allowed); resolves with whether it existed. */
async function ensureNamespace({ workflowService }: Services, options: SetupOptions): Promise<boolean> {
  const { target, print } = options;
  const namespace = target.namespace;
  try {
    await workflowService.describeNamespace({ namespace });
    print(`namespace ${namespace}: exists`);
    return true;
  } catch (err) {
    if (!isNotFound(err)) {
      if (permissionDenied(err))
        throw new SetupRefusedError(
          `this identity may not read namespace "${namespace}" on ${target.summary}: ${(err as Error).message}`,
        );
      throw err;
    }
  }
  if (options.createNamespace === false)
    throw new SetupRefusedError(
      `namespace "${namespace}" does not exist on ${target.address}; create it (temporal operator namespace create --namespace ${namespace}) or run setup without --no-create-namespace`,
    );
  const retention = options.retention ?? '72h';
  const retentionMs = parseDuration(retention, '--retention');
  try {
    await workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(retentionMs) });
  } catch (err) {
    if (permissionDenied(err)) {
      throw new SetupRefusedError(
        `namespace "${namespace}" does not exist and this identity may not create it (${(err as Error).message}). ` +
          `An administrator creates it with: temporal operator namespace create --namespace ${namespace} --retention ${retention}`,
      );
    }
    // Another setup created it since the describe: it is there, which is all this step wants.
    if (grpcStatusOf(err) !== GrpcStatus.ALREADY_EXISTS) throw err;
  }
  print(`namespace ${namespace}: created (retention ${retention})`);
  return false;
}

/** The namespace's custom search attributes; a namespace just created is waited for. */
async function customAttributes(
  { operatorService }: Services,
  options: SetupOptions,
  existed: boolean,
): Promise<Record<string, number>> {
  const namespace = options.target.namespace;
  // A namespace just created reaches every frontend's namespace cache after a few seconds.
  const deadline = Date.now() + (options.visibleWithinMs ?? 30_000);
  try {
    for (;;) {
      try {
        return (await operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
      } catch (err) {
        if (existed || !isNotFound(err) || Date.now() > deadline) throw err;
        await pause();
      }
    }
  } catch (err) {
    if (permissionDenied(err)) {
      throw new SetupRefusedError(
        `this identity may not list the search attributes of namespace "${namespace}" (${(err as Error).message}). ` +
          `Check that ${SESSION_ID_SEARCH_ATTRIBUTE} (Keyword) is registered: temporal operator search-attribute list --namespace ${namespace}` +
          ` (Temporal Cloud: tcld namespace search-attributes add --namespace ${namespace} --search-attribute "${SESSION_ID_SEARCH_ATTRIBUTE}=Keyword")`,
      );
    }
    throw err;
  }
}

/** Adds the `missing` search attributes and waits until they are listed. */
async function addSearchAttributes(
  services: Services,
  options: SetupOptions,
  missing: Record<string, number>,
): Promise<void> {
  const namespace = options.target.namespace;
  const listed = async () =>
    (await services.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  const names = Object.keys(missing);
  try {
    await services.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  } catch (err) {
    if (permissionDenied(err)) {
      throw new SetupRefusedError(
        `search attribute ${names.join(', ')} is missing from namespace "${namespace}" and this identity may not add it (${(err as Error).message}). ` +
          `An administrator adds it with: ${names.map((n) => `temporal operator search-attribute create --namespace ${namespace} --name ${n} --type Keyword`).join('; ')}` +
          ` (Temporal Cloud: tcld namespace search-attributes add --namespace ${namespace} ${names.map((n) => `--search-attribute "${n}=Keyword"`).join(' ')})`,
      );
    }
    // Added by another setup since the listing: servers say so as ALREADY_EXISTS, older ones as
    // INVALID_ARGUMENT, so the listing decides whether the step is done.
    if (grpcStatusOf(err) !== GrpcStatus.ALREADY_EXISTS && !sameTypes(await listed(), missing)) throw err;
  }
  // Registration reaches every frontend's cache after a moment; turns started before then fail.
  const visibleWithinMs = options.visibleWithinMs ?? 30_000;
  const deadline = Date.now() + visibleWithinMs;
  for (;;) {
    const now = await listed();
    if (names.every((n) => now[n] !== undefined)) break;
    if (Date.now() > deadline)
      throw new Error(
        `search attribute ${names.join(', ')} was added but is not listed after ${visibleWithinMs / 1000}s`,
      );
    await pause();
  }
  for (const [name, type] of Object.entries(missing))
    options.print(`search attribute ${name} (${typeName(type)}): added`);
}

/** Runs every step; resolves when the namespace and its search attributes are ready. */
export async function runSetup(options: SetupOptions): Promise<void> {
  const { target, print } = options;
  const connection = await Connection.connect({ ...target.options, address: target.address, connectTimeout: 10_000 });
  try {
    const existed = await ensureNamespace(connection, options);
    const custom = await customAttributes(connection, options, existed);
    const missing: Record<string, number> = {};
    for (const [name, type] of Object.entries(REQUIRED_SEARCH_ATTRIBUTES)) {
      const have = custom[name];
      if (have === undefined) missing[name] = type;
      else if (have !== type)
        throw new SetupRefusedError(
          `search attribute ${name} exists in namespace "${target.namespace}" as ${typeName(have)}; durable-mcp needs ${typeName(type)}`,
        );
      else print(`search attribute ${name} (${typeName(type)}): registered`);
    }
    if (Object.keys(missing).length > 0) await addSearchAttributes(connection, options, missing);
  } finally {
    await connection.close();
  }
}
