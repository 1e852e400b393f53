/**
 * The package's client (`durable-mcp/client`): {@link TurnClient} starts and drives turns, and
 * this module exports everything a user of the package needs with it.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { Client, WorkflowHandle, WorkflowUpdateHandle } from '@temporalio/client';
import {
  DEFAULT_TASK_QUEUE,
  DataDirEntry,
  WorkflowType,
  agentIdProblem,
  refsProofText,
  turnTaskTimeoutMs,
  type CallOutcome,
  type ConfigRefs,
  type CallRequest,
  type EndTurnOptions,
  type InputAnswer,
  type InputAnswerReceipt,
  type InputRequest,
  type ModelTurnInput,
  type SessionEnd,
  type TurnInput,
  type TurnResult,
  type TurnStarted,
  type TurnStatus,
} from '../contract/index.js';
import {
  callToolUpdate as callToolDef,
  cancelCallUpdate as cancelCallDef,
  turnStartedUpdate as turnStartedDef,
  type AgentTurnWorkflow,
} from '../contract/definitions.js';
// Not the shaping index: its token counter loads a tokenizer that most commands never use.
import { DEFAULT_SHAPE_LIMITS, type ShapeLimits } from '../shaping/limits.js';
import { createDataConverter } from '../payloads/dataConverter.js';
import { answerWhileRunning, pendingInputsOf, sendAnswer, type CallInputOptions } from './inputs.js';
import type { ConnectOptions, StartTurnOptions, TurnClientOptions } from './options.js';
import { answersWithoutSecrets, refuseAnswerSecrets, refuseCallSecrets, refuseSecrets } from './secrets.js';
import type { Transcript } from './transcript.js';
import { Turn, sendEndTurn, type CallQueueOptions } from './turn.js';
import {
  MAX_TURN_NUMBER_MOVES,
  TurnIdTakenError,
  checkSessionId,
  isAlreadyStarted,
  nextTurnNumber,
  readTurnKeyFile,
  clientDataDir,
  missingKeyProblem,
  startFailure,
  sessionIdKey,
  turnMetadata,
} from './turnStart.js';
import { turnTranscript } from './turnTranscript.js';
import { endSession } from './endSession.js';
import { turnEvents, type TurnEvent } from './turnEvents.js';
import { FilesystemStepTextStore, type StepTextStore } from '../payloads/streamLog.js';
import { ModelTurnRun, type ModelTurnOptions } from './modelTurn.js';
import { temporalClient } from './temporalClient.js';

const { WithStartWorkflowOperation } = temporalClient;

export type { CallInputOptions, InputContext, InputHandler } from './inputs.js';
export type { InputAnswer, InputAnswerReceipt, InputRequest } from '../contract/index.js';
export type { ConnectOptions, StartTurnOptions, TurnClientOptions, TurnServers } from './options.js';
import {
  lastSessionEnd,
  listSessions,
  listTurns,
  latestConversation,
  sessionSummary,
  sessionTurns,
  type SessionListing,
  type TurnListing,
} from './sessions.js';
export { SecretInInputError } from './secrets.js';
export { MAX_LISTED_RUNS, type SessionListing, type TurnListing } from './sessions.js';
export { Turn, type CallQueueOptions } from './turn.js';
export { ModelTurnRun, type ModelTurnOptions } from './modelTurn.js';
export { EventIdError, type TurnEvent } from './turnEvents.js';
export { stepTextStoreFor, type StepTextStore } from '../payloads/streamLog.js';
export { SESSION_ID_RE, TurnFailedError, TurnIdTakenError, sessionIdKey } from './turnStart.js';

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
  private readonly keyFile: string;
  private nonceKey?: Promise<Buffer>;
  private stepTextStore?: StepTextStore;
  private readonly dataDir?: string;

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
    this.keyFile = join(clientDataDir(options.dataDir), DataDirEntry.turnKey);
    this.stepTextStore = options.stepText;
    this.dataDir = options.dataDir;
  }

  /** Where model steps' text is read from as it is produced (see {@link TurnClientOptions.stepText}). */
  get stepText(): StepTextStore {
    this.stepTextStore ??= new FilesystemStepTextStore(
      join(clientDataDir(this.dataDir), DataDirEntry.payloads),
      this.client.options.loadedDataConverter.payloadCodecs,
    );
    return this.stepTextStore;
  }

  /** The key that signs turn references: the option, else the default data dir's key file, read once. */
  private key(): Promise<Buffer | undefined> {
    this.turnKey ??= this.turnKeyOption ? Promise.resolve(this.turnKeyOption) : readTurnKeyFile(this.keyFile);
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
      createDataConverter({ payloadDir: join(clientDataDir(options.dataDir), DataDirEntry.payloads) });
    const client = new temporalClient.Client({ connection, namespace: options.namespace ?? 'default', dataConverter });
    return new TurnClient({
      client,
      taskQueue: options.taskQueue,
      turnIdleMs: options.turnIdleMs,
      inputTimeoutMs: options.inputTimeoutMs,
      legacyInputTimeoutMs: options.legacyInputTimeoutMs,
      shapeLimits: options.shapeLimits,
      turnKey: options.turnKey,
      dataDir: options.dataDir,
      secrets: options.secrets,
      maxCallsInFlight: options.maxCallsInFlight,
      ...(options.stepText ? { stepText: options.stepText } : {}),
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
      const operation = new WithStartWorkflowOperation<AgentTurnWorkflow>(WorkflowType.agentTurn, {
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
        .catch(async (err: unknown) => {
          // A closed turn with this number exists (visibility lagged behind): take the next number,
          // unless the caller asked for this exact turn.
          if (options.turn === undefined && isAlreadyStarted(err)) return undefined;
          throw await startFailure(this.client, workflowId, err);
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
      next = { ...options, turn: nextTurnNumber(workflowId) };
    }
  }

  /** Runs a batch turn: groups in order, calls of a group in parallel. */
  async runBatch(
    options: StartTurnOptions & { calls: CallRequest[][] } & Pick<CallInputOptions, 'onInput' | 'inputPollMs'>,
  ): Promise<TurnResult> {
    const handle = await this.startBatch(options);
    return this.answering(handle, options);
  }

  /** The run's result; meanwhile the questions its tools ask go to `onInput`, when given. */
  private answering(
    handle: WorkflowHandle<AgentTurnWorkflow>,
    options: Pick<CallInputOptions, 'onInput' | 'inputPollMs'>,
  ): Promise<TurnResult> {
    const result = handle.result();
    const { onInput } = options;
    if (!onInput) return result;
    const answering = answerWhileRunning(handle, undefined, result, {
      inputPollMs: options.inputPollMs,
      onInput: answersWithoutSecrets(this.secrets, onInput),
    });
    // Settled once the poll has stopped too: a caller that closes its connection on the result must
    // not leave a query in flight on it.
    return answering.then(() => result);
  }

  /**
   * Starts a model turn: the turn asks the operator's model (by its name in the workers'
   * `models.json`), runs the tool calls it asks for, and ends with its answer. Questions the tools
   * ask go to `onInput` when given. {@link ModelTurnRun.steps} yields the steps as they finish.
   */
  async startModelTurn(options: ModelTurnOptions): Promise<ModelTurnRun> {
    const { newConversation, ...model } = options.model;
    if (model.conversation === undefined && newConversation !== true) {
      const conversation = await latestConversation(this.client, options.sessionId);
      if (conversation !== undefined) model.conversation = conversation;
    }
    const handle = await this.startBatch({ ...options, model });
    return new ModelTurnRun(handle, this.answering(handle, options), options.stepPollMs);
  }

  /** Runs a model turn to its end (see {@link startModelTurn}); the answer is the result's `answer`. */
  async runModelTurn(options: ModelTurnOptions): Promise<TurnResult> {
    return (await this.startModelTurn(options)).result();
  }

  /**
   * Starts a batch or model turn as a new run: an ID taken (a closed turn visibility did not count
   * yet, or a run another caller started) is never adopted; the next number is taken, unless the
   * caller named one.
   */
  private async startBatch(
    options: StartTurnOptions &
      ({ calls: CallRequest[][]; model?: undefined } | { calls?: undefined; model: ModelTurnInput }),
  ): Promise<WorkflowHandle<AgentTurnWorkflow>> {
    let next = options;
    for (let moves = 1; ; moves += 1) {
      const { input, workflowId } = await this.prepare(next, options.calls, options.model?.prompt);
      try {
        return await this.client.workflow.start<AgentTurnWorkflow>(WorkflowType.agentTurn, {
          workflowId,
          taskQueue: this.taskQueue,
          args: [options.model ? { ...input, model: options.model } : { ...input, batch: options.calls }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [{ key: sessionIdKey, value: options.sessionId }],
          workflowTaskTimeout: turnTaskTimeoutMs(input.limits),
          ...turnMetadata(input, options.calls),
        });
      } catch (err) {
        if (options.turn !== undefined || !isAlreadyStarted(err) || moves >= MAX_TURN_NUMBER_MOVES) throw err;
      }
      next = { ...options, turn: nextTurnNumber(workflowId) };
    }
  }

  /**
   * The latest status reported for a session (from its newest turn's history), and when the session
   * was ended after that turn started (`sessionEndedAt`): its servers were stopped then, whatever
   * the status last said of them.
   */
  async getStatus(
    sessionId: string,
  ): Promise<{ turnId: string; status?: TurnStatus; sessionEndedAt?: string } | undefined> {
    const [{ latest }, ended] = await Promise.all([
      sessionSummary(this.client, sessionId),
      lastSessionEnd(this.client, sessionId),
    ]);
    if (!latest) return undefined;
    const t = await this.transcript(latest.workflowId);
    const endedAfter = ended !== undefined && ended.getTime() >= latest.start;
    return {
      turnId: latest.workflowId,
      status: t.status,
      ...(endedAfter ? { sessionEndedAt: ended.toISOString() } : {}),
    };
  }

  /**
   * A turn rendered from its history alone. The turn is one run chain: the latest run at the ID and
   * the runs it continued as new from, read run by run and joined (status and tools from the first
   * run, the calls of every run). Other executions at the ID (a workflow that reused it, before or
   * after) are not the turn: they are left out and named in `otherRuns`.
   */
  transcript(turnId: string): Promise<Transcript> {
    return turnTranscript(this.client, turnId);
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
      refuseCallSecrets(this.secrets, request);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return this.client.workflow
      .getHandle<AgentTurnWorkflow>(turnId)
      .startUpdate(callToolDef, { args: [request], updateId: request.id, waitForStage: 'ACCEPTED' });
  }

  /** The input requests of a turn's running calls that wait for an answer, oldest first. */
  pendingInputs(turnId: string): Promise<InputRequest[]> {
    return pendingInputsOf(this.client.workflow.getHandle<AgentTurnWorkflow>(turnId));
  }

  /**
   * Answers one open input request. The turn refuses an answer that does not fit the requested
   * schema, naming the field (`RefusalType.inputAnswer`), and the question stays open; a second
   * answer to the same request returns the first one's receipt.
   */
  answerInput(turnId: string, requestId: string, answer: InputAnswer): Promise<InputAnswerReceipt> {
    try {
      refuseAnswerSecrets(this.secrets, requestId, answer);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return sendAnswer(this.client.workflow.getHandle<AgentTurnWorkflow>(turnId), requestId, answer);
  }

  /** {@link Turn.cancelCall} for a turn known by its ID. */
  cancelCall(turnId: string, callId: string): Promise<boolean> {
    return this.client.workflow.getHandle<AgentTurnWorkflow>(turnId).executeUpdate(cancelCallDef, { args: [callId] });
  }

  /** {@link Turn.end} for a turn known by its ID. */
  async endTurn(turnId: string, options?: EndTurnOptions): Promise<TurnResult> {
    const handle = this.client.workflow.getHandle<AgentTurnWorkflow>(turnId);
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
  endSession(sessionId: string): Promise<SessionEnd> {
    return endSession(this.client, this.taskQueue, sessionId);
  }

  /**
   * The turn's events as one ordered stream, from its start or after the event ID `after` (the
   * last one read), until the turn ends or `signal` aborts: what its history reports, and a model
   * step's text as it is produced (with `model.reset` when a step is tried again).
   */
  events(turnId: string, options: { after?: string; signal?: AbortSignal } = {}): AsyncGenerator<TurnEvent> {
    return turnEvents(this.client, turnId, { ...options, stepText: this.stepText });
  }

  /** Turn IDs of a session, oldest first. */
  sessionTurns(sessionId: string): Promise<string[]> {
    return sessionTurns(this.client, sessionId);
  }

  /** A session's turns in turn order, each with its state (from visibility, which lags a second). */
  listTurns(sessionId: string): Promise<TurnListing[]> {
    return listTurns(this.client, sessionId);
  }

  /** The sessions that have turns, the most recently active first (at most `MAX_LISTED_RUNS` runs read). */
  listSessions(): Promise<SessionListing[]> {
    return listSessions(this.client);
  }

  /**
   * The turn's input: references made absolute, refused when they (or the batch's arguments) hold a
   * secret value, and signed with the turn key so the worker knows its operator chose them.
   */
  private async prepare(
    options: StartTurnOptions,
    calls?: CallRequest[][],
    prompt?: string,
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
      ...(prompt !== undefined ? [['prompt', prompt] as [string, unknown]] : []),
    ]);
    const key = options.unsigned ? undefined : await this.key();
    const unsignable = key || options.unsigned ? undefined : missingKeyProblem(refs, this.keyFile);
    if (unsignable) throw new Error(unsignable);
    if (key) refs.proof = createHmac('sha256', key).update(refsProofText(options.sessionId, refs)).digest('hex');
    const { latest, turns } = await sessionSummary(this.client, options.sessionId);
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
}
