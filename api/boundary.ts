/**
 * What a turn started through the API may reference. An HTTP caller is not the worker's operator,
 * so the API signs a turn's references with the turn key only when its own settings allow every one
 * of them (the same variables, and the same defaults, as a worker joined to a cluster); a reference
 * it does not allow is refused with the field that holds it, never sent unsigned in silence.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { Settings } from '../settings/index.js';

/** What the API lets its callers reference. */
export interface ApiBoundary {
  /** DMCP_ALLOW_INLINE=true: inline `name:command` specs (they run commands on the worker). */
  allowInline: boolean;
  /** DMCP_ALLOWED_CONFIG_DIRS: the folders config files and plugin folders must lie in. */
  allowedConfigDirs: string[];
  /** DMCP_WORKSPACE_ROOTS: workspaces under these are signed, so the worker may read their layer. */
  workspaceRoots: string[];
}

export function apiBoundary(boundary: Settings['boundary']): ApiBoundary {
  return {
    allowInline: boundary.allowInline ?? false,
    allowedConfigDirs: boundary.allowedConfigDirs ?? [],
    workspaceRoots: boundary.workspaceRoots ?? [],
  };
}

export interface TurnRefs {
  workspace: string;
  mcpConfigFiles: string[];
  inlineSpecs: string[];
  plugins: string[];
}

/** A reference the API refuses: the request field that holds it and why. */
export interface RefRefusal {
  field: string;
  message: string;
}

/** Whether `path` lies in one of `dirs` (both absolute; lexical). */
export function isUnder(path: string, dirs: readonly string[]): boolean {
  return dirs.some((dir) => {
    const rel = relative(resolve(dir), resolve(path));
    return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
  });
}

/**
 * Decides a turn's references against the boundary: a refusal, or whether to sign them. `real`
 * resolves symlinks where the path exists on this machine (the API may run elsewhere than workers,
 * which check again with their own settings).
 */
export async function admitRefs(
  b: ApiBoundary,
  refs: TurnRefs,
  real: (p: string) => Promise<string> = realOrSame,
): Promise<{ refused: RefRefusal } | { sign: boolean }> {
  if (refs.inlineSpecs.length > 0 && !b.allowInline) {
    return {
      refused: {
        field: 'servers.inlineSpecs[0]',
        message:
          'inline server specs run commands on the worker; this API refuses them (its operator allows them with DMCP_ALLOW_INLINE=true)',
      },
    };
  }
  const paths: [string, string][] = [
    ...refs.mcpConfigFiles.map((f, i): [string, string] => [`servers.mcpConfigFiles[${i}]`, f]),
    ...refs.plugins.map((p, i): [string, string] => [`servers.plugins[${i}]`, p]),
  ];
  for (const [field, path] of paths) {
    if (!isUnder(path, b.allowedConfigDirs) || !isUnder(await real(path), b.allowedConfigDirs)) {
      const allowed = b.allowedConfigDirs.length
        ? `it must lie in ${b.allowedConfigDirs.join(', ')} (DMCP_ALLOWED_CONFIG_DIRS)`
        : 'this API allows none (its operator names folders with DMCP_ALLOWED_CONFIG_DIRS)';
      return { refused: { field, message: `${JSON.stringify(path)} is not in an allowed folder: ${allowed}` } };
    }
  }
  const workspaceAllowed =
    isUnder(refs.workspace, b.workspaceRoots) && isUnder(await real(refs.workspace), b.workspaceRoots);
  const needsProof = paths.length > 0 || refs.inlineSpecs.length > 0;
  if (needsProof && !workspaceAllowed) {
    return {
      refused: {
        field: 'workspace',
        message: `the turn names servers, so its references are signed as a whole, and the workspace ${JSON.stringify(refs.workspace)} is not under DMCP_WORKSPACE_ROOTS`,
      },
    };
  }
  return { sign: needsProof || workspaceAllowed };
}

async function realOrSame(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}
