import type { ShapeLimits } from '../shaping/index.js';
import type { ConfigSettings } from './configSwitches.js';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
export type SdkLogLevel = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

/** Everything the processes of one deployment are told through their environment. */
export interface Settings {
  temporal: {
    /** TEMPORAL_ADDRESS; unset means the embedded dev server (or a running `durable-mcp dev`). */
    address?: string;
    /** TEMPORAL_NAMESPACE, default `default`. */
    namespace: string;
  };
  /** DMCP_TASK_QUEUE, default `durable-mcp`. */
  taskQueue: string;
  /** DMCP_DATA_DIR (absolute), default `./.data`: dev-server database, payload store, dev state. */
  dataDir: string;
  /** DMCP_START_TIMEOUT, default 10 s: per server, start + handshake + first listing. */
  startTimeoutMs: number;
  /** DMCP_SESSION_IDLE, default 10 min: an unused session's servers stop. */
  sessionIdleMs: number;
  /**
   * DMCP_WARM_SPARES, default 0 (off): started spare processes kept per trusted stdio entry (config
   * dir, explicit files, inline specs), so a new session's first turn takes a ready server.
   */
  warmSpares: number;
  /** DMCP_TURN_IDLE, default 30 min: an interactive turn with no call ends itself. */
  turnIdleMs: number;
  /** DMCP_INPUT_TIMEOUT, default 24 h: how long a call waits for a person's answers to its input requests. */
  inputTimeoutMs: number;
  /**
   * DMCP_LEGACY_INPUT_TIMEOUT, default 10 min (1 s to 6 h): how long one attempt of a call to a
   * 2025-era server waits in all for a person's answers; the call holds its connection meanwhile.
   */
  legacyInputTimeoutMs: number;
  /** DMCP_SHUTDOWN_GRACE, default 30 s: running calls may finish on worker shutdown. */
  shutdownGraceMs: number;
  /**
   * DMCP_STICKY_WAIT, default 500 ms (100 ms to 60 s): how long a turn's next workflow task waits for the
   * worker that holds the turn in its cache before another worker takes it and replays the turn.
   */
  stickyWaitMs: number;
  /**
   * DMCP_DEPLOYMENT_NAME and DMCP_BUILD_ID, both or neither: the Temporal worker deployment version
   * the worker runs as; unset, the worker is unversioned.
   */
  deployment?: { name: string; buildId: string };
  /**
   * DMCP_FAST_PATH, default true: a retry-safe call runs first as a local activity when the worker
   * running the turn holds the session's servers; false: every call is a regular activity.
   */
  fastPath: boolean;
  /**
   * DMCP_EAGER_CALLS, default true: a side-effecting call goes to the shared queue for eager
   * dispatch to the worker running the turn when that worker holds the session's servers (the
   * Temporal server needs `system.enableActivityEagerExecution`); false: to the holder's own queue.
   */
  eagerCalls: boolean;
  /**
   * DMCP_SHARED_CALLS, default true: a call to a remote server that speaks the stateless 2026-07-28
   * revision may run on any worker, over that worker's own connection to the server; false: on
   * the worker holding the session's servers, like every other call.
   */
  sharedCalls: boolean;
  /** DMCP_TOOL_PREFIX: `mcp` (default, `mcp__server__tool`) or `none` (`server__tool`). */
  toolPrefix: 'mcp' | 'none';
  /** DMCP_LOG_LEVEL, default `info` (pino levels). */
  logLevel: LogLevel;
  /** DMCP_SDK_LOG_LEVEL, default `WARN`: the Temporal SDK runtime's own log level. */
  sdkLogLevel: SdkLogLevel;
  payloads: {
    /** DMCP_ENCRYPTION_KEY: 32 bytes (base64 or hex); unset means compression only. */
    encryptionKey?: string;
    /** DMCP_ENCRYPTION_KEYS_PREVIOUS: comma-separated older keys, still accepted for decoding. */
    previousEncryptionKeys: string[];
    /** DMCP_EXTERNAL_THRESHOLD_BYTES, default 16 KiB: larger payloads go to the payload store. */
    externalThresholdBytes: number;
    /**
     * The S3-compatible payload store every worker and client of a cluster reads; present only when
     * DMCP_PAYLOAD_STORE is `s3` (the default once DMCP_S3_BUCKET is set). Absent: files under the data dir.
     */
    s3?: S3StoreSettings;
  };
  dev: {
    /** DMCP_DEV_PORT, default 7233. */
    port: number;
    /** DMCP_DEV_UI_PORT, default 8233. */
    uiPort: number;
    /** DMCP_CODEC_PORT, default 8234. */
    codecPort: number;
    /**
     * DMCP_CODEC_TOKEN: when set, the codec server answers only requests with
     * `Authorization: Bearer <it>` (CLI and API clients; the dev server's UI cannot send one).
     */
    codecToken?: string;
  };
  /** What the model sees of a call: DMCP_MAX_TOOL_RESULT_TOKENS, DMCP_MAX_IMAGE_BYTES, ... */
  shape: ShapeLimits;
  /** Config-layer switches and the config dir ({@link configSettings}), and DMCP_MCP_ENV: worker variables servers may receive. */
  config: ConfigSettings & { mcpEnv: string[] };
  /**
   * What a worker honours of a turn's references. Unset values take the default of the command
   * that starts the worker (`run`/`dev` trust their own caller; `worker` joined to a cluster does not).
   */
  /** Allowed-tools rules of this worker (matchers on public tool names; checked by `governance/`). */
  governance: {
    /** DMCP_ALLOWED_TOOLS: only these tools may be listed and called; unset: no allow list. */
    allowedTools?: string[];
    /** DMCP_DISALLOWED_TOOLS: these tools never are; a deny always wins. */
    disallowedTools: string[];
  };
  boundary: {
    /** DMCP_ALLOW_INLINE: whether inline `--mcp` specs are honoured. */
    allowInline?: boolean;
    /** DMCP_ALLOWED_CONFIG_DIRS: the folders `--mcp-config` files and plugin folders must lie in (after symlinks). */
    allowedConfigDirs?: string[];
    /** DMCP_WORKSPACE_ROOTS: the folders a turn's workspace must lie in for the workspace layer to be read. */
    workspaceRoots?: string[];
  };
  /** The HTTP API (`durable-mcp api`). */
  api: {
    /** DMCP_API_HOST, default 127.0.0.1. */
    host: string;
    /** DMCP_API_PORT, default 8235. */
    port: number;
    /**
     * DMCP_API_TOKENS: bearer tokens, stored hashed: entries `sha256:<hex> <session-prefix>,...`
     * separated by `;` or newlines (parsed by the API, which names a bad entry). Unset, with no
     * DMCP_API_TOKENS_FILE: the API serves with the token in `<DMCP_DATA_DIR>/api.token`, created 0600.
     */
    tokens?: string;
    /** DMCP_API_TOKENS_FILE: a file of such entries, one a line (`#` starts a comment). */
    tokensFile?: string;
    /**
     * DMCP_API_ALLOWED_HOSTS: `Host` names (with or without a port) served besides loopback ones.
     * Unset: an API listening on loopback serves only loopback names (a DNS-rebound name is refused).
     */
    allowedHosts?: string[];
    /** DMCP_API_ALLOWED_ORIGINS: web origins (`https://app.example`) served besides loopback ones and the API's own. */
    allowedOrigins?: string[];
    /** DMCP_API_MAX_BODY, default 2 MiB: larger request bodies get 413. */
    maxBodyBytes: number;
    /** DMCP_API_CALL_WAIT, default 30 s: how long a call request waits for its outcome before answering 202. */
    callWaitMs: number;
  };
  /** DMCP_DEBUG: stack traces on CLI errors. */
  debug: boolean;
  /**
   * The DMCP_* variables the environment set (not empty): a command whose own default differs from
   * the documented one (a quieter log, no warm spares) applies it only when the operator set none.
   */
  given: ReadonlySet<string>;
  /** Stdio servers of untrusted layers (workspace, plugins). */
  untrustedStdio: {
    /**
     * DMCP_UNTRUSTED_STDIO, default `sandbox`: run them under bubblewrap (refused where it does not
     * work); `refuse`: never run them; `allow`: run them unsandboxed, like trusted servers.
     */
    mode: 'sandbox' | 'refuse' | 'allow';
    /** DMCP_BWRAP, default `bwrap` (looked up on PATH): the bubblewrap binary. */
    bwrap: string;
    /**
     * DMCP_SANDBOX_HIDE: `:`-separated absolute files and folders the sandbox hides besides those the
     * worker's own settings name and its home; empty by default.
     */
    hide: string[];
  };
  /** OAuth logins of shelf servers (`durable-mcp mcp login`): where the tokens live and their key. */
  oauth: {
    /** DMCP_OAUTH_DIR (absolute), default `<DMCP_DATA_DIR>/oauth`: one encrypted file per login, 0600 in a 0700 folder. */
    dir: string;
    /** DMCP_OAUTH_KEY: 32 bytes (64 hex digits or base64) encrypting the token files; unset: `<DMCP_DATA_DIR>/oauth.key`, created 0600. */
    key?: string;
    /** DMCP_OAUTH_KEYS_PREVIOUS: comma-separated older keys, still accepted for reading (key rotation). */
    previousKeys: string[];
    /** DMCP_OAUTH_CALLBACK_PORT, default 8788: the loopback port `mcp login` waits on for the browser's redirect. */
    callbackPort: number;
    /**
     * DMCP_OAUTH_CLIENT_METADATA_URL: an https address with a path where the operator hosts the
     * client's metadata document (`durable-mcp mcp client-metadata` prints it); used as the client
     * ID by authorization servers that accept metadata documents. Unset: dynamic registration.
     */
    clientMetadataUrl?: string;
  };
  /** Prometheus metrics of the worker (calls, servers, the Temporal SDK's own). */
  metrics: {
    /** DMCP_METRICS_PORT: where `/metrics` is served; unset: no metrics. 0 picks a free port. */
    port?: number;
    /** DMCP_METRICS_HOST, default `127.0.0.1`: the address the metrics port binds. */
    host: string;
  };
}

/** Where the S3 payload store is; credentials come from the AWS SDK's usual sources (AWS_ACCESS_KEY_ID, ...). */
export interface S3StoreSettings {
  /** DMCP_S3_BUCKET (required). */
  bucket: string;
  /** DMCP_S3_PREFIX, default `durable-mcp/payloads/`: keys are `<prefix><sha256>.bin`. */
  prefix: string;
  /** DMCP_S3_ENDPOINT: an S3-compatible server's URL; unset: AWS S3. */
  endpoint?: string;
  /** DMCP_S3_REGION, else AWS_REGION, else AWS_DEFAULT_REGION, else `us-east-1`. */
  region: string;
  /** DMCP_S3_FORCE_PATH_STYLE, default false: `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint>/<key>`. */
  forcePathStyle: boolean;
}
