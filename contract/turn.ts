/**
 * The inputs and results of the turn workflow and its activities, as recorded in history. Only
 * references cross into history (paths, specs, names), never a value read from the environment.
 */
import type { CallOutcome, ToolAnnotations, ToolInfo, TurnStatus } from './history.js';
import type { RefusedTool } from './governance.js';
import type { InputReply, InputRequest, InputRequiredOutcome } from './inputs.js';
import type { ModelStepRecord, ModelTurnInput } from './models.js';

/**
 * References the worker resolves into server entries. Only references cross into history:
 * paths and specs, never a value read from the environment. The worker decides which of them it
 * honours (its operator's settings); a turn only chooses among what the worker allows.
 */
export interface ConfigRefs {
  /** Absolute path of the turn's workspace: where workspace-layer servers start. */
  workspace: string;
  /** Absolute paths given with `--mcp-config`, in order. */
  mcpConfigFiles: string[];
  /** `--mcp 'name:command args...'` specs, in order. */
  inlineSpecs: string[];
  /** Absolute paths of plugin folders (each may hold `.mcp.json` and `plugin.json`), in order. */
  plugins?: string[];
  /**
   * The agent this turn runs as: its servers granted on the shelf join the turn as one more trusted
   * layer. Signed with the other references, so only a client holding the turn key can name one.
   */
  agent?: string;
  /**
   * Proof that the worker's operator chose these references: hex HMAC-SHA256 of
   * {@link refsProofText} with the operator's turn key. Safe in history: it is bound to this session
   * and these references, so replaying it can only run the same references again.
   */
  proof?: string;
}

/**
 * The text a turn's proof signs: the session and every reference the turn chooses (all but the
 * proof itself), in a fixed order, so client and worker compute the same bytes.
 */
export function refsProofText(sessionId: string, refs: ConfigRefs): string {
  const v1 = [sessionId, refs.workspace, refs.mcpConfigFiles, refs.inlineSpecs, refs.plugins ?? []];
  // A turn without an agent signs exactly what it signed before agents existed, so turns started by
  // older clients keep their proofs.
  if (refs.agent === undefined) return JSON.stringify(['durable-mcp turn refs v1', ...v1]);
  return JSON.stringify(['durable-mcp turn refs v2', ...v1, refs.agent]);
}

/** What an agent ID may look like: it names the agent in grants, logs and the API's paths. */
export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;

/** Why `agent` cannot be an agent ID, or undefined when it can. */
export function agentIdProblem(agent: string): string | undefined {
  if (AGENT_ID_PATTERN.test(agent)) return undefined;
  return `agent ID ${JSON.stringify(agent.slice(0, 140))} is not valid: 1-128 characters, letters, digits and . _ : @ / -, starting with a letter or digit`;
}

/** One tool call as the model asked for it. `id` is the model's tool-call ID. */
export interface CallRequest {
  id: string;
  /** Public tool name (`mcp__<server>__<tool>`). */
  name: string;
  arguments?: Record<string, unknown>;
  /**
   * Take up this MCP task instead of calling the tool: a task an earlier call of `name` left running
   * when its turn ended with `detach`. The turn polls it and fetches its result, which becomes this
   * call's outcome; nothing is created. `arguments` are only shown to the hooks (the task has its own).
   */
  taskId?: string;
}

/** Timeouts and limits of a turn; every field has a default. */
export interface TurnLimits {
  /** Start-to-close of a call when the server sets no `toolTimeout` (default 60 s). */
  toolTimeoutMs?: number;
  /** Heartbeat timeout of a call: how fast a lost worker is noticed (default 10 s). */
  heartbeatTimeoutMs?: number;
  /** Schedule-to-start on the pinned worker queue before failing over (default 10 s). */
  scheduleToStartMs?: number;
  /** DMCP_TURN_IDLE: an interactive turn with no call for this long ends itself (default 30 min). */
  idleMs?: number;
  /**
   * An interactive turn continues as new after this many calls in one run (default 500), or
   * earlier when Temporal suggests it; Temporal allows 2,000 Updates per run.
   */
  continueAsNewAfterCalls?: number;
  /**
   * DMCP_INPUT_TIMEOUT: how long a call waits for the answers to its input requests before the
   * server is told they were cancelled (default 24 h). Nothing runs meanwhile.
   */
  inputTimeoutMs?: number;
  /**
   * DMCP_LEGACY_INPUT_TIMEOUT: how long one attempt of a call to a 2025-era server may wait in all
   * for a person to answer the questions it asks mid-call (default 10 min). The call's connection
   * stays open meanwhile; the wait does not count against the tool's timeout, and a question still
   * open at the limit is answered `cancel`.
   */
  legacyInputTimeoutMs?: number;
}

