import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type {
  Client,
  Connection,
  ConnectionOptions as TemporalConnectionOptions,
  WorkflowHandle,
  WorkflowUpdateHandle,
} from '@temporalio/client';
import {
  SearchAttributeType,
  WorkflowNotFoundError,
  defineSearchAttributeKey,
  type DataConverter,
} from '@temporalio/common';
import {
  DEFAULT_DATA_DIR,
  DEFAULT_TASK_QUEUE,
  DataDirEntry,
  END_TURN_DETACH_UPDATE_ID,
  END_TURN_UPDATE_ID,
  MAX_END_SESSION_QUEUES,
  SESSION_ID_PATTERN,
  SESSION_ID_SEARCH_ATTRIBUTE,
  WorkflowType,
  agentIdProblem,
  endSessionWorkflowId,
  refsProofText,
  type CallOutcome,
  type ConfigRefs,
  type CallRequest,
  type EndTurnOptions,
  type InputAnswer,
  type InputAnswerReceipt,
  type InputRequest,
  type SessionEnd,
  type ToolInfo,
  type TurnInput,
  type TurnLimits,
  type TurnResult,
  type TurnStart,
  type TurnStarted,
  type TurnStatus,
} from '../contract/index.js';
// Types only: the workflow code (and @temporalio/workflow) is not loaded by clients, which start
// `durable-mcp run` and every other one-shot command noticeably faster.
import type { agentTurn } from '../workflows/agentTurn.js';
import type { dmcpEndSession } from '../workflows/session.js';
import {
  callToolUpdate as callToolDef,
  cancelCallUpdate as cancelCallDef,
  endTurnUpdate as endTurnDef,
  endTurnWithOptionsUpdate as endTurnWithOptionsDef,
  turnStartedUpdate as turnStartedDef,
} from '../workflows/definitions.js';
import { cancelledBeforeSentOutcome } from '../workflows/failures.js';
import { turnTaskTimeoutMs } from '../workflows/activityOptions.js';
import { turnStaticDetails, turnSummary } from '../workflows/details.js';
import { findCause } from './failures.js';
import { answerWhileRunning, pendingInputsOf, sendAnswer, type CallInputOptions } from './inputs.js';
// Not the shaping index: its token counter loads a tokenizer that most commands never use.
import { DEFAULT_SHAPE_LIMITS, type ShapeLimits } from '../shaping/limits.js';
import type { ModelView } from '../shaping/index.js';
import { createDataConverter } from '../payloads/dataConverter.js';
import { buildTranscript, type Transcript } from './transcript.js';
import { temporalClient } from './temporalClient.js';

const { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError } = temporalClient;

export type { CallInputOptions, InputContext, InputHandler } from './inputs.js';
export type { InputAnswer, InputAnswerReceipt, InputRequest } from '../contract/index.js';

/** The `DmcpSessionId` search attribute every turn carries: list a session's turns with it. */
export const sessionIdKey = defineSearchAttributeKey(SESSION_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);

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
   * layer only with that proof. Default: `./.data/turn.key` (the default data dir) when it exists;
   * without a key those references are refused by the worker, with a status warning.
   */
  turnKey?: Buffer;
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
  /** Where the default data converter finds the payload store (default `./.data`, as the worker's DMCP_DATA_DIR). */
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
  /** See {@link TurnClientOptions.turnKey}; default: `turn.key` under `dataDir` when it exists. */
  turnKey?: Buffer;
  /** See {@link TurnClientOptions.secrets}. */
  secrets?: Record<string, string>;
  /** See {@link TurnClientOptions.maxCallsInFlight}. */
  maxCallsInFlight?: number;
}

/**
 * A turn start that found its turn's workflow ID taken by a run this client did not start (another
 * caller of Temporal started it first): the client never adopts such a run, whose servers and tool
 * list are not the turn's. Names the session and the IDs; the API answers it as a taken turn (409).
 */
export class TurnIdTakenError extends WorkflowExecutionAlreadyStartedError {
  override name = 'TurnIdTakenError';

  constructor(
    sessionId: string,
    readonly takenIds: string[],
    hint: string,
  ) {
    super(
      `session ${JSON.stringify(sessionId)}: turn ID${takenIds.length > 1 ? 's' : ''} ${takenIds.join(', ')} ${takenIds.length > 1 ? 'are' : 'is'} taken by runs not started by this client (another caller of Temporal started them); ${hint}`,
      takenIds[takenIds.length - 1]!,
      WorkflowType.agentTurn,
    );
  }
}

/**
 * How many turn numbers a start moves past when their IDs are taken (closed turns visibility did
 * not count yet, or runs another caller started) before it gives up.
 */
