import type { LoadedConfig } from '../config/types.js';
import type { ManagedServer } from './managedServer.js';

/** One session's servers on this worker, shared by its turns while the config stays the same. */
export interface Session {
  configHash?: string;
  servers: Map<string, ManagedServer>;
  config?: LoadedConfig;
  lastUsed: number;
  /**
   * An interactive turn of the session may send calls until about this time (epoch ms), so its
   * servers stay up at least that long, however short the session idle time.
   */
  holdUntil?: number;
  /** How far each call of the session pushes `holdUntil`: the idle limit of its interactive turn. */
  holdMs?: number;
  /** Reconciliations and calls in progress: an idle stop never interrupts them. */
  busy: number;
  /** The last workspace a reconciliation named (see `ReconcileOptions.workspace`). */
  workspace?: string;
  /** Whether the last reconciliation offered the workspace as a root (`ReconcileOptions.offerRoot`). */
  offerRoot?: boolean;
  /** That workspace (symlinks resolved) when it may be offered as the servers' MCP root. */
  root?: string;
  /** The workspace {@link root} was last decided for (a refusal is logged once per workspace). */
  rootChecked?: string;
  /** Reconciliations of a session run one at a time (a failover reconcile may overlap the last one). */
  lock: Promise<unknown>;
  /** Turns that reconciled the session here, with the config hash they reconciled; the newest last. */
  turns: Map<string, string>;
}

/** Turns remembered per session: older ones reconcile again (their calls never started) before they call. */
const TURNS_KEPT = 32;

/** A session with no servers yet, used now. */
export function newSession(): Session {
  return { servers: new Map(), lastUsed: Date.now(), busy: 0, lock: Promise.resolve(), turns: new Map() };
}

/** Records that `turnId` reconciled the session under the config `hash`, forgetting the oldest past {@link TURNS_KEPT}. */
export function rememberTurn(session: Session, turnId: string, hash: string): void {
  session.turns.delete(turnId);
  session.turns.set(turnId, hash);
  if (session.turns.size > TURNS_KEPT) session.turns.delete(session.turns.keys().next().value!);
}

/** Keeps the session up for its interactive turn's idle limit from now (see `ServerPool.reconcile`). */
export function renewHold(session: Session): void {
  if (session.holdMs === undefined) return;
  session.holdUntil = Math.max(session.holdUntil ?? 0, Date.now() + session.holdMs);
}

/** The session's servers that are enabled and ready: those whose tools the model sees. */
export function readyServers(session: Session): ManagedServer[] {
  return [...session.servers.values()].filter((s) => s.state === 'ready' && s.entry.enabled);
}

/** The server's listed tools its entry's `tools` keeps (all when it names none). */
export function keptTools(server: ManagedServer) {
  const filter = server.entry.tools;
  return filter ? server.tools.filter((t) => filter.includes(t.name)) : server.tools;
}
