import type { LayerKind, ProtocolMode, TransportKind } from '../contract/index.js';
export type { ConfigRefs } from '../contract/index.js';

/** A server entry after layering and validation. Holds variable *names*, never secret values. */
export interface ServerEntry {
  name: string;
  layer: LayerKind;
  /** File path (with line) or `--mcp #N`. */
  source: string;
  trusted: boolean;
  type: TransportKind;
  command?: string;
  args: string[];
  env: Record<string, string>;
  /** SERVER_VAR -> WORKER_VAR, resolved on the worker when the process starts. */
  envFrom: Record<string, string>;
  /** Absolute working directory. */
  cwd?: string;
  url?: string;
  headers: Record<string, string>;
  bearerTokenEnv?: string;
  tools?: string[];
  startTimeoutMs?: number;
  toolTimeoutMs?: number;
  enabled: boolean;
  /**
   * Whether a call that may already have started is retried. `auto` (the default, also when absent):
   * only for tools annotated readOnlyHint or idempotentHint. `safe`: every call, up to 3 attempts.
   * `never`: no call, whatever its annotations.
   */
  retry?: 'auto' | 'safe' | 'never';
  /** `false`: the server is never offered the turn's workspace as an MCP root (it keeps its own directories). */
  roots?: false;
  /**
   * Which MCP wire era to speak: `auto` (the default, also when absent) probes with
   * `server/discover` and falls back to the 2025 handshake; `legacy` never probes; `2026-07-28`
   * accepts only that revision (a server without it fails to start).
   */
  protocol?: ProtocolMode;
  /**
   * Which tools are called as MCP tasks: `auto` (the default, also when absent) only those whose
   * listing says `execution.taskSupport: "required"`; `prefer` also those that say `"optional"`,
   * and every tool of a 2026-07-28 server that offers the tasks extension.
   */
  tasks?: 'auto' | 'prefer';
  /**
   * A remote server from the shelf: the shelf name whose OAuth login (if any) the worker sends.
   * The token itself is never part of an entry.
   */
  login?: string;
  /** The ID of that login when the config was loaded (not secret): a new login restarts the server. */
  loginId?: string;
}

/** An entry that was refused: it shows up as a failed server in the status. */
export interface RefusedEntry {
  name: string;
  layer: LayerKind;
  source: string;
  transport: TransportKind;
  reason: string;
  /** 1-based line of the offending field (or of the entry), when the entry came from a file. */
  line?: number;
  /** The offending field, as a path such as `headers.Authorization` or `args[2]`. */
  field?: string;
}

/** Loader result; `servers` and `refused` are disjoint by name. */
export interface LoadedConfig {
  /** DMCP_MCP=false. */
  off: boolean;
  servers: ServerEntry[];
  refused: RefusedEntry[];
  /** Layer-level warnings (a skipped file, an override refused). */
  warnings: string[];
  /** Content hash of the resolved entries; a change restarts the session's servers. */
  hash: string;
}

/** A fatal configuration error (explicit files and inline specs): names file, line and field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    message: string,
    readonly file?: string,
    readonly line?: number,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Human label of a layer, for messages. */
export function layerLabel(kind: LayerKind): string {
  return {
    configDir: 'config dir',
    shelf: 'shelf',
    workspace: 'workspace',
    plugin: 'plugin',
    explicit: '--mcp-config',
    inline: '--mcp',
  }[kind];
}

/** Whether a layer is trusted: the agent cannot write trusted layers. */
export function isTrustedLayer(kind: LayerKind): boolean {
  return kind === 'configDir' || kind === 'shelf' || kind === 'explicit' || kind === 'inline';
}

/**
 * What a worker honours of a turn's references. Its operator decides it (settings and the command
 * that started the worker); a turn only chooses among what it allows.
 */
export interface Boundary {
  /** Inline `--mcp` specs are honoured (DMCP_ALLOW_INLINE). */
  allowInline: boolean;
  /**
   * Folders `--mcp-config` files and plugin folders must lie in, after symlinks are resolved
   * (DMCP_ALLOWED_CONFIG_DIRS). Undefined: anywhere; empty: nowhere.
   */
  allowedConfigDirs?: string[];
  /**
   * Folders the turn's workspace must lie in for the workspace layer to be read
   * (DMCP_WORKSPACE_ROOTS). Undefined: anywhere; empty: the workspace layer is never read.
   */
  workspaceRoots?: string[];
  /**
   * The operator's turn key. When set, the references a turn chooses (inline specs, explicit files,
   * plugins, the workspace layer) are honoured only with a valid `refs.proof` for this session.
   */
  turnKey?: Buffer;
  /** Where the servers of inline specs start (they have no folder of their own). */
  inlineCwd: string;
}

/** Outcome of one `$(command)` expression, run by the loader before the (pure) parse. */
export type CommandOutcome = { ok: true; stdout: string } | { ok: false; error: string };

/** What the pure parser needs to know about the file it is parsing. */
export interface LayerInfo {
  kind: LayerKind;
  /** Path shown in messages and `source` (the file as the user would find it). */
  file: string;
  /** Absolute workspace: the default cwd of workspace-layer servers, and the base of their relative `cwd`. */
  workspace: string;
  /**
   * The layer's own folder (config dir and explicit files: the folder of the file as read, after
   * symlinks; default: the folder of `file`): the default cwd of its servers and the base of a
   * relative `cwd`, so a trusted server never starts in the agent-writable workspace by default.
   */
  folder?: string;
  /**
   * Check shape, names, trust and secret rules only, as for a disabled entry: no variable needs to
   * be set and no command output is used (the client's pre-check, whose environment is not the worker's).
   */
  checkOnly?: boolean;
  /** Plugin layers only: the plugin's name (for `plugin_<plugin>_<server>`) and folder (`${PLUGIN_ROOT}`). */
  plugin?: { name: string; root: string };
  /** Plugin manifests (`plugin.json`) carry other top-level fields, and `mcpServers` is optional there. */
  manifest?: boolean;
  /** Outputs of `$(command)` expressions keyed by command text; only consulted in trusted layers. */
  commands?: ReadonlyMap<string, CommandOutcome>;
}

/** A problem with a whole file (unreadable, malformed, wrong shape): the layer is skipped, or fatal. */
export interface LayerProblem {
  message: string;
  file: string;
  line?: number;
  field?: string;
}

/** Result of parsing one file: never throws; problems come back as data. */
export interface ParseResult {
  servers: ServerEntry[];
  refused: RefusedEntry[];
  warnings: string[];
  /** Set when the whole file is unusable; `servers` and `refused` are then empty. */
  error?: LayerProblem;
}
