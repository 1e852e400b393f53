/**
 * Defaults every process must agree on without reading each other's settings: the shared task
 * queue (the shelf's workflow ID depends on it), the data dir, and the names of the files the data
 * dir holds (the CLI, `TurnClient`, the API and the workers find each other's keys by them).
 */

/** DMCP_TASK_QUEUE's default: the queue every worker polls. */
export const DEFAULT_TASK_QUEUE = 'durable-mcp';

/** DMCP_DATA_DIR's default, relative to the working directory. */
export const DEFAULT_DATA_DIR = '.data';

/** The folder under `$XDG_CONFIG_HOME` (or `~/.config`) that is the default config dir. */
export const CONFIG_DIR_NAME = 'durable-mcp';

/** Files and folders in the data dir. */
export const DataDirEntry = {
  /** The operator's turn key (proofs of references, shelf signatures, PreToolUse seals). */
  turnKey: 'turn.key',
  /** The HTTP API's own token, when no tokens are configured. */
  apiToken: 'api.token',
  /** The key of the OAuth token store. */
  oauthKey: 'oauth.key',
  /** The OAuth token store (DMCP_OAUTH_DIR's default). */
  oauthDir: 'oauth',
  /** External payload storage of the filesystem driver. */
  payloads: 'payloads',
} as const;
