/**
 * What workflow history holds and every process reads back: server status, the frozen tool list,
 * content blocks and call outcomes. Everything here crosses into history, so nothing here may ever
 * hold a secret, a header value or an env value. Types, and the tuples of the enums that schemas
 * also spell: this file imports nothing at run time.
 */
import type { CallHooks, ToolHooks } from './governance.js';

/** How a server is reached. */
export const TransportKind = ['stdio', 'http', 'sse'] as const;
export type TransportKind = (typeof TransportKind)[number];

/**
 * Which MCP wire era a server entry asks for: `auto` probes (`server/discover`) and falls back to
 * the 2025 `initialize` handshake, `legacy` never probes, `2026-07-28` accepts that revision only.
 */
export const ProtocolMode = ['auto', 'legacy', '2026-07-28'] as const;
export type ProtocolMode = (typeof ProtocolMode)[number];

/** The wire era a connected server landed on: `legacy` (2024-11-05 .. 2025-11-25) or `modern` (2026-07-28). */
export const ProtocolEra = ['legacy', 'modern'] as const;
export type ProtocolEra = (typeof ProtocolEra)[number];

/** Where a server entry came from. */
export const LayerKind = ['configDir', 'shelf', 'workspace', 'plugin', 'explicit', 'inline'] as const;
export type LayerKind = (typeof LayerKind)[number];

/** How a server of a turn is doing. */
export const ServerState = ['ready', 'degraded', 'failed', 'disabled', 'off'] as const;
export type ServerState = (typeof ServerState)[number];

/** One configured server as the turn saw it. */
export interface ServerStatus {
  name: string;
  layer: LayerKind;
  /** File path or `--mcp #N`; never a value from the environment. */
  source: string;
  transport: TransportKind;
  state: ServerState;
  /** Public tool names (`mcp__<server>__<tool>`). */
  tools: string[];
  /** Why the server failed: the cause, e.g. the end of its stderr, an HTTP status, a timeout. */
  error?: string;
  warnings: string[];
  /** Process ID of a stdio server, so operators (and tests) can see reuse across turns. */
  pid?: number;
  /** The wire era the server landed on, once it connected. */
  era?: ProtocolEra;
  /**
   * A shelf server that needs an OAuth login and has none that works: `wanted` (never logged in),
   * `expired` (the login expired or was revoked), `refresh_failed` (its refresh failed this time),
   * `in_progress` (a login was started and not finished), or, on a server that is still connected,
   * `insufficient_scope` (a request was refused with 403 `insufficient_scope`: the login wants more
   * access, and a warning says which scope and what to run), or `moved` (its protected resource
   * metadata names another authorization server than the login's: a login there is needed).
   * `error` says what to do.
   */
  login?: LoginProblemKind;
}

/** Why a shelf server's OAuth login does not work (see {@link ServerStatus.login}). */
export const LoginProblemKind = [
  'wanted',
  'expired',
  'refresh_failed',
  'in_progress',
  'insufficient_scope',
  'moved',
] as const;
export type LoginProblemKind = (typeof LoginProblemKind)[number];

export interface TurnStatus {
  /** `off` when DMCP_MCP=false. */
  mcp: 'on' | 'off';
  servers: ServerStatus[];
  /** Warnings that belong to no single server (a skipped config layer, for example). */
  warnings: string[];
  /** ISO time the status was produced on the worker. */
  reportedAt: string;
}

/** MCP tool annotations that drive the retry policy. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  idempotentHint?: boolean;
  destructiveHint?: boolean;
  openWorldHint?: boolean;
  title?: string;
}

/** One tool as frozen for a turn. */
export interface ToolInfo {
  /** Public name given to the model. */
  name: string;
  server: string;
  /** The tool's own name on its server. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: ToolAnnotations;
  /** The server's `toolTimeout` (ms), when its config sets one; the turn's default otherwise. */
  timeoutMs?: number;
  /**
   * The server config's retry override: `safe` retries a failed call even without a read-only or
   * idempotent hint, `never` runs it at most once even with one. Absent: the annotations decide.
   */
  retry?: 'safe' | 'never';
  /**
   * Why the turn's allowed-tools rules refuse this tool (the rule and where it is set). A refused
   * tool is never listed to the model; a call to it is refused as a bad request with this reason.
   */
  refusedBy?: string;
  /** The operator's hooks that apply to this tool; absent when none do. */
  hooks?: ToolHooks;
  /**
   * The operator's `permissions.ask` rule that holds each call of this tool until a person
   * approves it (its rule and where it is set); absent for a tool that runs without asking.
   */
  askedBy?: string;
  /**
   * The `permissions.approveWithEdits` rule that lets a person approve this tool's calls with
   * other arguments; absent: an approval runs the call as asked or not at all.
   */
  approvalEdits?: string;
  /**
   * The listing's `execution.taskSupport`, when the tool may run as an MCP task (absent: it may
   * not). `optional` for every tool of a 2026-07-28 server that offers the tasks extension.
   */
  taskSupport?: 'optional' | 'required';
  /** The server config's `"tasks": "prefer"`: a tool whose task support is optional runs as a task too. */
  tasks?: 'prefer';
}

