import { isAbsolute, relative, resolve } from 'node:path';
import { agentIdProblem } from '../contract/index.js';
import { configSettings } from '../settings/index.js';
import type { ConfigIO } from './configIO.js';
import type { LoadContext } from './layers.js';
import { nameProblem } from './names.js';
import { proofHolds } from './turnKey.js';
import type { Boundary, RefusedEntry } from './types.js';

/** Whether `path` is `dir` or lies inside it (both absolute, symlinks already resolved). */
function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

async function realOrResolved(io: ConfigIO, path: string): Promise<string> {
  if (!io.realPath) return resolve(path);
  return io.realPath(path).catch(() => resolve(path));
}

/** The references of a turn that the worker's boundary lets through, and why the others were not. */
export interface Admitted {
  workspaceLayer: boolean;
  plugins: string[];
  /** Explicit files to read: as named, and with symlinks resolved. */
  files: { file: string; real: string }[];
  /** Inline specs that are not used, as failed entries (or warnings when a spec names no server). */
  inlineRefused: RefusedEntry[];
  /** The agent whose shelf servers join the turn. */
  agent?: string;
}

const PROOF_HINT =
  "the turn carries no valid proof that the worker's operator chose it " +
  "(start turns through TurnClient given the worker's turn key, <DMCP_DATA_DIR>/turn.key)";

/**
 * Applies the worker's boundary to the references a turn chose. Nothing refused here is read or
 * run; each refusal is a warning (or a failed server) naming the reference and the setting that
 * allows it, and the rest of the turn goes on.
 */
export async function admit(
  ctx: LoadContext,
  boundary: Boundary | undefined,
  sessionId: string | undefined,
): Promise<Admitted> {
  const { refs, io, env } = ctx;
  const workspaceWanted = configSettings(env).workspaceMcp;
  const files = refs.mcpConfigFiles.map((file) => ({ file, real: file }));
  if (!boundary) return { workspaceLayer: workspaceWanted, plugins: refs.plugins ?? [], files, inlineRefused: [] };

  const proven = boundary.turnKey === undefined || proofHolds(boundary.turnKey, sessionId, refs);
  const out: Admitted = { workspaceLayer: false, plugins: [], files: [], inlineRefused: [] };
  if (refs.agent !== undefined) {
    const bad = agentIdProblem(refs.agent);
    if (bad) ctx.warnings.push(`agent: shelf servers not used: ${bad}`);
    else if (!proven) ctx.warnings.push(`agent ${refs.agent}: shelf servers not used: ${PROOF_HINT}`);
    else out.agent = refs.agent;
  }
  const allowedDirs =
    boundary.allowedConfigDirs && (await Promise.all(boundary.allowedConfigDirs.map((d) => realOrResolved(io, d))));
  const folderProblem = (named: string, real: string): string | undefined => {
    if (!allowedDirs) return undefined;
    if (allowedDirs.length === 0)
      return 'this worker allows none (its operator lists folders in DMCP_ALLOWED_CONFIG_DIRS)';
    if (allowedDirs.some((d) => isInside(real, d))) return undefined;
    return `${real === resolve(named) ? 'it lies' : `it resolves to ${real}, which lies`} outside the folders DMCP_ALLOWED_CONFIG_DIRS allows (${allowedDirs.join(', ')})`;
  };

  // A session opened from workflow code names no workspace (''): it has no workspace layer to read.
  if (workspaceWanted && refs.workspace !== '') {
    const real = await realOrResolved(io, refs.workspace);
    const roots =
      boundary.workspaceRoots && (await Promise.all(boundary.workspaceRoots.map((d) => realOrResolved(io, d))));
    if (!proven) ctx.warnings.push(`workspace ${refs.workspace}: workspace layer not read: ${PROOF_HINT}`);
    else if (roots && !roots.some((r) => isInside(real, r))) {
      const why =
        roots.length === 0
          ? 'this worker allows none (its operator lists folders in DMCP_WORKSPACE_ROOTS)'
          : `it lies outside DMCP_WORKSPACE_ROOTS (${roots.join(', ')})`;
      ctx.warnings.push(`workspace ${refs.workspace}: workspace layer not read: ${why}`);
    } else out.workspaceLayer = true;
  }
  for (const root of refs.plugins ?? []) {
    const real = await realOrResolved(io, root);
    const problem = proven ? folderProblem(root, real) : PROOF_HINT;
    if (problem) ctx.warnings.push(`plugin ${root}: not used: ${problem}`);
    else out.plugins.push(real);
  }
  for (const file of refs.mcpConfigFiles) {
    const real = await realOrResolved(io, file);
    const problem = proven ? folderProblem(file, real) : PROOF_HINT;
    if (problem) ctx.warnings.push(`--mcp-config ${file}: not used: ${problem}`);
    else out.files.push({ file, real });
  }
  refs.inlineSpecs.forEach((spec, i) => {
    const problem = !boundary.allowInline
      ? 'inline --mcp specs are not allowed on this worker; its operator allows them with DMCP_ALLOW_INLINE=true'
      : proven
        ? undefined
        : PROOF_HINT;
    if (!problem) return;
    const source = `--mcp #${i + 1}`;
    const name = spec.slice(0, Math.max(spec.indexOf(':'), 0)).trim();
    if (name === '' || nameProblem(name)) {
      ctx.warnings.push(`${source}: not used: ${problem}`);
      // Held as a nameless refusal so the spec is still left out of the layer.
      out.inlineRefused.push({ name: '', layer: 'inline', source, transport: 'stdio', reason: problem });
      return;
    }
    const rest = spec.slice(spec.indexOf(':') + 1).trim();
    const transport = /^https?:\/\/\S+$/i.test(rest) ? 'http' : 'stdio';
    out.inlineRefused.push({ name, layer: 'inline', source, transport, reason: `${source}: not used: ${problem}` });
  });
  return out;
}
