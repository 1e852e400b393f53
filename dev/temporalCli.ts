import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The Temporal CLI version the setup step installs (pinned: a build is reproducible). */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/** The project's own folder for tools it installs (`.tools/`, ignored by git). */
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));
export const installedCliPath = join(projectRoot, '.tools', 'temporal', TEMPORAL_CLI_VERSION, 'temporal');

export interface FoundCli {
  path: string;
  /** Which rule of the search order found it. */
  source: 'DMCP_TEMPORAL_CLI' | 'PATH' | 'project';
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds a `temporal` binary: DMCP_TEMPORAL_CLI, then `temporal` on PATH, then the copy the
 * project's setup installed. Returns undefined when there is none.
 */
export async function findTemporalCli(env: NodeJS.ProcessEnv = process.env): Promise<FoundCli | undefined> {
  if (env.DMCP_TEMPORAL_CLI) {
    if (await isExecutable(env.DMCP_TEMPORAL_CLI)) return { path: env.DMCP_TEMPORAL_CLI, source: 'DMCP_TEMPORAL_CLI' };
    throw new Error(`DMCP_TEMPORAL_CLI=${env.DMCP_TEMPORAL_CLI} is not an executable file`);
  }
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, 'temporal');
    if (await isExecutable(candidate)) return { path: candidate, source: 'PATH' };
  }
  if (await isExecutable(installedCliPath)) return { path: installedCliPath, source: 'project' };
  return undefined;
}

/** Like {@link findTemporalCli}, but says how to get one when there is none. */
export async function requireTemporalCli(env: NodeJS.ProcessEnv = process.env): Promise<FoundCli> {
  const found = await findTemporalCli(env);
  if (found) return found;
  throw new Error(
    'no Temporal CLI found (searched DMCP_TEMPORAL_CLI, PATH and .tools/). ' +
      'Install the pinned copy with `npm run setup:temporal`, or see README "Getting the Temporal CLI".',
  );
}

export async function temporalCliVersion(path: string): Promise<string> {
  const { stdout } = await execFileAsync(path, ['--version'], { timeout: 10_000 });
  return stdout.trim();
}