/** What a long turn carries into its next run (continue-as-new). */
export interface ContinuedTurn {
  start: TurnStart;
  /** Calls completed in earlier runs. */
  callsBefore: number;
  /** The latest calls, so a caller retrying one of them gets its outcome, not a second run. */
  recent: CallRecord[];
  /** IDs of every earlier call whose outcome is not carried: a retry of one is refused, never run. */
  earlierIds?: string[];
  /**
   * The first run of the turn's chain (`workflowInfo().firstExecutionRunId` of the run that
   * continued): a run accepts the continuation only when it is in that chain. Absent or another: refused.
   */
  firstRunId?: string;
}

export interface TurnInput {
  sessionId: string;
  refs: ConfigRefs;
  /** Batch mode: groups run in order, the calls of a group in parallel. Absent: interactive. */
  batch?: CallRequest[][];
  /** The worker queue of the session's previous turn, tried first. */
  preferredWorkerQueue?: string;
  limits?: TurnLimits;
  /**
   * Allowed-tools matchers of this turn (`mcp__github__*`, `mcp__docs__search`, `mcp__*`). They
   * only narrow what the worker's operator allows: a tool must match one of these and be allowed
   * by the operator's rules. Absent: the operator's rules alone.
   */
  allowedTools?: string[];
  /** Matchers of tools this turn refuses, on top of the operator's; a deny always wins. */
  disallowedTools?: string[];
  /**
   * The turn named its workspace explicitly: offer it to the servers as their MCP root (where the
   * worker's operator allows it). Absent: no root; the workspace still decides where the workspace
   * layer is read and what a sandboxed server may write.
   */
  offerWorkspaceRoot?: boolean;
  /**
   * End the session with the turn: once the turn's calls are done (batch run, `endTurn`, idle), its
   * worker stops the session's servers and closes its remote sessions, instead of keeping them for
   * the session's next turn until the idle stop.
   */
  endSession?: boolean;
  /** Set only by continue-as-new. */
  continued?: ContinuedTurn;
  /**
   * A value only the client starting the turn knows in advance: `turnStarted` echoes it, so the
   * client adopts a run at the turn's ID only when it started that run itself.
   */
  startNonce?: string;
  /**
   * Run a model loop: the turn asks the named model, runs the tool calls it asks for, and ends with
   * its answer. Calls from outside are taken meanwhile, as in any interactive turn.
   */
  model?: ModelTurnInput;
}

/** The argument of the `endTurn` Update (absent: end only the turn). */
export interface EndTurnOptions {
  /** End the session too, once the turn's calls are done (see {@link TurnInput.endSession}). */
  endSession?: boolean;
  /**
   * Do not wait for calls that run as MCP tasks: each is answered at once as `detached` (its task
   * goes on, not cancelled; the outcome says how a later turn takes it up). Other calls are still
   * waited for: a plain call holds its request open, and cannot outlive its turn.
   */
  detach?: boolean;
}

/** What the caller gets when a turn has started (update-with-start). */
export interface TurnStart {
  turnId: string;
  workerQueue: string;
  status: TurnStatus;
  tools: ToolInfo[];
  serversParagraph: string;
  /** Tools the allowed-tools rules refuse (never in `tools`), with the rule; absent when none. */
  refusedTools?: RefusedTool[];
}

/** What `turnStarted` answers: the turn's start, and the {@link TurnInput.startNonce} of the run's own input. */
export interface TurnStarted extends TurnStart {
  startNonce?: string;
}

export interface CallRecord {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  /** The task the call took up ({@link CallRequest.taskId}); absent for every other call. */
  taskId?: string;
  outcome: CallOutcome;
}

/**
 * What ended a turn: its batch ran, the caller ended it, or it sat idle; for a model turn, the
 * model's final answer, its step limit, or its deadline.
 */
export const TurnEndedBy = ['batch', 'endTurn', 'idle', 'answer', 'maxSteps', 'deadline'] as const;
export type TurnEndedBy = (typeof TurnEndedBy)[number];

export interface TurnResult {
  turnId: string;
  sessionId: string;
  workerQueue: string;
  endedBy: TurnEndedBy;
  /**
   * The calls of this run (the last one, for a turn that continued as new). An interactive run
   * keeps the newest 100; the transcript has every call.
   */
  calls: CallRecord[];
  /** Calls completed in earlier runs of a turn that continued as new. */
  callsBefore?: number;
  /** A model turn's model (its name in `models.json`). */
  model?: string;
  /** A model turn's answer: its last step's text. */
  answer?: string;
  /** A model turn's steps, in order; their calls are in `calls`. */
  modelSteps?: ModelStepRecord[];
  /** The conversation a session's next model turn continues (see {@link ModelTurnInput.conversation}). */
  conversation?: string;
}

/** What the `status` query returns while a turn runs. */
export interface TurnProgress {
  phase: 'starting' | 'ready' | 'ended';
  workerQueue?: string;
  status?: TurnStatus;
  callsDone: number;
  callsInFlight: number;
  /** A model turn's steps so far: each step's text, calls and tokens, as they finish. */
  modelSteps?: ModelStepRecord[];
  /** Input requests of running calls that wait for an answer, oldest first; absent when none. */
  pendingInputs?: InputRequest[];
}

// --- activities ---

