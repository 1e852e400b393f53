/**
 * What the sandbox of untrusted stdio servers hides on this worker: every file and folder the
 * worker's own settings name that holds a credential or private state, and its home.
 */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { configDirPath } from '../config/load.js';
import { connectionFilePaths } from '../connection/index.js';
import { DEFAULT_DATA_DIR } from '../contract/defaults.js';
import { INSTALL_ROOT } from '../mcp/sandbox.js';
import type { Env, Settings } from '../settings/index.js';

/** Files the AWS SDK reads credentials from (the S3 payload store), when the environment moves them. */
const AWS_FILE_VARIABLES = ['AWS_SHARED_CREDENTIALS_FILE', 'AWS_CONFIG_FILE', 'AWS_WEB_IDENTITY_TOKEN_FILE'] as const;

/**
 * The files and folders the worker's settings name that a sandboxed server must not read: the data
 * dir (turn key, API token, OAuth key, payloads), the OAuth dir, the config dir, the API tokens
 * file, the Temporal profile and TLS files, the AWS credential files, DMCP_SANDBOX_HIDE; and the
 * default data dirs of other instances it can know of (the installation's, the working directory's).
 */
export function sandboxHiddenPaths(settings: Settings, env: Env): string[] {
  const paths = [
    settings.dataDir,
    settings.oauth.dir,
    configDirPath(env),
    settings.api.tokensFile,
    ...connectionFilePaths(env),
    ...AWS_FILE_VARIABLES.map((v) => env[v]?.trim() || undefined),
    join(INSTALL_ROOT, DEFAULT_DATA_DIR),
    resolve(DEFAULT_DATA_DIR),
    ...settings.untrustedStdio.hide,
  ];
  return [...new Set(paths.filter((p): p is string => p !== undefined).map((p) => resolve(p)))];
}

/** The worker's home, which the sandbox hides as well: HOME when absolute, else the user's home. */
export function sandboxHome(env: Env): string | undefined {
  return env.HOME && isAbsolute(env.HOME) ? resolve(env.HOME) : homedir() || undefined;
}