/** Optional hints on a content block (MCP `annotations`). */
export interface ContentAnnotations {
  audience?: ('user' | 'assistant')[];
  priority?: number;
  lastModified?: string;
  [key: string]: unknown;
}

/** Fields every content block may carry besides its own. */
interface ContentBase {
  annotations?: ContentAnnotations;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The contents of a resource: text or base64 `blob`. */
export type ResourceContents =
  | { uri: string; mimeType?: string; text: string; _meta?: Record<string, unknown>; [key: string]: unknown }
  | { uri: string; mimeType?: string; blob: string; _meta?: Record<string, unknown>; [key: string]: unknown };

/**
 * An MCP content block as recorded in history: text, image, audio, resource link or embedded
 * resource, discriminated by `type`. Plain protocol shapes, spelled here rather than taken from an
 * MCP library, so the history format does not change with the library that produced it.
 */
export type ContentBlock =
  | (ContentBase & { type: 'text'; text: string })
  | (ContentBase & { type: 'image'; data: string; mimeType: string })
  | (ContentBase & { type: 'audio'; data: string; mimeType: string })
  | (ContentBase & {
      type: 'resource_link';
      uri: string;
      name: string;
      title?: string;
      description?: string;
      mimeType?: string;
      size?: number;
    })
  | (ContentBase & { type: 'resource'; resource: ResourceContents });

/**
 * Why a call has an error outcome: refused, its transport failed, its result is unknown, it timed
 * out, it was cancelled, or its turn ended without waiting for its MCP task (`detached`: the task
 * goes on, and {@link CallOutcome.detached} says where its result can be fetched).
 */
export const CallErrorKind = [
  'bad_request',
  'transport',
  'unknown_result',
  'timeout',
  'cancelled',
  'detached',
] as const;
export type CallErrorKind = (typeof CallErrorKind)[number];

/** What a call produced, as recorded in history. */
export interface CallOutcome {
  /** `ok`: the tool ran. `error`: bad request or transport failure; see `errorKind`. */
  status: 'ok' | 'error';
  content: ContentBlock[];
  /** The tool itself said it failed (MCP `isError`); a normal outcome. */
  isError: boolean;
  structuredContent?: Record<string, unknown>;
  errorKind?: CallErrorKind;
  /** Message for the model when `status` is `error`. */
  errorMessage?: string;
  startedAt: string;
  durationMs: number;
  attempts: number;
  /** What the operator's hooks decided and said about this call; absent when none ran. */
  hooks?: CallHooks;
  /** The arguments the call ran with because a person approved it with these instead of its own. */
  approvedArguments?: Record<string, unknown>;
  /** Set with `errorKind: "detached"`: the MCP task the call left running, and how to take it up. */
  detached?: DetachedTask;
}

/**
 * A call's MCP task that its turn stopped waiting for (`endTurn` with `detach`). The task goes on
 * on its server; a later turn takes it up with the call request in {@link DetachedTask.takeUp}.
 */
export interface DetachedTask {
  taskId: string;
  /** The server entry that runs the task. */
  server: string;
  /** The session the call ran in: a stdio server's task is reachable only from that session's later turns. */
  sessionId: string;
  /** Whether the server is remote (`http`, `sse`): its task is reachable from any session with the same server entry. */
  remote: boolean;
  /** When the server forgets the task (its creation plus its TTL), ISO; absent when it gave no TTL or keeps the task for good. */
  expiresAt?: string;
  /** The call request that takes the task up in a later turn (give it a new `id`). */
  takeUp: { name: string; taskId: string };
}
