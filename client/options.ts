/** The options of {@link TurnClient}: how to reach Temporal, and what a turn is started with. */
import type { Client, Connection, ConnectionOptions as TemporalConnectionOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { TurnLimits } from '../contract/index.js';
import type { ShapeLimits } from '../shaping/limits.js';
import type { StepTextStore } from '../payloads/streamLog.js';

/** What a turn needs to know about its servers: references only, resolved on the worker. */
export interface TurnServers {
  /** `--mcp-config` files, in order (made absolute here). */
  mcpConfigFiles?: string[];
  /** `--mcp 'name:command args'` specs, in order. */
  inlineSpecs?: string[];
  /** Plugin folders (each may hold `.mcp.json` and `plugin.json`), made absolute here. Untrusted layers. */
  plugins?: string[];
}

/** Options of {@link TurnClient.startTurn} and {@link TurnClient.runBatch}. */
export interface StartTurnOptions {
  /**
   * The session the turn belongs to (it keeps its servers across turns): letters, digits and
   * `._:-`, at most 128 characters, starting with a letter or digit ({@link SESSION_ID_RE}). The
   * turn's workflow ID is `<sessionId>/turn-<n>`.
   */
  sessionId: string;
  /**
   * The turn's workspace (default: the current directory): where the workspace layer
   * (`.agents/mcp.json`) is read, where workspace servers start, what a sandboxed server may write.
   */
  workspace?: string;
  /**
   * Offer the workspace to the servers as their MCP root, where the worker's operator allows it
   * (DMCP_WORKSPACE_ROOTS) and the entry does not say `"roots": false`. Default: true when
   * `workspace` is given, false when it defaults to the current directory; a server such as
   * server-filesystem replaces the directories it was started with by the roots it is offered.
   */
  offerWorkspaceRoot?: boolean;
  /**
   * End the session with this turn: once its calls are done (batch run, end, idle), the worker
   * stops the session's servers and ends its remote sessions instead of keeping them for a next
   * turn. For a session made for one turn, as `durable-mcp run` makes one. Default: false.
   */
  endSession?: boolean;
  /** The turn's MCP servers, as references the worker resolves (default: only the worker's own layers). */
  servers?: TurnServers;
  /**
   * The agent this turn runs as: the servers granted to it on the shelf (`durable-mcp mcp grant`)
   * join the turn. Signed with the other references; a worker honours it only with a valid proof.
   */
  agent?: string;
  /**
   * Timeouts and bounds of this turn: tool timeout, heartbeat timeout, schedule-to-start, idle end,
   * calls before continue-as-new (each optional, in milliseconds or calls; the workflow refuses a
   * value out of its range). `idleMs` here wins over the client's `turnIdleMs`.
   */
  limits?: TurnLimits;
  /**
   * Allowed-tools matchers on public tool names (`mcp__github__*`, `mcp__docs__search`, `mcp__*`).
   * They only narrow what the worker's operator allows; tools outside are not listed and a call to
   * one is refused. Checked by the worker: a bad matcher fails the turn, naming it.
   */
  allowedTools?: string[];
  /** Matchers of tools this turn refuses, on top of the operator's. */
  disallowedTools?: string[];
  /**
   * Turn number; default: one more than the session's turns so far (read from visibility, which
   * can lag). A caller that must not start a turn twice when it retries passes the number itself:
   * the retry attaches to the turn when this client, or another with the same turn key, started it,
   * and fails with {@link TurnIdTakenError} when another caller of Temporal did.
   */
  turn?: number;
  /**
   * Send the references without the turn key's proof, so the worker treats them as any caller's
   * (it then honours none of inline specs, config files, plugins or the workspace layer). For
   * processes whose callers are not the operator, such as the HTTP API for references its
   * operator did not allow.
   */
  unsigned?: boolean;
}

/** Options of the {@link TurnClient} constructor, for a caller that has its own Temporal `Client`. */
export interface TurnClientOptions {
  /**
   * A Temporal client on the workers' namespace, built with their data converter (see
   * {@link ConnectOptions.dataConverter}); {@link TurnClient.connect} builds one for you.
   */
  client: Client;
  /** The shared task queue (default `durable-mcp`). */
  taskQueue?: string;
  /** How long an interactive turn waits for its next call before ending itself (default: the worker's 30 min). */
  turnIdleMs?: number;
  /**
   * How long a call waits for the answers to its input requests, for turns whose limits set no
   * `inputTimeoutMs` (default: the workflow's 24 h). The CLI and the HTTP API pass `DMCP_INPUT_TIMEOUT`.
   */
  inputTimeoutMs?: number;
  /**
   * How long one attempt of a call to a 2025-era server waits in all for a person's answers, for
   * turns whose limits set no `legacyInputTimeoutMs` (default: the workflow's 10 min). The CLI and
   * the HTTP API pass `DMCP_LEGACY_INPUT_TIMEOUT`.
   */
  legacyInputTimeoutMs?: number;
  /** What `callToolForModel` renders by default (default: the documented shaping limits). */
  shapeLimits?: ShapeLimits;
  /**
   * The operator's turn key (the workers' `<DMCP_DATA_DIR>/turn.key`). The client signs each turn's
   * references with it, and workers honour inline specs, config files, plugins and the workspace
   * layer only with that proof. Default: `turn.key` in {@link TurnClientOptions.dataDir}, read once.
   * Without a key, a turn that names such references is refused before it starts, naming the fix
   * (unless it is started `unsigned`).
   */
  turnKey?: Buffer;
  /** The workers' data dir (their `DMCP_DATA_DIR`), where the turn key is found. Default: `./.data`. */
  dataDir?: string;
  /**
   * Secret values of the caller's environment, by variable name. A turn whose references, or a call
   * whose arguments, contain one is refused before anything is sent: history would keep the value.
   * The CLI passes every secret variable of its environment (see `isSecretName`).
   */
  secrets?: Record<string, string>;
  /**
   * Calls of one turn sent to the server at once; more wait here, in order, until one returns.
   * Every call is an Update, and the server rejects Updates beyond its per-workflow limit
   * (`history.maxInFlightUpdates`, 10 by default), which the SDK then retries with backoff: queueing
   * here keeps a burst of parallel calls at full speed. Default 10; raise it to the server's limit
   * (the embedded dev server allows more).
   */
  maxCallsInFlight?: number;
  /** Called with the number of a turn's calls in flight each time it changes (instrumentation). */
  onCallsInFlight?: (inFlight: number) => void;
  /**
   * Where model steps log their text as it is produced, which {@link TurnClient.events} streams:
   * the workers' payload store. Default: the data dir's (`stepTextStoreFor(settings)` names the S3
   * store when the workers use one).
   */
  stepText?: StepTextStore;
}

/** Options of {@link TurnClient.connect}. */
export interface ConnectOptions {
  /**
   * The Temporal frontend as `host:port`, e.g. `127.0.0.1:7233` for `durable-mcp dev`, or a
   * cluster's or Temporal Cloud's address (then give {@link ConnectOptions.connection} too).
   */
  address: string;
  /**
   * TLS, API key and gRPC metadata for a cluster or Temporal Cloud (the CLI builds them from
   * TEMPORAL_* variables and TOML profiles); default: plaintext, as to a dev server.
   */
  connection?: Pick<TemporalConnectionOptions, 'tls' | 'apiKey' | 'metadata'>;
  /**
   * A connection already open to `address` (e.g. the one that checked a server answers), used
   * instead of opening another; {@link TurnClient.close} closes it.
   */
  connected?: Connection;
  /** The Temporal namespace the workers poll (default `default`, as `durable-mcp dev` uses). */
  namespace?: string;
  /** The shared task queue (default `durable-mcp`). */
  taskQueue?: string;
  /**
   * The workers' data converter. Default: the project's own (compression, and the payload store
   * under `dataDir`), so compressed and externally stored payloads read back without setup; pass
   * `dataConverterFor(loadSettings(process.env))` to share the workers' encryption key as well.
   */
  dataConverter?: DataConverter;
  /** The workers' data dir (their `DMCP_DATA_DIR`): the turn key and the payload store. Default: `./.data`. */
  dataDir?: string;
  /**
   * How long an interactive turn waits for its next call before ending itself, in milliseconds, for
   * turns whose {@link StartTurnOptions.limits} set no `idleMs`. Default: the workflow's 30 min.
   * The CLI and the HTTP API pass `DMCP_TURN_IDLE` here.
   */
  turnIdleMs?: number;
  /** See {@link TurnClientOptions.inputTimeoutMs}. */
  inputTimeoutMs?: number;
  /** See {@link TurnClientOptions.legacyInputTimeoutMs}. */
  legacyInputTimeoutMs?: number;
  /** What {@link Turn.callToolForModel} renders by default: token cap, image limits (default: the documented shaping limits). */
  shapeLimits?: ShapeLimits;
  /** See {@link TurnClientOptions.turnKey}; default: `turn.key` under `dataDir`. */
  turnKey?: Buffer;
  /** See {@link TurnClientOptions.secrets}. */
  secrets?: Record<string, string>;
  /** See {@link TurnClientOptions.maxCallsInFlight}. */
  maxCallsInFlight?: number;
  /** See {@link TurnClientOptions.stepText}. */
  stepText?: StepTextStore;
}