const MAX_TURN_NUMBER_MOVES = 5;

/** A turn or call that would put the value of a secret variable into history; names the variable, never the value. */
export class SecretInInputError extends Error {
  override name = 'SecretInInputError';
}

/** Shorter values would match ordinary text (the worker's scrubbing uses the same bound). */
const MIN_SECRET_LENGTH = 4;

/** Every string in a value (object keys included), with where it sits. */
function stringsIn(value: unknown, where: string, out: [string, string][] = []): [string, string][] {
  if (typeof value === 'string') out.push([where, value]);
  else if (Array.isArray(value)) value.forEach((v, i) => stringsIn(v, `${where}[${i}]`, out));
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.push([where, k]);
      stringsIn(v, `${where}.${k}`, out);
    }
  }
  return out;
}

/** Refuses input holding a secret value: workflow input and Update arguments are recorded as given. */
function refuseSecrets(secrets: Record<string, string> | undefined, parts: [string, unknown][]): void {
  if (!secrets) return;
  const known = Object.entries(secrets).filter(([, v]) => typeof v === 'string' && v.length >= MIN_SECRET_LENGTH);
  if (known.length === 0) return;
  for (const [label, value] of parts) {
    for (const [where, text] of stringsIn(value, label)) {
      const hit = known.find(([, secret]) => text.includes(secret));
      if (hit) {
        throw new SecretInInputError(
          `${where} contains the value of the secret variable ${hit[0]}; it would be recorded in workflow history. ` +
            'Give secrets to servers on the worker instead ("envFrom" or "bearerTokenEnv" in a config file, with DMCP_MCP_ENV)',
        );
      }
    }
  }
}

/** Reads a turn key file (64 hex digits); undefined when there is none. */
async function readTurnKeyFile(file: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`${file} does not hold a turn key (64 hex digits)`);
  return Buffer.from(text, 'hex');
}

/** What the Temporal UI shows for a turn from its start: names only (see workflows/details.ts). */
function turnMetadata(input: TurnInput, batch?: CallRequest[][]): { staticSummary: string; staticDetails: string } {
  return {
    staticSummary: turnSummary(input.sessionId, input.refs),
    staticDetails: turnStaticDetails(input.sessionId, input.refs, batch?.flat().length),
  };
}

/** `ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW`: the run was made by the workflow continuing as new (not a retry or cron run). */
const CONTINUED_BY_WORKFLOW = 1;

/** Session IDs become part of workflow IDs and visibility queries: keep them to a safe alphabet. */
export const SESSION_ID_RE = SESSION_ID_PATTERN;

/** Starts and drives turns. */
export class TurnClient {
  /** The Temporal client the turns are started and driven with. */
  readonly client: Client;
  /** The shared task queue turns start on. */
  readonly taskQueue: string;
  private readonly turnIdleMs?: number;
  private readonly inputTimeoutMs?: number;
  private readonly legacyInputTimeoutMs?: number;
  private readonly shapeLimits: ShapeLimits;
  private readonly secrets?: Record<string, string>;
  private readonly callQueue: CallQueueOptions;
  private turnKey?: Promise<Buffer | undefined>;
  private readonly turnKeyOption?: Buffer;
  private nonceKey?: Promise<Buffer>;

  constructor(options: TurnClientOptions) {
    this.client = options.client;
    this.taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
    this.turnIdleMs = options.turnIdleMs;
    this.inputTimeoutMs = options.inputTimeoutMs;
    this.legacyInputTimeoutMs = options.legacyInputTimeoutMs;
    this.shapeLimits = options.shapeLimits ?? DEFAULT_SHAPE_LIMITS;
    this.secrets = options.secrets;
    this.callQueue = { maxCallsInFlight: options.maxCallsInFlight, onCallsInFlight: options.onCallsInFlight };
    this.turnKeyOption = options.turnKey;
  }

  /** The key that signs turn references: the option, else the default data dir's key file, read once. */
  private key(): Promise<Buffer | undefined> {
    this.turnKey ??= this.turnKeyOption
      ? Promise.resolve(this.turnKeyOption)
      : readTurnKeyFile(resolve(DEFAULT_DATA_DIR, DataDirEntry.turnKey));
    return this.turnKey;
  }

  /**
   * What signs the start nonces of this client's turns: derived from the turn key, so every process
   * of the operator (an API restarted between a start and its retry) makes the same nonce for a turn
   * ID; without a key, random for this client, so only its own retries attach.
   */
  private startNonceKey(): Promise<Buffer> {
    this.nonceKey ??= this.key().then((key) =>
      key ? createHmac('sha256', key).update('durable-mcp turn start nonce').digest() : randomBytes(32),
    );
    return this.nonceKey;
  }

