/**
 * Warm spares: started, initialized and listed stdio servers of trusted entries, waiting for the
 * next new session that names the same entry, so its first turn does not pay for a cold start.
 *
 * A spare is built by the same factory as a session's server (same environment function, same
 * launch, same secrets rules), and is handed out only to an entry that is equal in every field and
 * resolves to the same environment. Once handed out it belongs to that session alone. Entries of
 * untrusted layers (workspace, plugins) never get one: their processes are sandboxed around one
 * turn's workspace, and the agent writes their config.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { isTrustedLayer, type ServerEntry } from '../config/types.js';
import type { ManagedServer } from './managedServer.js';
import { canonical } from '../config/merge.js';

/** Dependencies and settings of a {@link SparePool}. */
export interface SparePoolOptions {
  /** DMCP_WARM_SPARES: spares kept per entry; 0 keeps none and makes the pool do nothing. */
  perEntry: number;
  logger: Logger;
  /** A new, unstarted server for `entry`, built exactly as a session's server is. */
  create: (entry: ServerEntry) => ManagedServer;
  /** The complete environment the entry's process starts with (the one a session's server gets). */
  environmentFor: (entry: ServerEntry) => Record<string, string>;
  /**
   * How long after a session asked for an entry (or took its spare) the spare is (re)started. A
   * one-shot `run` is over before that, so it never pays for a process it would not use, and a new
   * session's first calls do not share the CPU with the refill.
   */
  fillDelayMs: number;
}

interface Spare {
  server: ManagedServer;
  /** Settles when the start has ended, ready or not (start() itself never rejects). */
  started: Promise<void>;
}

/** The spares of one exact entry, and who uses that entry. */
interface Kind {
  key: string;
  entry: ServerEntry;
  spares: Spare[];
  /** Sessions whose current config holds this entry. */
  users: Set<string>;
  /** Last time a session used the entry (epoch ms): spares of an unused entry stop after the session idle time. */
  lastUsed: number;
  timer?: NodeJS.Timeout;
}

/** What a session's reconciliation ended with, for {@link SparePool.use}. */
export interface EntryInUse {
  entry: ServerEntry;
  /** Only an entry whose server came up gets spares: one that fails would fail as a spare too. */
  ready: boolean;
}

/** Whether an entry may ever have a spare: a stdio server of a trusted layer. */
export function spareEligible(entry: ServerEntry): boolean {
  return entry.type === 'stdio' && entry.enabled && !!entry.command && entry.trusted && isTrustedLayer(entry.layer);
}

/** Spares per trusted stdio entry, keyed by the entry and its resolved environment. */
export class SparePool {
  private readonly kinds = new Map<string, Kind>();
  /** The keys each session's current config uses. */
  private readonly sessionKeys = new Map<string, Set<string>>();
  private closed = false;
  private stopping: Promise<void>[] = [];

  constructor(private readonly options: SparePoolOptions) {}

  get enabled(): boolean {
    return this.options.perEntry > 0 && !this.closed;
  }

