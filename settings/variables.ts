/**
 * Every environment variable the processes read, with its default and what it means: the one list
 * docs/configuration.md's table is rendered from (`npm run docs:settings`), and that a unit test
 * holds against the code, so a variable cannot be read without being documented, nor documented
 * once no code reads it.
 */

/** Where a variable belongs; each group is one table in the docs, in this order. */
export const VARIABLE_GROUPS = {
  temporal: 'Temporal',
  worker: 'Workers and turns',
  config: 'Servers and config layers',
  limits: 'What the model sees of a call',
  payloads: 'Payloads',
  api: 'HTTP API',
  oauth: 'OAuth logins',
  logs: 'Logs, metrics and errors',
  dev: 'Development and setup',
} as const;

export type VariableGroup = keyof typeof VARIABLE_GROUPS;

export interface VariableDoc {
  /** The variable's name, e.g. `DMCP_DATA_DIR`. */
  name: string;
  /** The default, as text (Markdown): `unset`, `empty`, or the value in backquotes. */
  default: string;
  /** What it does, one line (Markdown). */
  meaning: string;
  group: VariableGroup;
}

export const VARIABLES: readonly VariableDoc[] = [
  // Temporal
  {
    group: 'temporal',
    name: 'TEMPORAL_ADDRESS',
    default: 'embedded',
    meaning:
      'use this Temporal service instead of the embedded dev server (or a running `durable-mcp dev`); a Temporal config profile works too',
  },
  { group: 'temporal', name: 'TEMPORAL_NAMESPACE', default: '`default`', meaning: 'the Temporal namespace' },
  { group: 'temporal', name: 'DMCP_TASK_QUEUE', default: '`durable-mcp`', meaning: 'shared task queue' },

  // Workers and turns
  {
    group: 'worker',
    name: 'DMCP_DATA_DIR',
    default: '`./.data`',
    meaning: 'dev-server database, payload store and `dev.json` (how other commands find a running `dev`)',
  },
  {
    group: 'worker',
    name: 'DMCP_START_TIMEOUT',
    default: '`10s`',
    meaning: 'per-server start + handshake + first listing',
  },
  { group: 'worker', name: 'DMCP_SESSION_IDLE', default: '`10m`', meaning: "idle stop of a session's servers" },
  {
    group: 'worker',
    name: 'DMCP_WARM_SPARES',
    default: '`0`; `1` under `durable-mcp dev`',
    meaning:
      "started spare processes kept per trusted stdio server (config dir, `--mcp-config`, `--mcp`; never workspace or plugin servers), so a new session's first turn takes a ready one instead of spawning it; refilled 1 s after one is taken, stopped with the worker or once no session used the server for `DMCP_SESSION_IDLE`; `0` keeps none. `dev` keeps one unless the variable is set, so each `durable-mcp run` after the first with the same server takes a started one (see [performance.md](performance.md))",
  },
  {
    group: 'worker',
    name: 'DMCP_TURN_IDLE',
    default: '`30m`',
    meaning: 'an interactive turn with no call for this long ends itself (read by the client)',
  },
  {
    group: 'worker',
    name: 'DMCP_INPUT_TIMEOUT',
    default: '`24h`',
    meaning:
      'how long a call waits for a person to answer its input requests before the server is told they were cancelled (read by the client; at most 30 days)',
  },
  {
    group: 'worker',
    name: 'DMCP_LEGACY_INPUT_TIMEOUT',
    default: '`10m`',
    meaning:
      'how long one attempt of a call to a 2025-era server waits in all for a person to answer the questions it asks mid-call; the call holds its connection meanwhile, and an unanswered question is answered `cancel` at the limit (read by the client; 1s to 6h)',
  },
  {
    group: 'worker',
    name: 'DMCP_SHUTDOWN_GRACE',
    default: '`30s`',
    meaning:
      'on worker shutdown, running calls get this long to finish before they are cancelled (for `durable-mcp api`: requests in flight on SIGINT/SIGTERM)',
  },
  {
    group: 'worker',
    name: 'DMCP_FAST_PATH',
    default: '`true`',
    meaning:
      'a call that is safe to retry (`readOnlyHint`, `idempotentHint`, `"retry": "safe"`) runs first as a local activity when the worker running the turn holds its servers; `false`: every call is a regular activity ([performance.md](performance.md#the-fast-path))',
  },
  {
    group: 'worker',
    name: 'DMCP_EAGER_CALLS',
    default: '`true`',
    meaning:
      "a side-effecting call goes to the turn's own queue for eager dispatch when the worker running the turn holds its servers (the Temporal server needs `system.enableActivityEagerExecution`, which `dev` and the embedded server set); `false`: to the holder's own queue ([performance.md](performance.md#eager-dispatch-of-side-effecting-calls))",
  },
  {
    group: 'worker',
    name: 'DMCP_SHARED_CALLS',
    default: '`true`',
    meaning:
      "a call to a remote server that speaks the stateless 2026-07-28 revision runs on any worker, over that worker's own connection to it, so the turn is not pinned for it; `false`: on the worker holding the session's servers ([performance.md](performance.md#shared-calls-to-stateless-servers))",
  },
  {
    group: 'worker',
    name: 'DMCP_STICKY_WAIT',
    default: '`500ms`',
    meaning:
      "how long a turn's next workflow task waits for the worker that has the turn cached before another worker takes it (and replays the turn); after a worker dies, each of its turns stalls once by this much (`100ms` to `60s`; see [performance.md](performance.md#worker-settings))",
  },
  {
    group: 'worker',
    name: 'DMCP_DEPLOYMENT_NAME',
    default: 'unset',
    meaning:
      'with `DMCP_BUILD_ID`: the worker runs as this Temporal worker deployment, so a turn runs to its end on the build that started it while new turns start on the current build; unset: an unversioned worker ([cluster.md](cluster.md#deploying-a-new-build))',
  },
  {
    group: 'worker',
    name: 'DMCP_BUILD_ID',
    default: 'unset',
    meaning:
      "with `DMCP_DEPLOYMENT_NAME`: this worker's build (e.g. the image tag or commit); a changed workflow needs a new one, set current with `temporal worker deployment set-current-version`",
  },

  // Servers and config layers
  { group: 'config', name: 'DMCP_MCP', default: '`true`', meaning: '`false` (or `0`, `no`, `off`) turns MCP off' },
  {
    group: 'config',
    name: 'DMCP_CONFIG_DIR',
    default: '`$XDG_CONFIG_HOME/durable-mcp`, else `~/.config/durable-mcp`',
    meaning:
      'trusted config dir holding `mcp.json`, `settings.json` and `models.json` (a relative `XDG_CONFIG_HOME` is ignored, as the XDG spec says)',
  },
  {
    group: 'config',
    name: 'DMCP_NO_USER_CONFIG',
    default: 'unset',
    meaning: '`1` (or `true`) skips the config-dir layer',
  },
  {
    group: 'config',
    name: 'DMCP_WORKSPACE_MCP',
    default: '`false`',
    meaning: '`true` (or `1`) reads `<workspace>/.agents/mcp.json`',
  },
  {
    group: 'config',
    name: 'DMCP_MCP_ENV',
    default: 'empty',
    meaning:
      'comma- (or space-) separated worker variables servers may receive (`envFrom`, `bearerTokenEnv`); invalid names are ignored with a warning',
  },
  { group: 'config', name: 'DMCP_TOOL_PREFIX', default: '`mcp`', meaning: '`none` drops the `mcp__` prefix' },
  {
    group: 'config',
    name: 'DMCP_ALLOW_INLINE',
    default: 'on for `run`/`dev`, off for `worker` and `api`',
    meaning: "whether the worker honours a turn's inline `--mcp` specs",
  },
  {
    group: 'config',
    name: 'DMCP_ALLOWED_CONFIG_DIRS',
    default: 'anywhere for `run`/`dev`, none for `worker` and `api`',
    meaning: '`:`-separated absolute folders that `--mcp-config` files and plugin folders must lie in (after symlinks)',
  },
  {
    group: 'config',
    name: 'DMCP_WORKSPACE_ROOTS',
    default: 'anywhere for `run`/`dev`, none for `worker` and `api`',
    meaning:
      "`:`-separated absolute folders a turn's workspace must lie in for the workspace layer (`DMCP_WORKSPACE_MCP`) to be read",
  },
  {
    group: 'config',
    name: 'DMCP_ALLOWED_TOOLS',
    default: 'unset',
    meaning:
      "the worker's allow list: comma-separated matchers such as `mcp__github__*`; tools outside are never listed to the model (see [Allowed tools and hooks](governance.md))",
  },
  {
    group: 'config',
    name: 'DMCP_DISALLOWED_TOOLS',
    default: 'empty',
    meaning:
      'comma-separated matchers of tools that are never listed or called; a deny always wins (see [Allowed tools and hooks](governance.md))',
  },
  {
    group: 'config',
    name: 'DMCP_UNTRUSTED_STDIO',
    default: '`sandbox`',
    meaning:
      'stdio servers of the workspace and plugin layers run in a bubblewrap sandbox (`sandbox`; refused where bwrap does not work), are never started (`refuse`), or run unsandboxed (`allow`)',
  },
  { group: 'config', name: 'DMCP_BWRAP', default: '`bwrap`', meaning: 'the bubblewrap binary (looked up on `PATH`)' },
  {
    group: 'config',
    name: 'DMCP_SANDBOX_HIDE',
    default: 'empty',
    meaning:
      "`:`-separated absolute files and folders the sandbox of untrusted stdio servers hides besides those the worker's settings name and its home (`/` is refused)",
  },

  // What the model sees of a call
  {
    group: 'limits',
    name: 'DMCP_MAX_TOOL_RESULT_TOKENS',
    default: '`25000`',
    meaning: 'text cap per call, for the model',
  },
  {
    group: 'limits',
    name: 'DMCP_MAX_IMAGE_BYTES',
    default: '`5242880`',
    meaning: 'image bytes per call, for the model',
  },
  { group: 'limits', name: 'DMCP_MAX_IMAGES_PER_MESSAGE', default: '`20`', meaning: 'images per call, for the model' },
  { group: 'limits', name: 'DMCP_MODEL_IMAGES', default: '`true`', meaning: '`false`: every image becomes a note' },
  {
    group: 'limits',
    name: 'DMCP_STRUCTURED_CONTENT',
    default: '`auto`',
    meaning:
      'what the model sees of `structuredContent`: `content`, `structured`, `both`, `auto` (content, plus the JSON when content is empty)',
  },

  // Payloads
  {
    group: 'payloads',
    name: 'DMCP_ENCRYPTION_KEY',
    default: 'unset',
    meaning:
      'AES-256-GCM payload encryption (workers, clients and the codec server need the same key): exactly 32 bytes, as 64 hex digits or base64 (`openssl rand -base64 32`); anything else is refused',
  },
  {
    group: 'payloads',
    name: 'DMCP_ENCRYPTION_KEYS_PREVIOUS',
    default: 'empty',
    meaning: 'comma-separated earlier keys, decrypt only, so a key can rotate under running turns',
  },
  {
    group: 'payloads',
    name: 'DMCP_EXTERNAL_THRESHOLD_BYTES',
    default: '`16384`',
    meaning: 'payloads above this (after compression and encryption) go to the payload store',
  },
  {
    group: 'payloads',
    name: 'DMCP_PAYLOAD_STORE',
    default: '`s3` when `DMCP_S3_BUCKET` is set, else `fs`',
    meaning:
      'where large payloads go: the data dir (`fs`), or an S3-compatible bucket every worker and client reads (`s3`), see [cluster.md](cluster.md#the-payload-store)',
  },
  { group: 'payloads', name: 'DMCP_S3_BUCKET', default: '(required for `s3`)', meaning: 'the bucket' },
  {
    group: 'payloads',
    name: 'DMCP_S3_PREFIX',
    default: '`durable-mcp/payloads/`',
    meaning: 'keys are `<prefix><sha256>.bin`',
  },
  {
    group: 'payloads',
    name: 'DMCP_S3_ENDPOINT',
    default: 'AWS S3',
    meaning: "an S3-compatible server's URL (no credentials in it)",
  },
  {
    group: 'payloads',
    name: 'DMCP_S3_REGION',
    default: '`AWS_REGION`, `AWS_DEFAULT_REGION`, `us-east-1`',
    meaning: 'the region',
  },
  {
    group: 'payloads',
    name: 'DMCP_S3_FORCE_PATH_STYLE',
    default: '`false`',
    meaning: '`<endpoint>/<bucket>/<key>` (most self-hosted servers need it)',
  },
  {
    group: 'payloads',
    name: 'DMCP_CODEC_PORT',
    default: '`8234`',
    meaning: 'codec server port of `durable-mcp dev` (and `payloads codec-server`)',
  },
  {
    group: 'payloads',
    name: 'DMCP_CODEC_TOKEN',
    default: 'unset',
    meaning:
      "when set, the codec server answers only `Authorization: Bearer <token>` (e.g. `temporal workflow show --codec-endpoint ... --codec-auth 'Bearer <token>'`); the dev server's UI cannot send it, so it then shows encoded payloads",
  },

  // HTTP API
  {
    group: 'api',
    name: 'DMCP_API_HOST',
    default: '`127.0.0.1`',
    meaning: 'address `durable-mcp api` (and `dev`) listen on (`--host`)',
  },
  {
    group: 'api',
    name: 'DMCP_API_PORT',
    default: '`8235`',
    meaning: 'port of the HTTP API (`--port`; `0` picks one), see [api.md](api.md)',
  },
  {
    group: 'api',
    name: 'DMCP_API_TOKENS',
    default: 'unset',
    meaning:
      "hashed bearer token entries (see [api.md](api.md)); unset, with no `DMCP_API_TOKENS_FILE`: the API serves with the data dir's `api.token`, created on first use",
  },
  { group: 'api', name: 'DMCP_API_TOKENS_FILE', default: 'unset', meaning: 'a file of hashed token entries' },
  {
    group: 'api',
    name: 'DMCP_API_ALLOWED_HOSTS',
    default: 'unset',
    meaning:
      '`Host` names served besides loopback ones (`api.internal`, `api.internal:8235`); set, it also limits an API listening on a network',
  },
  {
    group: 'api',
    name: 'DMCP_API_ALLOWED_ORIGINS',
    default: 'unset',
    meaning: "web origins served besides loopback pages and the API's own (`https://console.example.com`)",
  },
  {
    group: 'api',
    name: 'DMCP_API_MAX_BODY',
    default: '`2097152`',
    meaning: 'request bodies over this many bytes get `413`',
  },
  {
    group: 'api',
    name: 'DMCP_API_CALL_WAIT',
    default: '`30s`',
    meaning: 'how long a call request waits for its outcome before `202`',
  },

  // OAuth logins
  {
    group: 'oauth',
    name: 'DMCP_OAUTH_DIR',
    default: '`<data dir>/oauth`',
    meaning:
      'where the OAuth logins of shelf servers are kept (one AES-256-GCM encrypted file per login, 0600 in a 0700 folder); see [oauth.md](oauth.md)',
  },
  {
    group: 'oauth',
    name: 'DMCP_OAUTH_KEY',
    default: 'the key file `<data dir>/oauth.key` (created 0600)',
    meaning: 'the key the login files are encrypted with (32 bytes, hex or base64)',
  },
  {
    group: 'oauth',
    name: 'DMCP_OAUTH_KEYS_PREVIOUS',
    default: 'unset',
    meaning: 'comma-separated older keys still accepted for reading after a rotation (`durable-mcp mcp rekey`)',
  },
  {
    group: 'oauth',
    name: 'DMCP_OAUTH_CALLBACK_PORT',
    default: '`8788`',
    meaning: 'the loopback port `durable-mcp mcp login` waits on for the browser to come back (one login at a time)',
  },
  {
    group: 'oauth',
    name: 'DMCP_OAUTH_CLIENT_METADATA_URL',
    default: 'unset',
    meaning:
      'an https address with a path where you host the client ID metadata document (`durable-mcp mcp client-metadata` prints it): the client ID of `mcp login` at authorization servers that accept such documents; elsewhere, dynamic registration; see [oauth.md](oauth.md)',
  },

  // Logs, metrics and errors
  {
    group: 'logs',
    name: 'DMCP_LOG_LEVEL',
    default: '`info` (`warn` for `run`)',
    meaning: 'pino level; logs are JSON on stderr, pretty on a TTY',
  },
  {
    group: 'logs',
    name: 'DMCP_SDK_LOG_LEVEL',
    default: '`WARN`',
    meaning:
      "the Temporal SDK runtime's own log level (`TRACE`, `DEBUG`, `INFO`, `WARN`, `ERROR`); its logs go through pino",
  },
  {
    group: 'logs',
    name: 'DMCP_DEBUG',
    default: '`false`',
    meaning: '`true`: an error that ends a command with exit code 1 prints its stack too',
  },
  {
    group: 'logs',
    name: 'DMCP_METRICS_PORT',
    default: 'unset (off)',
    meaning: "the port of the worker's Prometheus `/metrics` (`0` picks a free one), see [Metrics](metrics.md)",
  },
  { group: 'logs', name: 'DMCP_METRICS_HOST', default: '`127.0.0.1`', meaning: 'the address the metrics port binds' },

  // Development and setup
  { group: 'dev', name: 'DMCP_DEV_PORT', default: '`7233`', meaning: 'gRPC port of `durable-mcp dev`' },
  { group: 'dev', name: 'DMCP_DEV_UI_PORT', default: '`8233`', meaning: 'UI port of `durable-mcp dev`' },
  {
    group: 'dev',
    name: 'DMCP_TEMPORAL_CLI',
    default: '(search)',
    meaning: 'path to the `temporal` binary (else `temporal` on `PATH`, then the copy in `.tools/`)',
  },
  {
    group: 'dev',
    name: 'DMCP_CLUSTER_TOOLS_DIR',
    default: '`.tools/`',
    meaning:
      'where the cluster test and bench find their built servers (for a checkout whose `.tools/` is shared or read-only), see [development.md](development.md)',
  },
];