  /**
   * Connects to Temporal with the project's data converter (see {@link ConnectOptions.dataConverter}):
   * a client without it cannot read the compressed payloads every worker writes.
   */
  static async connect(options: ConnectOptions): Promise<TurnClient> {
    const connection =
      options.connected ??
      (await temporalClient.Connection.connect({ ...options.connection, address: options.address }));
    const dataConverter =
      options.dataConverter ??
      createDataConverter({ payloadDir: join(resolve(options.dataDir ?? DEFAULT_DATA_DIR), DataDirEntry.payloads) });
    const client = new temporalClient.Client({ connection, namespace: options.namespace ?? 'default', dataConverter });
    const turnKey =
      options.turnKey ??
      (await readTurnKeyFile(join(resolve(options.dataDir ?? DEFAULT_DATA_DIR), DataDirEntry.turnKey)));
    return new TurnClient({
      client,
      taskQueue: options.taskQueue,
      turnIdleMs: options.turnIdleMs,
      inputTimeoutMs: options.inputTimeoutMs,
      legacyInputTimeoutMs: options.legacyInputTimeoutMs,
      shapeLimits: options.shapeLimits,
      turnKey,
      secrets: options.secrets,
      maxCallsInFlight: options.maxCallsInFlight,
    });
  }

  /** Closes the client's connection to Temporal (turns keep running on the workers). */
  async close(): Promise<void> {
    await this.client.connection.close();
  }

  /**
   * Starts an interactive turn; resolves once servers are reconciled and tools listed (one round
   * trip). A run already at the turn's ID is adopted only when this client started it (a retry);
   * one another caller started is never adopted: the start moves to the next turn number, or, for
   * a caller that named the turn, fails with {@link TurnIdTakenError}.
   */
  async startTurn(options: StartTurnOptions): Promise<Turn> {
    const taken: string[] = [];
    let next = options;
    for (let moves = 0; ; moves += 1) {
      const { input, workflowId } = await this.prepare(next);
      const operation = new WithStartWorkflowOperation<typeof agentTurn>(WorkflowType.agentTurn, {
        workflowId,
        taskQueue: this.taskQueue,
        args: [input],
        // A retrying caller attaches to the turn it already started instead of starting another.
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [{ key: sessionIdKey, value: options.sessionId }],
        workflowTaskTimeout: turnTaskTimeoutMs(input.limits),
        ...turnMetadata(input),
      });
      const start: TurnStarted | undefined = await this.client.workflow
        .executeUpdateWithStart(turnStartedDef, { startWorkflowOperation: operation })
        .catch((err: unknown) => {
          // A closed turn with this number exists (visibility lagged behind): take the next number,
          // unless the caller asked for this exact turn.
          if (options.turn !== undefined || !isAlreadyStarted(err)) throw err;
          return undefined;
        });
      if (start && start.startNonce === input.startNonce)
        return new Turn(
          this.client.workflow.getHandle(workflowId),
          start,
          this.shapeLimits,
          this.secrets,
          this.callQueue,
        );
      if (start) {
        // USE_EXISTING attached to a run whose input is not ours: its servers and tools are another caller's.
        taken.push(workflowId);
        if (options.turn !== undefined)
          throw new TurnIdTakenError(
            options.sessionId,
            taken,
            'start the turn under another number, or leave the number out to take the next free one',
          );
      }
      if (moves + 1 >= MAX_TURN_NUMBER_MOVES) {
        if (taken.length > 0)
          throw new TurnIdTakenError(
            options.sessionId,
            taken,
            `gave up after ${MAX_TURN_NUMBER_MOVES} turn numbers; end those runs (they are not the operator's) or use another session`,
          );
        throw new Error(
          `session ${JSON.stringify(options.sessionId)}: turn IDs up to ${workflowId} are all closed turns the session's turn count did not include; pass the turn number`,
        );
      }
      next = { ...options, turn: Number(/turn-(\d+)$/.exec(workflowId)?.[1] ?? 0) + 1 };
    }
  }

  /** Runs a batch turn: groups in order, calls of a group in parallel. */
  async runBatch(
    options: StartTurnOptions & { calls: CallRequest[][] } & Pick<CallInputOptions, 'onInput' | 'inputPollMs'>,
  ): Promise<TurnResult> {
    const handle = await this.startBatch(options);
    const result = handle.result();
    const { onInput } = options;
    if (!onInput) return result;
    const secrets = this.secrets;
    const answering = answerWhileRunning(handle, undefined, result, {
      inputPollMs: options.inputPollMs,
      onInput: async (asked, context) => {
        const answer = await onInput(asked, context);
        if (answer) refuseSecrets(secrets, [[`answer to ${JSON.stringify(asked.requestId)}`, answer]]);
        return answer;
      },
    });
    return Promise.race([result, answering.then(() => result)]);
  }

