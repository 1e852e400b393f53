/**
 * Shared calls: a remote server that speaks the stateless 2026-07-28 revision keeps no session, so
 * any worker can call it for a turn, over one connection per entry that the worker keeps outside
 * every session. The worker that reconciles grants the turn each such server; another worker
 * verifies the grant, resolves the turn's references itself, and calls only an entry that seals the
 * same. Nothing in the workflow's input is taken on trust: not the entry, not its headers.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { LoadedConfig, ServerEntry } from '../config/types.js';
import { FailureType, type CallToolInput, type SharedServer, type TurnStatus } from '../contract/index.js';
import type { ActivityKit } from './deps.js';

/**
 * The pool session of an entry's shared connection, one per workspace offered as a root (the
 * roots a server is shown are those its own turn would show it); `/` is never part of a session ID.
 */
export function sharedSessionId(identity: string, workspace?: string): string {
  const root = workspace === undefined ? '-' : createHash('sha256').update(workspace).digest('hex').slice(0, 16);
  return `shared/${identity}/${root}`;
}

/** The seal of what makes an entry the same server with the same credentials (not where it was read). */
function entryIdentity(seal: ActivityKit['seal'], entry: ServerEntry): string {
  const { source: _source, layer: _layer, ...same } = entry;
  return seal(JSON.stringify(['shared-entry', same]));
}

function grantFor(seal: ActivityKit['seal'], turnChain: string, server: string, identity: string): string {
  return seal(JSON.stringify(['shared-grant', turnChain, server, identity]));
}

/**
 * The turn's servers any worker may call: ready, remote over Streamable HTTP, landed on the
 * 2026-07-28 revision, and with no login (its token is kept per worker). Undefined when there are none.
 */
export function sharedServers(
  { deps, seal }: ActivityKit,
  config: LoadedConfig,
  status: TurnStatus,
  turnChain: string,
): Record<string, SharedServer> | undefined {
  if (deps.sharedCalls === false) return undefined;
  const shared: Record<string, SharedServer> = {};
  for (const server of status.servers) {
    const entry = config.servers.find((e) => e.name === server.name);
    if (server.state !== 'ready' || server.era !== 'modern' || entry?.type !== 'http') continue;
    if (entry.login !== undefined) continue;
    const identity = entryIdentity(seal, entry);
    shared[server.name] = { identity, grant: grantFor(seal, turnChain, server.name, identity) };
  }
  return Object.keys(shared).length > 0 ? shared : undefined;
}

/**
 * The pool session a shared call runs in on this worker, its connection opened first when there is
 * none yet. Refuses unrun (`SharedMiss`, so the holder takes the call) when the grant does not
 * verify here (another operator key), the references no longer resolve to the granted entry, or
 * the server does not start here.
 */
export async function sharedSession(
  kit: ActivityKit,
  input: CallToolInput & { shared: NonNullable<CallToolInput['shared']> },
  turnChain: string,
): Promise<string> {
  const { deps, seal } = kit;
  const { identity, grant, refs, offerRoot } = input.shared;
  const expected = Buffer.from(grantFor(seal, turnChain, input.server, identity), 'hex');
  const given = Buffer.from(grant, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw sharedMiss(`no grant of this worker's operator for ${input.server} in this turn`);
  const workspace = offerRoot === true && refs.workspace ? refs.workspace : undefined;
  const sessionId = sharedSessionId(identity, workspace);
  if (deps.pool.serves?.(sessionId, sessionId, input.server)) return sessionId;
  let config: LoadedConfig;
  try {
    config = await deps.loadConfig(refs, { sessionId: input.sessionId });
  } catch (err) {
    throw sharedMiss(`the turn's config does not load here: ${deps.scrub((err as Error).message)}`);
  }
  const entry = config.servers.find((e) => e.name === input.server);
  if (entry === undefined || entryIdentity(seal, entry) !== identity)
    throw sharedMiss(`${input.server} resolves to another entry here than where the turn reconciled`);
  const status = await deps.pool.reconcile(
    sessionId,
    { ...config, servers: [entry], hash: identity },
    { turnId: sessionId, ...(workspace !== undefined ? { workspace, offerRoot: true } : {}) },
  );
  const state = status.servers.find((s) => s.name === input.server)?.state;
  if (state !== 'ready') throw sharedMiss(`${input.server} is ${state ?? 'not started'} on this worker`);
  return sessionId;
}

function sharedMiss(why: string): ApplicationFailure {
  // Benign, like the fast path's miss: nothing ran, and the holder takes the call.
  return ApplicationFailure.create({
    type: FailureType.SharedMiss,
    message: `this worker cannot take the shared call: ${why}`,
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
  });
}