/** Markdown of a table cell: a `|` would end the cell. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/** The variables as Markdown: one table per group, in the order of {@link VARIABLE_GROUPS}. */
export function renderVariables(variables: readonly VariableDoc[] = VARIABLES): string {
  const parts: string[] = [];
  for (const [group, title] of Object.entries(VARIABLE_GROUPS)) {
    const rows = variables.filter((v) => v.group === group);
    if (rows.length === 0) continue;
    parts.push(
      [
        `### ${title}`,
        '',
        '| variable | default | meaning |',
        '|---|---|---|',
        ...rows.map((v) => `| \`${v.name}\` | ${cell(v.default)} | ${cell(v.meaning)} |`),
      ].join('\n'),
    );
  }
  return `${parts.join('\n\n')}\n`;
}

export const VARIABLES_BEGIN = '<!-- variables:begin -->';
export const VARIABLES_END = '<!-- variables:end -->';

/** The text between the markers of `doc`, or undefined when they are missing. */
export function variablesBlock(doc: string): string | undefined {
  const begin = doc.indexOf(VARIABLES_BEGIN);
  const end = doc.indexOf(VARIABLES_END);
  if (begin < 0 || end < begin) return undefined;
  return doc
    .slice(begin + VARIABLES_BEGIN.length, end)
    .replace(/^\n+/, '')
    .replace(/\n+$/, '\n');
}

/**
 * `doc` with the text between the markers replaced by `rendered`.
 * @throws Error when the markers are missing.
 */
export function withVariablesBlock(doc: string, rendered: string): string {
  const begin = doc.indexOf(VARIABLES_BEGIN);
  const end = doc.indexOf(VARIABLES_END);
  if (begin < 0 || end < begin) throw new Error(`the document has no ${VARIABLES_BEGIN} ... ${VARIABLES_END} markers`);
  return `${doc.slice(0, begin + VARIABLES_BEGIN.length)}\n${rendered}${doc.slice(end)}`;
}
