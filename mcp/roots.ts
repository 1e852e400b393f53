/**
 * MCP roots: the folder a session's servers are told they may work in. Servers such as the
 * filesystem server replace whatever folders they were started with by the roots a client offers,
 * so a root is a grant, and the turn's workspace (turn input) is offered only where the worker's
 * operator allows it.
 */
import { realpath } from 'node:fs/promises';
import { basename, isAbsolute, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Root } from '@modelcontextprotocol/client';

/** Where a workspace may be offered as a root, all paths absolute and with symlinks resolved. */
export interface RootRules {
  /** DMCP_WORKSPACE_ROOTS: the folders it must lie in. Undefined: anywhere; empty: nowhere. */
  within?: readonly string[];
  /** Paths no root may lie in: the data dir (turn key, payload store), the config dir, and the other files and folders the worker's settings name. */
  protected: readonly string[];
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/**
 * Why `workspace` (absolute, symlinks resolved) may not be offered as a root, or `undefined` when
 * it may. The file system's root is never offered; neither is a folder inside a protected one,
 * since an unsandboxed server given it could read the turn key and forge the operator's proof; nor,
 * where `within` is set, one that contains a protected folder.
 */
export function rootProblem(workspace: string, rules: RootRules): string | undefined {
  if (!isAbsolute(workspace)) return 'it is not an absolute path';
  if (resolve(workspace) === sep) return 'it is the root of the file system';
  const guarded = rules.protected.find((p) => inside(workspace, p));
  if (guarded !== undefined)
    return `it lies in ${guarded}, which servers must not see (data or config dir, or a credential the worker's settings name)`;
  if (rules.within && !rules.within.some((w) => inside(workspace, w))) {
    return rules.within.length === 0
      ? 'this worker offers none (its operator lists folders in DMCP_WORKSPACE_ROOTS)'
      : `it lies outside DMCP_WORKSPACE_ROOTS (${rules.within.join(', ')})`;
  }
  // Where the operator limits workspaces, the turn is not the operator: a root holding the data or
  // config dir would hand those over too. Without limits (run/dev) a project with ./.data inside is
  // the common case, and its caller is the operator.
  const held = rules.within ? rules.protected.find((p) => inside(p, workspace)) : undefined;
  if (held !== undefined)
    return `it contains ${held}, which servers must not see (data or config dir, or a credential the worker's settings name)`;
  return undefined;
}

/** The roots a client answers `roots/list` with: the folder as a `file://` URI, or none. */
export function rootsOf(folder: string | undefined): Root[] {
  if (folder === undefined) return [];
  return [{ uri: pathToFileURL(folder).href, name: basename(folder) || folder }];
}

/** Compares two root lists (a change is announced with `notifications/roots/list_changed`). */
export function rootsKey(roots: readonly Root[]): string {
  return roots.map((r) => r.uri).join('\n');
}

/** A path with its symlinks resolved, or as given (resolved) when it does not exist. */
export async function realOrResolved(path: string): Promise<string> {
  return realpath(path).catch(() => resolve(path));
}

/**
 * The folder to offer for `workspace` under `rules` (whose paths are resolved here too), or
 * `undefined` with the reason.
 */
export async function admitRoot(
  workspace: string | undefined,
  rules: RootRules,
): Promise<{ root?: string; problem?: string }> {
  if (workspace === undefined) return { problem: 'the turn names no workspace' };
  if (!isAbsolute(workspace)) return { problem: 'it is not an absolute path' };
  const real = await realOrResolved(workspace);
  const resolved: RootRules = {
    protected: await Promise.all(rules.protected.map(realOrResolved)),
    ...(rules.within ? { within: await Promise.all(rules.within.map(realOrResolved)) } : {}),
  };
  const problem = rootProblem(real, resolved);
  return problem ? { problem } : { root: real };
}

/** How long a root change waits for a server that reads roots to ask for the new ones. */
export const ROOTS_SYNC_WAIT_MS = 1000;

/** The roots one server was last shown, and who waits for it to read new ones. */
export class RootsAnnouncer {
  /** The roots last announced (at connect, or by {@link announce}), as {@link rootsKey}. */
  private announced = '';
  /** How often the server asked `roots/list`; those that never ask are not waited for. */
  private asked = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly roots: () => Root[]) {}

  /** A new connection starts with the roots offered now. */
  connected(): void {
    this.announced = rootsKey(this.roots());
  }

  /** Answers the server's `roots/list` with the roots offered now. */
  list(): { roots: Root[] } {
    const now = this.roots();
    this.announced = rootsKey(now);
    this.asked += 1;
    for (const wake of this.waiters.splice(0)) wake();
    return { roots: now };
  }

  /**
   * Runs `send` (the `notifications/roots/list_changed`) when the roots offered now differ from
   * those the server last saw. A server that has read roots before is given up to `waitMs` to ask
   * for the new ones; a server that never asks is not waited for. Rejects as `send` does.
   */
  async announce(send: () => Promise<void>, waitMs: number): Promise<void> {
    const key = rootsKey(this.roots());
    if (key === this.announced) return;
    this.announced = key;
    let timer: NodeJS.Timeout | undefined;
    const asked =
      this.asked > 0
        ? new Promise<void>((wake) => {
            this.waiters.push(wake);
            timer = setTimeout(wake, waitMs);
          })
        : undefined;
    try {
      await send();
      await asked;
    } finally {
      clearTimeout(timer);
    }
  }
}