export interface ReconcileInput {
  sessionId: string;
  /**
   * The first run of the turn's chain, as the workflow reports it (`firstExecutionRunId`): the worker
   * serves a session's servers only to the run chain that reconciled them, not to a later workflow
   * that reuses the turn's ID.
   */
  firstRunId: string;
  /** Config references only; the worker reads and resolves them. */
  refs: ConfigRefs;
  /**
   * The idle limit of the interactive turn that reconciles: the worker keeps the session's servers
   * at least this long after the turn's last call. Absent for batch turns.
   */
  turnIdleMs?: number;
  /** The turn's allowed-tools matchers, so the servers paragraph names only tools the model may call. */
  allowedTools?: string[];
  disallowedTools?: string[];
  /** See {@link TurnInput.offerWorkspaceRoot}. */
  offerWorkspaceRoot?: boolean;
}

export interface ReconcileResult {
  /** The unique queue of the worker that now holds the session's servers. */
  workerQueue: string;
  status: TurnStatus;
  /** The servers paragraph for the model. */
  serversParagraph: string;
  /**
   * Whether the worker that reconciled lets retry-safe calls run as local activities (its
   * DMCP_FAST_PATH). Recorded, so the workflow decides from history. Absent in turns recorded before.
   */
  fastPath?: boolean;
  /**
   * Whether the worker that reconciled lets a side-effecting call be sent for eager dispatch on the
   * shared queue (its DMCP_EAGER_CALLS). Recorded, like {@link fastPath}. Absent in turns recorded before.
   */
  eagerCalls?: boolean;
  /**
   * The servers any worker may call for this turn, by server name: remote servers that speak the
   * stateless 2026-07-28 revision, which need no session on the worker that holds the others.
   * Absent when none is (or the worker's DMCP_SHARED_CALLS is false).
   */
  shared?: Record<string, SharedServer>;
}

/**
 * A server any worker may call for a turn: `identity` seals the entry the reconciling worker
 * resolved (another worker calls it only when its own resolution seals the same); `grant` seals
 * that identity to the turn's run chain and the server's name, so no other turn can use it.
 */
export interface SharedServer {
  identity: string;
  grant: string;
}

export interface ListToolsInput {
  sessionId: string;
  /** The turn's own allowed-tools matchers (see {@link TurnInput.allowedTools}). */
  allowedTools?: string[];
  disallowedTools?: string[];
}

export interface CallToolInput {
  sessionId: string;
  /** See {@link ReconcileInput.firstRunId}. */
  firstRunId: string;
  /** The caller's tool-call ID. */
  callId: string;
  /** Public name, as the model saw it. */
  name: string;
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  annotations?: ToolAnnotations;
  /** MCP request timeout; just under the activity's start-to-close so an MCP timeout is classified. */
  requestTimeoutMs: number;
  /** The seal of the call's PreToolUse decision (`PreToolUseHooksResult.proof`), when hooks ran. */
  hookProof?: string;
  /** A later attempt of a call whose server asked for input: the answers and the server's state. */
  inputReply?: InputReply;
  /**
   * The queue of the worker the turn believes holds the session's servers, given to `callToolLocal`
   * and to a `callTool` sent to the shared queue for eager dispatch (any worker may take it there
   * when the server does not hand it back at once). A worker with another queue refuses the call
   * (`FastPathMiss`) without running anything.
   */
  workerQueue?: string;
  /**
   * A call sent to the shared queue for any worker to run over its own connection to the server
   * (see {@link ReconcileResult.shared}), with the turn's references, which that worker resolves
   * when it has no connection for the identity yet. A worker that cannot verify the grant, or
   * resolves another entry, refuses it unrun (`SharedMiss`). `offerRoot`: the turn offers its
   * workspace as the servers' root (see {@link TurnInput.offerWorkspaceRoot}), as that worker then does.
   */
  shared?: SharedServer & { refs: ConfigRefs; offerRoot?: true };
}

/** What `workerInfo` returns: the worker's own queue, and whether it runs retry-safe calls locally. */
export interface WorkerInfo {
  workerQueue: string;
  fastPath: boolean;
}

/** What `callToolLocal` returns: the outcome, and the call it belongs to (a local activity's marker records no input). */
export type LocalCallOutcome = (CallOutcome | InputRequiredOutcome) & { callId: string };

/** `endSession`: the session whose servers the worker stops. */
export interface EndSessionInput {
  sessionId: string;
}

/** What one worker did for `endSession`. */
export interface EndSessionResult {
  /** The servers of the session it stopped (0: it held none of them). */
  servers: number;
}

/** The input of the `dmcpEndSession` workflow. */
export interface EndSessionWorkflowInput {
  sessionId: string;
  /** The worker queues the session's turns ran on, newest first: each is asked to stop its servers. */
  workerQueues: string[];
}

/** What ending a session did. */
export interface SessionEnd {
  sessionId: string;
  /** The open turns of the session that were ended. */
  turnsEnded: string[];
  /** Workers that answered (a worker that is gone took its servers with it). */
  workers: number;
  /** Servers stopped on them. */
  servers: number;
}