  /**
   * The exact identity of what `entry` would run: every field of the entry (source included, since
   * the status shows it) and the environment it resolves to now, `envFrom` values included. A
   * spare started with another value of a variable, or before an `envFrom` variable changed, does
   * not match. Undefined when the entry may not have spares, or its environment cannot be resolved
   * (its normal start then fails with the usual message). The key never leaves this object: it is
   * derived from secret values.
   */
  private key(entry: ServerEntry): string | undefined {
    if (!spareEligible(entry)) return undefined;
    let env: Record<string, string>;
    try {
      env = this.options.environmentFor(entry);
    } catch {
      return undefined;
    }
    return createHash('sha256')
      .update(JSON.stringify(canonical(entry)))
      .update('\0')
      .update(JSON.stringify(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
      .digest('hex');
  }

  /**
   * A ready spare for `entry`, now the caller's alone, or undefined. A spare still starting is
   * waited for (it is further along than a new process would be); one that died, or does not answer
   * a ping, is stopped and never handed out.
   */
  async take(entry: ServerEntry): Promise<ManagedServer | undefined> {
    if (!this.enabled) return undefined;
    const key = this.key(entry);
    const kind = key === undefined ? undefined : this.kinds.get(key);
    if (!kind) return undefined;
    while (kind.spares.length > 0 && !this.closed) {
      const ready = kind.spares.findIndex((s) => s.server.state === 'ready');
      const [spare] = kind.spares.splice(ready >= 0 ? ready : 0, 1);
      await spare!.started;
      const { server } = spare!;
      if (server.state === 'ready' && !this.closed) {
        try {
          // A process that died since it was listed may not have been seen exiting yet.
          await server.refresh();
          if (server.state === 'ready' && !this.closed) {
            this.options.logger.info({ server: entry.name, pid: server.pid }, 'handed out a warm spare');
            this.schedule(kind);
            return server;
          }
        } catch {
          // Not handed out; stopped below.
        }
      }
      this.stopLater(server);
    }
    this.schedule(kind);
    return undefined;
  }

  /**
   * Records the entries a session's config now holds after its reconciliation: each ready one gets
   * its spares (re)filled in the background, and an entry the session no longer holds (its config
   * changed) loses its spares at once when no other session holds it.
   */
  use(sessionId: string, entries: readonly EntryInUse[]): void {
    if (!this.enabled) return;
    const now = Date.now();
    const keys = new Set<string>();
    for (const { entry, ready } of entries) {
      const key = this.key(entry);
      if (key === undefined) continue;
      keys.add(key);
      let kind = this.kinds.get(key);
      if (!kind) {
        if (!ready) continue;
        kind = { key, entry, spares: [], users: new Set(), lastUsed: now };
        this.kinds.set(key, kind);
      }
      kind.users.add(sessionId);
      kind.lastUsed = now;
      if (ready) this.schedule(kind);
    }
    for (const key of this.sessionKeys.get(sessionId) ?? []) {
      if (keys.has(key)) continue;
      const kind = this.kinds.get(key);
      if (!kind) continue;
      kind.users.delete(sessionId);
      if (kind.users.size === 0) this.discard(key, kind, 'its config changed');
    }
    this.sessionKeys.set(sessionId, keys);
  }

  /** A session stopped (last used at `lastUsed`): its entries' spares stop once unused for the idle time. */
  release(sessionId: string, lastUsed: number): void {
    for (const key of this.sessionKeys.get(sessionId) ?? []) {
      const kind = this.kinds.get(key);
      if (!kind) continue;
      kind.users.delete(sessionId);
      kind.lastUsed = Math.max(kind.lastUsed, lastUsed);
    }
    this.sessionKeys.delete(sessionId);
  }

  /**
   * Stops the spares of entries no session has used for `idleMs` (DMCP_SESSION_IDLE), and drops
   * spares that died while waiting (refilled when their entry is still in use).
   */
  async sweep(idleMs: number, now = Date.now()): Promise<void> {
    for (const [key, kind] of this.kinds) {
      if (kind.users.size === 0 && now >= kind.lastUsed + idleMs) {
        this.discard(key, kind, 'no session used it for the session idle time');
        continue;
      }
      const dead = kind.spares.filter((s) => s.server.state !== 'ready' && s.server.state !== 'starting');
      if (dead.length === 0) continue;
      kind.spares = kind.spares.filter((s) => !dead.includes(s));
      for (const spare of dead) this.stopLater(spare.server);
      if (kind.users.size > 0) this.schedule(kind);
    }
    await this.drain();
  }

  /** PIDs of the ready spares, by server name (operators and tests use them to see reuse). */
  pids(): Record<string, number[]> {
    const out: Record<string, number[]> = {};
    for (const kind of this.kinds.values()) {
      const pids = kind.spares
        .filter((s) => s.server.state === 'ready' && s.server.pid !== undefined)
        .map((s) => s.server.pid!);
      if (pids.length > 0) (out[kind.entry.name] ??= []).push(...pids);
    }
    return out;
  }

  /** Resolves once no fill is waiting or starting (tests and benchmarks wait for the spares). */
  async settled(): Promise<void> {
    for (;;) {
      const kinds = [...this.kinds.values()];
      const starting = kinds.flatMap((k) =>
        k.spares.filter((s) => s.server.state === 'starting' || s.server.state === 'idle'),
      );
      if (!kinds.some((k) => k.timer) && starting.length === 0) return;
      const tick = new Promise((r) => setTimeout(r, 20));
      await (starting.length > 0 ? Promise.race([Promise.all(starting.map((s) => s.started)), tick]) : tick);
    }
  }

  /** Stops every spare, those still starting included, and starts no more (worker shutdown). */
  async shutdown(): Promise<void> {
    this.closed = true;
    for (const [key, kind] of this.kinds) this.discard(key, kind, 'the worker is stopping');
    await this.drain();
  }

  /** SIGKILLs every spare's process group at once: the last resort, so no spare outlives the worker. */
  killAll(): void {
    for (const kind of this.kinds.values()) {
      for (const pid of kind.spares.map((s) => s.server.pid)) {
        if (pid === undefined) continue;
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
  }

  /** Fills the entry's spares after the fill delay, unless a fill is already waiting or they are all there. */
  private schedule(kind: Kind): void {
    if (!this.enabled || kind.timer) return;
    const live = kind.spares.filter(
      (s) => s.server.state === 'ready' || s.server.state === 'starting' || s.server.state === 'idle',
    );
    if (live.length >= this.options.perEntry) return;
    kind.timer = setTimeout(() => {
      kind.timer = undefined;
      this.fill(kind);
    }, this.options.fillDelayMs);
    kind.timer.unref();
  }

  private fill(kind: Kind): void {
    if (!this.enabled || this.kinds.get(kind.key) !== kind) return;
    const dead = kind.spares.filter((s) => s.server.state === 'failed' || s.server.state === 'stopped');
    kind.spares = kind.spares.filter((s) => !dead.includes(s));
    for (const spare of dead) this.stopLater(spare.server);
    while (kind.spares.length < this.options.perEntry) {
      const server = this.options.create(kind.entry);
      const spare: Spare = { server, started: Promise.resolve() };
      spare.started = server.start().then(
        () => {
          if (server.state === 'ready') {
            this.options.logger.debug({ server: kind.entry.name, pid: server.pid }, 'warm spare ready');
            return;
          }
          // A failed spare is dropped, not retried: the next reconciliation that finds the entry's
          // server ready asks again, so a broken server cannot make the pool spawn in a loop.
          kind.spares = kind.spares.filter((s) => s !== spare);
          if (server.state !== 'stopped')
            this.options.logger.warn({ server: kind.entry.name, err: server.error }, 'warm spare failed to start');
          this.stopLater(server);
        },
        () => this.stopLater(server),
      );
      kind.spares.push(spare);
    }
  }

  private discard(key: string, kind: Kind, why: string): void {
    if (kind.timer) clearTimeout(kind.timer);
    kind.timer = undefined;
    this.kinds.delete(key);
    if (kind.spares.length === 0) return;
    this.options.logger.info({ server: kind.entry.name, spares: kind.spares.length, why }, 'stopping warm spares');
    for (const spare of kind.spares) {
      this.stopLater(spare.server);
      // A spare stopped mid-start closes its process when its start settles: wait for that too.
      this.track(spare.started);
    }
    kind.spares = [];
  }

  private stopLater(server: ManagedServer): void {
    this.track(
      server.stop().catch((err: unknown) => this.options.logger.warn({ err }, 'stopping a warm spare failed')),
    );
  }

  private track(p: Promise<unknown>): void {
    const done = p.then(
      () => undefined,
      () => undefined,
    );
    this.stopping.push(done);
    void done.then(() => {
      this.stopping = this.stopping.filter((s) => s !== done);
    });
  }

  /** Waits for every stop in progress. */
  private async drain(): Promise<void> {
    while (this.stopping.length > 0) await Promise.all([...this.stopping]);
  }
}