  /**
   * Starts a batch turn as a new run: an ID taken (a closed turn visibility did not count yet, or a
   * run another caller started) is never adopted; the next number is taken, unless the caller named one.
   */
  private async startBatch(
    options: StartTurnOptions & { calls: CallRequest[][] },
  ): Promise<WorkflowHandle<typeof agentTurn>> {
    let next = options;
    for (let moves = 1; ; moves += 1) {
      const { input, workflowId } = await this.prepare(next, options.calls);
      try {
        return await this.client.workflow.start<typeof agentTurn>(WorkflowType.agentTurn, {
          workflowId,
          taskQueue: this.taskQueue,
          args: [{ ...input, batch: options.calls }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [{ key: sessionIdKey, value: options.sessionId }],
          workflowTaskTimeout: turnTaskTimeoutMs(input.limits),
          ...turnMetadata(input, options.calls),
        });
      } catch (err) {
        if (options.turn !== undefined || !isAlreadyStarted(err) || moves >= MAX_TURN_NUMBER_MOVES) throw err;
      }
      next = { ...options, turn: Number(/turn-(\d+)$/.exec(workflowId)?.[1] ?? 0) + 1 };
    }
  }

  /** The latest status reported for a session (from its newest turn's history). */
  async getStatus(sessionId: string): Promise<{ turnId: string; status?: TurnStatus } | undefined> {
    const latest = await this.latestTurn(sessionId);
    if (!latest) return undefined;
    const t = await this.transcript(latest.workflowId);
    return { turnId: latest.workflowId, status: t.status };
  }

  /**
   * A turn rendered from its history alone. The turn is one run chain: the latest run at the ID and
   * the runs it continued as new from, read run by run and joined (status and tools from the first
   * run, the calls of every run). Other executions at the ID (a workflow that reused it, before or
   * after) are not the turn: they are left out and named in `otherRuns`.
   */
  async transcript(turnId: string): Promise<Transcript> {
    const converter = this.client.options.loadedDataConverter;
    const listed: { runId: string; start: number }[] = [];
    for await (const w of this.client.workflow.list({ query: `WorkflowId = '${turnId.replace(/'/g, "\\'")}'` })) {
      listed.push({ runId: w.runId, start: w.startTime.getTime() });
    }
    // Visibility can lag a just-started turn: then the latest run, as the service names it.
    const latest = listed.sort((a, b) => b.start - a.start)[0]?.runId;
    const parts: Transcript[] = [];
    const chain = new Set<string>();
    // Loaded here: only transcripts need it, and it costs one-shot commands their start-up.
    const { decodeHistoryPayloads } = await import('../payloads/decodeHistory.js');
    for (let runId = latest; ; ) {
      const history = await this.client.workflow.getHandle(turnId, runId).fetchHistory();
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      chain.add(runId ?? started?.originalExecutionRunId ?? '');
      await decodeHistoryPayloads(history, {
        codecs: converter.payloadCodecs,
        externalStorage: converter.externalStorage,
      });
      parts.unshift(buildTranscript(turnId, history, converter.payloadConverter));
      // Only a continue-as-new of the workflow itself links runs of one turn; a cron run or a retry
      // attempt is a new start with its caller's input.
      const previous = started?.continuedExecutionRunId;
      if (!previous || started.initiator !== CONTINUED_BY_WORKFLOW || chain.has(previous)) break;
      runId = previous;
    }
    const [first, last] = [parts[0]!, parts[parts.length - 1]!];
    // A call retried after continue-as-new was answered from the record: it is the same call.
    const seen = new Set<string>();
    const calls = parts.flatMap((p) => p.calls).filter((c) => !seen.has(c.id) && seen.add(c.id));
    const otherRuns = listed.filter((r) => !chain.has(r.runId)).map((r) => r.runId);
    return {
      ...last,
      status: first.status,
      serversParagraph: first.serversParagraph,
      tools: first.tools,
      sessionId: first.sessionId,
      calls,
      ...(otherRuns.length > 0 ? { otherRuns } : {}),
    };
  }

  /**
   * Sends one call to a running interactive turn by its ID, from a process that did not start it
   * (the HTTP API): the same secrets check and Update ID as {@link Turn.callTool}, so a retry with
   * the same call ID returns the recorded outcome. Resolves once the turn has accepted the call (or
   * found it recorded), with a handle whose `result()` is the outcome: the caller can read history
   * while the tool runs, or answer before it finishes.
   */
  startCall(turnId: string, request: CallRequest): Promise<WorkflowUpdateHandle<CallOutcome>> {
    try {
      refuseSecrets(this.secrets, [
        [`call ${JSON.stringify(request.id)} (${request.name}) arguments`, request.arguments ?? {}],
      ]);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return this.client.workflow
      .getHandle<typeof agentTurn>(turnId)
      .startUpdate(callToolDef, { args: [request], updateId: request.id, waitForStage: 'ACCEPTED' });
  }

  /** The input requests of a turn's running calls that wait for an answer, oldest first. */
  pendingInputs(turnId: string): Promise<InputRequest[]> {
    return pendingInputsOf(this.client.workflow.getHandle<typeof agentTurn>(turnId));
  }

  /**
   * Answers one open input request. The turn refuses an answer that does not fit the requested
   * schema, naming the field (`RefusalType.inputAnswer`), and the question stays open; a second
   * answer to the same request returns the first one's receipt.
   */
  answerInput(turnId: string, requestId: string, answer: InputAnswer): Promise<InputAnswerReceipt> {
    try {
      refuseSecrets(this.secrets, [[`answer to ${JSON.stringify(requestId)}`, answer]]);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return sendAnswer(this.client.workflow.getHandle<typeof agentTurn>(turnId), requestId, answer);
  }

  /** {@link Turn.cancelCall} for a turn known by its ID. */
  cancelCall(turnId: string, callId: string): Promise<boolean> {
    return this.client.workflow.getHandle<typeof agentTurn>(turnId).executeUpdate(cancelCallDef, { args: [callId] });
  }

  /** {@link Turn.end} for a turn known by its ID. */
  async endTurn(turnId: string, options?: EndTurnOptions): Promise<TurnResult> {
    const handle = this.client.workflow.getHandle<typeof agentTurn>(turnId);
    await sendEndTurn(handle, options);
    return handle.result();
  }

  /**
   * Ends a session at once, so no server is left waiting on an idle client: its open turns end
   * (each stops the session's servers once its calls in flight are done), and every worker the
   * session's turns ran on stops the servers it holds for it: stdio process groups stopped,
   * Streamable HTTP sessions ended with `DELETE`, streams closed. A server with a call in flight
   * stops when that call ends. The next turn of the session starts fresh servers. Ending a session
   * that holds nothing (ended already, or its workers are gone) does nothing and is not an error.
   */
  async endSession(sessionId: string): Promise<SessionEnd> {
    checkSessionId(sessionId);
    const open = new Set<string>();
    const byQueue = new Map<string, number>();
    for await (const w of this.client.workflow.list({ query: `${SESSION_ID_SEARCH_ATTRIBUTE} = '${sessionId}'` })) {
      if (w.status.name === 'RUNNING') open.add(w.workflowId);
      const queue = w.memo?.workerQueue;
      if (typeof queue === 'string') byQueue.set(queue, Math.max(byQueue.get(queue) ?? 0, w.startTime.getTime()));
    }
    const turnsEnded: string[] = [];
    for (const turnId of open) {
      try {
        await sendEndTurn(this.client.workflow.getHandle<typeof agentTurn>(turnId), { endSession: true });
        turnsEnded.push(turnId);
      } catch (err) {
        // It closed after it was listed: it has nothing more to end.
        if (!findCause(err, (e): e is WorkflowNotFoundError => e instanceof WorkflowNotFoundError)) throw err;
      }
    }
    const workerQueues = [...byQueue.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([q]) => q)
      .slice(0, MAX_END_SESSION_QUEUES);
    if (workerQueues.length === 0) return { sessionId, turnsEnded, workers: 0, servers: 0 };
    const handle = await this.client.workflow.start<typeof dmcpEndSession>(WorkflowType.endSession, {
      // A fresh ID each time, never adopted: another caller of Temporal could start a predictable one
      // first, with no queues to end. Two callers ending the session at once each end it; the second finds less.
      workflowId: endSessionWorkflowId(sessionId, randomUUID()),
      taskQueue: this.taskQueue,
      args: [{ sessionId, workerQueues }],
      workflowIdConflictPolicy: 'FAIL',
      // Bounded: without a worker on the shared queue nothing would ever run it.
      workflowExecutionTimeout: '5m',
    });
    return { sessionId, turnsEnded, ...(await handle.result()) };
  }

  /** Turn IDs of a session, oldest first. */
  async sessionTurns(sessionId: string): Promise<string[]> {
    checkSessionId(sessionId);
    const first = new Map<string, number>();
    for await (const w of this.client.workflow.list({ query: `${SESSION_ID_SEARCH_ATTRIBUTE} = '${sessionId}'` })) {
      const start = w.startTime.getTime();
      if (!first.has(w.workflowId) || start < first.get(w.workflowId)!) first.set(w.workflowId, start);
    }
    return [...first.entries()].sort((a, b) => a[1] - b[1]).map(([id]) => id);
  }

  /**
   * The turn's input: references made absolute, refused when they (or the batch's arguments) hold a
   * secret value, and signed with the turn key so the worker knows its operator chose them.
   */
  private async prepare(
    options: StartTurnOptions,
    calls?: CallRequest[][],
  ): Promise<{ input: TurnInput; workflowId: string }> {
    checkSessionId(options.sessionId);
    const workspace = resolve(options.workspace ?? process.cwd());
    const refs: ConfigRefs = {
      workspace,
      mcpConfigFiles: (options.servers?.mcpConfigFiles ?? []).map((f) => resolve(f)),
      inlineSpecs: options.servers?.inlineSpecs ?? [],
      ...(options.servers?.plugins?.length ? { plugins: options.servers.plugins.map((p) => resolve(p)) } : {}),
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
    };
    if (options.agent !== undefined) {
      const bad = agentIdProblem(options.agent);
      if (bad) throw new Error(bad);
    }
    refuseSecrets(this.secrets, [
      ['workspace', refs.workspace],
      ...refs.inlineSpecs.map((s, i): [string, unknown] => [`--mcp #${i + 1}`, s]),
      ...refs.mcpConfigFiles.map((f, i): [string, unknown] => [`--mcp-config #${i + 1}`, f]),
      ...(refs.plugins ?? []).map((p, i): [string, unknown] => [`plugin #${i + 1}`, p]),
      ...(calls ?? [])
        .flat()
        .map((c): [string, unknown] => [`call ${JSON.stringify(c.id)} (${c.name}) arguments`, c.arguments ?? {}]),
    ]);
    const key = options.unsigned ? undefined : await this.key();
    if (key) refs.proof = createHmac('sha256', key).update(refsProofText(options.sessionId, refs)).digest('hex');
    const { latest, turns } = await this.sessionSummary(options.sessionId);
    const turn = options.turn ?? turns + 1;
    const workflowId = `${options.sessionId}/turn-${turn}`;
    const preferred = latest?.memo?.workerQueue;
    const idleMs = options.limits?.idleMs ?? this.turnIdleMs;
    const inputTimeoutMs = options.limits?.inputTimeoutMs ?? this.inputTimeoutMs;
    const legacyInputTimeoutMs = options.limits?.legacyInputTimeoutMs ?? this.legacyInputTimeoutMs;
    const limits = {
      ...options.limits,
      ...(idleMs !== undefined ? { idleMs } : {}),
      ...(inputTimeoutMs !== undefined ? { inputTimeoutMs } : {}),
      ...(legacyInputTimeoutMs !== undefined ? { legacyInputTimeoutMs } : {}),
    };
    return {
      workflowId,
      input: {
        sessionId: options.sessionId,
        refs,
        startNonce: createHmac('sha256', await this.startNonceKey())
          .update(workflowId)
          .digest('hex'),
        ...(typeof preferred === 'string' ? { preferredWorkerQueue: preferred } : {}),
        ...(Object.keys(limits).length > 0 ? { limits } : {}),
        ...(options.allowedTools !== undefined ? { allowedTools: options.allowedTools } : {}),
        ...(options.disallowedTools?.length ? { disallowedTools: options.disallowedTools } : {}),
        ...((options.offerWorkspaceRoot ?? options.workspace !== undefined) ? { offerWorkspaceRoot: true } : {}),
        ...(options.endSession === true ? { endSession: true } : {}),
      },
    };
  }

  private async latestTurn(
    sessionId: string,
  ): Promise<{ workflowId: string; memo?: Record<string, unknown> } | undefined> {
    return (await this.sessionSummary(sessionId)).latest;
  }

  /**
   * The session's newest run (its memo names the worker holding the servers) and how many turns it
   * has: distinct workflow IDs, since a turn that continued as new has several runs.
   */
  private async sessionSummary(
    sessionId: string,
  ): Promise<{ latest?: { workflowId: string; memo?: Record<string, unknown> }; turns: number }> {
    checkSessionId(sessionId);
    let latest: { workflowId: string; start: number; memo?: Record<string, unknown> } | undefined;
    const ids = new Set<string>();
    for await (const w of this.client.workflow.list({ query: `${SESSION_ID_SEARCH_ATTRIBUTE} = '${sessionId}'` })) {
      ids.add(w.workflowId);
      if (!latest || w.startTime.getTime() > latest.start)
        latest = { workflowId: w.workflowId, start: w.startTime.getTime(), memo: w.memo };
    }
    return { latest, turns: ids.size };
  }
}

/** The server's default `history.maxInFlightUpdates`. */
const DEFAULT_MAX_CALLS_IN_FLIGHT = 10;

/** A call waiting for a slot: `resolve(true)` sends it, `resolve(false)` drops it unsent (cancelled). */
interface WaitingCall {
  id: string;
  resolve: (send: boolean) => void;
}

/** How a {@link Turn} bounds its calls in flight; see {@link TurnClientOptions.maxCallsInFlight}. */
export interface CallQueueOptions {
  /** Calls sent to the server at once (default 10); the rest wait in order. */
  maxCallsInFlight?: number;
  /** Called with the number of calls in flight each time it changes. */
  onCallsInFlight?: (inFlight: number) => void;
}

/** One running interactive turn. */
export class Turn implements TurnStart {
  /** The turn's workflow ID, `<sessionId>/turn-<n>`. */
  readonly turnId: string;
  /** The task queue of the worker that holds the session's servers (its calls run there). */
  readonly workerQueue: string;
  /** Each server's state, tools and warnings, as reconciled when the turn started. */
  readonly status: TurnStatus;
  /** The turn's tool list, frozen for the turn (public names `mcp__<server>__<tool>`). */
  readonly tools: ToolInfo[];
  /** What the model should know about its servers this turn (put it in the system prompt). */
  readonly serversParagraph: string;
  private readonly maxCallsInFlight: number;
  private readonly onCallsInFlight?: (inFlight: number) => void;
  private callsInFlight = 0;
  private readonly waitingCalls: WaitingCall[] = [];
  /** IDs of the calls sent and not yet answered, with how many of each (a retried ID counts twice). */
  private readonly sentCalls = new Map<string, number>();

  constructor(
    readonly handle: WorkflowHandle<typeof agentTurn>,
    start: TurnStart,
    private readonly shapeLimits: ShapeLimits = DEFAULT_SHAPE_LIMITS,
    /** Secret values (by variable name) that call arguments must not hold; see {@link TurnClientOptions.secrets}. */
    private readonly secrets?: Record<string, string>,
    callQueue: CallQueueOptions = {},
  ) {
    this.maxCallsInFlight = callQueue.maxCallsInFlight ?? DEFAULT_MAX_CALLS_IN_FLIGHT;
    if (!(this.maxCallsInFlight >= 1))
      throw new Error(`maxCallsInFlight must be at least 1 (got ${this.maxCallsInFlight})`);
    this.onCallsInFlight = callQueue.onCallsInFlight;
    this.turnId = start.turnId;
    this.workerQueue = start.workerQueue;
    this.status = start.status;
    this.tools = start.tools;
    this.serversParagraph = start.serversParagraph;
  }

  /**
   * Runs one tool call. The update ID is the call's `id` (the model's tool-call ID), so sending
   * the same call again returns the recorded outcome instead of running the tool twice.
   */
  callTool(request: CallRequest, options: CallInputOptions = {}): Promise<CallOutcome> {
    try {
      refuseSecrets(this.secrets, [
        [`call ${JSON.stringify(request.id)} (${request.name}) arguments`, request.arguments ?? {}],
      ]);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return this.withCallSlot(request.id, () => {
      const running = this.handle.executeUpdate(callToolDef, { args: [request], updateId: request.id });
      const { onInput } = options;
      if (!onInput) return running;
      const secrets = this.secrets;
      const answering = answerWhileRunning(this.handle, request.id, running, {
        ...options,
        onInput: async (asked, context) => {
          const answer = await onInput(asked, context);
          if (answer) refuseSecrets(secrets, [[`answer to ${JSON.stringify(asked.requestId)}`, answer]]);
          return answer;
        },
      });
      // A failing handler fails the call here (the turn keeps its question open for another answer).
      return Promise.race([running, answering.then(() => running)]);
    });
  }

  /** The input requests of this turn's running calls that wait for an answer. */
  pendingInputs(): Promise<InputRequest[]> {
    return pendingInputsOf(this.handle);
  }

  /** See {@link TurnClient.answerInput}. */
  answerInput(requestId: string, answer: InputAnswer): Promise<InputAnswerReceipt> {
    try {
      refuseSecrets(this.secrets, [[`answer to ${JSON.stringify(requestId)}`, answer]]);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return sendAnswer(this.handle, requestId, answer);
  }

  /**
   * Runs `send` once fewer than `maxCallsInFlight` calls are in flight; later calls wait in order. A
   * finishing call hands its slot straight to the next waiting one, so the count never exceeds the
   * bound and a waiting call is never overtaken by a new one. A waiting call that is cancelled
   * leaves the queue without sending anything.
   */
  private async withCallSlot(id: string, send: () => Promise<CallOutcome>): Promise<CallOutcome> {
    if (this.callsInFlight < this.maxCallsInFlight) {
      this.callsInFlight += 1;
      this.onCallsInFlight?.(this.callsInFlight);
    } else if (!(await new Promise<boolean>((resolve) => this.waitingCalls.push({ id, resolve })))) {
      return cancelledBeforeSentOutcome(new Date().toISOString());
    }
    this.sentCalls.set(id, (this.sentCalls.get(id) ?? 0) + 1);
    try {
      return await send();
    } finally {
      const left = this.sentCalls.get(id)! - 1;
      if (left > 0) this.sentCalls.set(id, left);
      else this.sentCalls.delete(id);
      const next = this.waitingCalls.shift();
      if (next) {
        next.resolve(true);
      } else {
        this.callsInFlight -= 1;
        this.onCallsInFlight?.(this.callsInFlight);
      }
    }
  }

  /**
   * Runs a call and also renders its outcome for the model: text in `<toolOutput>`
   * under the token cap, images that fit, and a note for everything not shown. The full outcome
   * stays in history.
   */
  async callToolForModel(
    request: CallRequest,
    limits: ShapeLimits = this.shapeLimits,
    inputs: CallInputOptions = {},
  ): Promise<{ outcome: CallOutcome; model: ModelView }> {
    const outcome = await this.callTool(request, inputs);
    const { shapeForModel } = await import('../shaping/shapeResult.js');
    return { outcome, model: await shapeForModel(outcome, limits) };
  }

  /**
   * Cancels a call. One that is running: its activity is cancelled and the MCP request aborted, which
   * sends `notifications/cancelled` to the server. One still waiting here for a slot (beyond
   * `maxCallsInFlight`): it is never sent, and its `callTool` resolves with an error outcome of kind
   * `cancelled` saying the tool did not run (the turn's history has no record of it). Returns false
   * if no such call is waiting or running.
   */
  async cancelCall(id: string): Promise<boolean> {
    let dropped = 0;
    for (let i = this.waitingCalls.length - 1; i >= 0; i -= 1) {
      const waiting = this.waitingCalls[i]!;
      if (waiting.id !== id) continue;
      this.waitingCalls.splice(i, 1);
      waiting.resolve(false);
      dropped += 1;
    }
    if (dropped > 0 && !this.sentCalls.has(id)) return true;
    const running = await this.handle.executeUpdate(cancelCallDef, { args: [id] });
    return running || dropped > 0;
  }

  /**
   * Ends the turn and returns its result. With `{ endSession: true }` the session ends too: once
   * the turn's calls are done its worker stops the session's servers (see {@link TurnClient.endSession}).
   * With `{ detach: true }` calls that run as MCP tasks are not waited for: each is answered as
   * `detached` (its task goes on; a later turn takes it up with a call naming its `taskId`).
   */
  async end(options?: EndTurnOptions): Promise<TurnResult> {
    await sendEndTurn(this.handle, options);
    return this.handle.result();
  }
}

/**
 * The `endTurn` Update; without options exactly as before they existed. A detaching end has an
 * Update ID of its own: sent while a plain end waits for a task, it must not be taken for a retry.
 */
async function sendEndTurn(
  handle: WorkflowHandle<typeof agentTurn>,
  options: EndTurnOptions | undefined,
): Promise<void> {
  const endSession = options?.endSession === true ? { endSession: true } : {};
  if (options?.detach === true)
    await handle.executeUpdate(endTurnWithOptionsDef, {
      updateId: END_TURN_DETACH_UPDATE_ID,
      args: [{ ...endSession, detach: true }],
    });
  else if (options?.endSession === true)
    await handle.executeUpdate(endTurnWithOptionsDef, { updateId: END_TURN_UPDATE_ID, args: [endSession] });
  else await handle.executeUpdate(endTurnDef, { updateId: END_TURN_UPDATE_ID });
}

function checkSessionId(sessionId: string): void {
  if (!SESSION_ID_RE.test(sessionId)) {
    throw new Error(
      `invalid session ID ${JSON.stringify(sessionId)}: use letters, digits, ".", "_", ":" or "-" (at most 128)`,
    );
  }
}

function isAlreadyStarted(err: unknown): boolean {
  return (
    findCause(
      err,
      (e): e is InstanceType<typeof WorkflowExecutionAlreadyStartedError> =>
        e instanceof WorkflowExecutionAlreadyStartedError,
    ) !== undefined
  );
}
