/**
 * One table of what a call's failure means to the model: each row is a failure, each column a kind
 * of call, each cell the outcome the turn answers with. The real agentTurn workflow and the real
 * activities run on two fake workers (a shared-queue worker and a worker queue each, as in
 * production) over one fake server pool; faults are injected where a server, a connection or a
 * worker would fail. Every row also asserts how often the tool had its effect: at most once for
 * every kind but a retry-safe one.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { createActivities } from '../../activities/index.js';
import { TurnClient } from '../../client/turnClient.js';
import {
  FailureType,
  type CallErrorKind,
  type CallOutcome,
  type TaskPoll,
  type TaskStarted,
} from '../../contract/index.js';
import { createGovernance } from '../../governance/index.js';
import { bundleWorkflows } from '../../worker/index.js';
import { uniqueQueue } from '../support/harness.js';
import { FakePool, fakeConfig, fakeWorkerSuite, type FakeTool } from '../support/workflowEnv.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `promise`, or a failure after `ms`: a row whose fault never strikes fails instead of hanging the suite. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms)));
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The kinds of call, each run its own way: fast path, at most once, MCP task, hooks, a person's answer. */
const KINDS = ['retry-safe', 'side-effecting', 'task', 'hook', 'question'] as const;
type Kind = (typeof KINDS)[number];

/**
 * Where the call fails, once: `servers-gone`, the worker answers that the session's servers are not
 * there (nothing ran); `lost-worker`, the worker holding the servers is gone before the call is
 * sent (schedule-to-start timeout); `heartbeat-lost`, the worker stops heartbeating after the tool
 * had its effect; `transport`, the connection drops after the effect; `bad-request`, the server
 * refuses the request; `tool-error`, the tool answers `isError`; `cancel-call`, the call is
 * cancelled while the tool runs; `cancel-reconcile`, the turn is cancelled while the call moves
 * the session's servers.
 */
type Failure =
  | 'none'
  | 'servers-gone'
  | 'lost-worker'
  | 'heartbeat-lost'
  | 'transport'
  | 'bad-request'
  | 'tool-error'
  | 'cancel-call'
  | 'cancel-reconcile';

/** What the turn answers: `ok` (isError when the tool said so), an error kind, or none (the turn was cancelled). */
type Expected = 'ok' | 'ok, isError' | CallErrorKind | 'turn cancelled';

/** One row: the outcome for each kind, and how many effects a retry-safe call may have (a retry runs it again). */
interface Row {
  failure: Failure;
  expect: Record<Kind, Expected>;
  retrySafeEffects?: number;
}

const all = (expected: Expected): Record<Kind, Expected> => ({
  'retry-safe': expected,
  'side-effecting': expected,
  task: expected,
  hook: expected,
  question: expected,
});

const TABLE: Row[] = [
  { failure: 'none', expect: all('ok') },
  { failure: 'servers-gone', expect: all('ok') },
  { failure: 'lost-worker', expect: all('ok') },
  {
    failure: 'heartbeat-lost',
    // A task lives on its server: the turn polls it again from the worker it moved to.
    expect: { ...all('unknown_result'), 'retry-safe': 'ok', task: 'ok' },
    retrySafeEffects: 2,
  },
  {
    failure: 'transport',
    expect: { ...all('unknown_result'), 'retry-safe': 'ok' },
    retrySafeEffects: 2,
  },
  { failure: 'bad-request', expect: all('bad_request') },
  { failure: 'tool-error', expect: all('ok, isError') },
  { failure: 'cancel-call', expect: all('cancelled') },
  { failure: 'cancel-reconcile', expect: all('turn cancelled') },
];

/**
 * Rows whose failure strikes the regular activity, so their calls skip the fast path. A local
 * activity has no heartbeat, holds back a cancel until it ends, and falls back to the regular
 * activity without moving the servers: the fast path's own failures are its own (process) tests.
 */
const REGULAR_ONLY = new Set<Failure>(['heartbeat-lost', 'cancel-call', 'cancel-reconcile']);

/** What one row's fakes did: the tool's effects and the faults injected so far. */
class Script {
  effects = 0;
  /** Set once the injected fault happened (each fault happens once). */
  failed = false;
  asked = false;
  reconciles = 0;
  /** The node whose reconcile last took the session's servers. */
  holder: string | undefined;
  polls = 0;
  cancelRequested = false;
  tasksCancelled = 0;
  /** Resolves once the tool started running (the effect is under way). */
  readonly running: Promise<void>;
  /** Marks the tool as running. */
  readonly started: () => void;
  private reconcilingAgain!: () => void;
  readonly reconcilesAgain = new Promise<void>((resolve) => (this.reconcilingAgain = resolve));

  constructor(
    readonly kind: Kind,
    readonly failure: Failure,
  ) {
    let started!: () => void;
    this.running = new Promise<void>((resolve) => (started = resolve));
    this.started = started;
  }

  /** Whether this call fails now with `failure`: the first time only. */
  failsNow(failure: Failure): boolean {
    if (this.failure !== failure || this.failed) return false;
    this.failed = true;
    return true;
  }

  onReconcile(node: string): void {
    this.reconciles += 1;
    this.holder = node;
    if (this.reconciles === 2) this.reconcilingAgain();
  }

  /**
   * The tool itself, as a server would run it (a task runs it when created). Faults that strike
   * before the tool ran throw first; those after, once the effect is counted.
   */
  async run(): Promise<CallToolResult> {
    if (this.failsNow('bad-request'))
      throw ApplicationFailure.create({
        type: FailureType.BadRequest,
        message: 'invalid params: the server refused the arguments',
        nonRetryable: true,
      });
    if (this.failsNow('servers-gone') || this.failsNow('cancel-reconcile'))
      throw ApplicationFailure.create({
        type: FailureType.ServerUnavailable,
        message: 'the session has no servers here',
        nonRetryable: true,
      });
    this.effects += 1;
    this.started();
    if (this.failsNow('transport')) throw new Error('connection reset');
    if (this.failure === 'cancel-call') await sleep(1500);
    if (this.failure === 'tool-error')
      return { content: [{ type: 'text', text: 'the tool says no' }], isError: true } as CallToolResult;
    return { content: [{ type: 'text', text: `${this.kind} done` }] } as CallToolResult;
  }
}

/** The fake server's one tool, shaped for the row's kind. */
function toolFor(script: Script): FakeTool {
  const annotations = script.kind === 'retry-safe' ? { readOnlyHint: true } : { destructiveHint: true };
  return {
    tool: 'act',
    annotations,
    run: () => {
      if (script.kind === 'question' && !script.asked) {
        script.asked = true;
        // A 2026-07-28 server's `input_required`: the call ends, and a new one carries the answer.
        return {
          resultType: 'input_required',
          requests: [{ key: 'ok', kind: 'form', message: 'Go ahead?', requestedSchema: { type: 'object' } }],
          ownResponses: {},
        } as unknown as CallToolResult;
      }
      return script.run();
    },
  };
}

type Activities = ReturnType<typeof createActivities>;

/** A worker stops heartbeating while its call runs: held until Temporal times the activity out. */
async function stall(script: Script): Promise<never> {
  script.effects += 1;
  const signal = Context.current().cancellationSignal;
  for (let i = 0; i < 100 && !signal.aborted; i++) await sleep(100);
  throw new Error('a stalled activity was never timed out');
}

/** Answers as a server that runs the tool as an MCP task would: created once, polled, result fetched. */
function fakeTaskActivities(script: Script, guard: () => void): Partial<Activities> {
  const taskFailure = (type: string, message: string) =>
    ApplicationFailure.create({ type, message, nonRetryable: true });
  return {
    createTask: async (): Promise<TaskStarted | CallOutcome> => {
      guard();
      if (script.failsNow('bad-request')) throw taskFailure(FailureType.BadRequest, 'invalid params');
      if (script.failsNow('servers-gone') || script.failsNow('cancel-reconcile'))
        throw taskFailure(FailureType.ServerUnavailable, 'the session has no servers here');
      script.effects += 1;
      if (script.failsNow('transport')) throw taskFailure(FailureType.Transport, 'connection reset');
      return { kind: 'task', taskId: 'task-1', status: 'working', pollIntervalMs: 100 };
    },
    pollTask: async (): Promise<TaskPoll> => {
      script.polls += 1;
      if (script.polls === 1 && script.failsNow('heartbeat-lost')) {
        const signal = Context.current().cancellationSignal;
        for (let i = 0; i < 100 && !signal.aborted; i++) await sleep(100);
        throw new Error('a stalled poll was never timed out');
      }
      if (script.failure === 'cancel-call' && !script.cancelRequested) {
        script.started();
        return { status: 'working' };
      }
      return { status: script.polls >= 2 ? 'completed' : 'working' };
    },
    taskResult: async (input): Promise<CallOutcome> => ({
      status: 'ok',
      content: [{ type: 'text', text: script.failure === 'tool-error' ? 'the tool says no' : `${input.name} done` }],
      isError: script.failure === 'tool-error',
      startedAt: new Date().toISOString(),
      durationMs: 1,
      attempts: 1,
    }),
    cancelTask: async () => {
      script.tasksCancelled += 1;
    },
  };
}

/**
 * One worker as the turn sees it: its own queue, whose worker holds the session's servers once its
 * reconcile took them, and its share of the shared queue while it lives.
 */
interface Node {
  name: string;
  queue: string;
  activities: Activities;
  alive: boolean;
  kill(): Promise<void>;
}

/** How the row's nodes are built. */
interface NodeOptions {
  taskQueue: string;
  pool: FakePool;
  script: Script;
  turnKey: Buffer;
  fastPath: boolean;
}

const bundle = bundleWorkflows();

/** A PreToolUse hook on the tool that allows the call, answered as a script would (no process). */
function allowingHook() {
  return createGovernance({
    env: { DMCP_CONFIG_DIR: '/cfg' },
    scrub: (t) => t,
    readText: async () =>
      JSON.stringify({
        hooks: { PreToolUse: [{ matcher: 'mcp__fake__act', hooks: [{ type: 'command', command: 'check' }] }] },
      }),
    runHook: async () => ({
      exitCode: 0,
      stdout: JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow' } }),
      stderr: '',
      timedOut: false,
    }),
  });
}

/** The real activities of node `name`, with the row's faults injected where a worker or server would fail. */
function nodeActivities(name: string, queue: string, options: NodeOptions): Activities {
  const { script } = options;
  const real = createActivities({
    pool: options.pool.asPool(),
    workerQueue: queue,
    loadConfig: async () => fakeConfig,
    logger: pino({ level: 'silent' }),
    scrub: (text) => text,
    turnKey: options.turnKey,
    fastPath: options.fastPath,
    ...(script.kind === 'hook' ? { governance: allowingHook() } : {}),
  });
  // Only the node that reconciled holds the session's servers, as a real pool's sessions are its own.
  const guard = () => {
    if (script.holder !== name)
      throw ApplicationFailure.create({
        type: FailureType.ServerUnavailable,
        message: `the session has no servers on ${name}`,
        nonRetryable: true,
      });
  };
  return {
    ...real,
    reconcileServers: async (input) => {
      const result = await real.reconcileServers(input);
      script.onReconcile(name);
      if (script.failure === 'cancel-reconcile' && script.reconciles === 2) {
        // Held (bounded) until the turn's cancellation reaches it through a heartbeat.
        const ctx = Context.current();
        for (let i = 0; i < 100 && !ctx.cancellationSignal.aborted; i++) {
          ctx.heartbeat();
          await sleep(200);
        }
        throw new Error('the held reconcile was never cancelled');
      }
      return result;
    },
    listTools: async (input) => {
      const tools = await real.listTools(input);
      return script.kind === 'task' ? tools.map((t) => ({ ...t, taskSupport: 'required' as const })) : tools;
    },
    callTool: async (input) => {
      guard();
      if (script.failsNow('heartbeat-lost')) return stall(script);
      return real.callTool(input);
    },
    ...(script.kind === 'task' ? fakeTaskActivities(script, guard) : {}),
  };
}

/**
 * Two nodes on one shared queue. A process may run only one worker per queue, so one worker polls
 * the shared queue for both: what it runs (workflow tasks, their local activities, reconciles,
 * eagerly dispatched calls) is run by the activities of the first node still alive, as if that
 * node's worker had taken it. Each node's own queue has its own worker; killing a node stops it.
 */
async function startNodes(
  options: NodeOptions,
  env: FakeWorkerSuiteEnv,
): Promise<{ nodes: Node[]; stop(): Promise<void> }> {
  const nodes: Node[] = [];
  for (const name of ['node-a', 'node-b']) {
    const queue = `${options.taskQueue}@${name}`;
    const activities = nodeActivities(name, queue, options);
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: queue,
      activities,
      identity: queue,
    });
    const run = worker.run();
    nodes.push({
      name,
      queue,
      activities,
      alive: true,
      async kill() {
        this.alive = false;
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await run;
      },
    });
  }
  const living = () => nodes.find((n) => n.alive) ?? nodes[0]!;
  const routed = Object.fromEntries(
    Object.keys(nodes[0]!.activities).map((key) => [
      key,
      (...args: unknown[]) => (living().activities as Record<string, (...a: unknown[]) => unknown>)[key]!(...args),
    ]),
  );
  const shared = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: options.taskQueue,
    workflowBundle: await bundle,
    activities: routed,
  });
  const sharedRun = shared.run();
  return {
    nodes,
    async stop() {
      for (const node of nodes) await node.kill();
      shared.shutdown();
      await sharedRun;
    },
  };
}

type FakeWorkerSuiteEnv = ReturnType<typeof fakeWorkerSuite>['env'];

/** The settled call: its outcome, or the error its Update ended with (a cancelled turn answers none). */
type Settled = { outcome: CallOutcome } | { err: unknown };

async function runRow(env: FakeWorkerSuiteEnv, row: Row, kind: Kind) {
  const script = new Script(kind, row.failure);
  const pool = new FakePool('fake', [toolFor(script)]);
  const taskQueue = uniqueQueue(`fail-${row.failure}-${kind}`);
  const options: NodeOptions = {
    taskQueue,
    pool,
    script,
    turnKey: randomBytes(32),
    fastPath: !REGULAR_ONLY.has(row.failure),
  };
  const { nodes, stop } = await startNodes(options, env);
  const client = new TurnClient({ client: env.client, taskQueue });
  try {
    const turn = await client.startTurn({
      sessionId: `wf-fail-${row.failure}-${kind}-${Date.now()}`,
      limits: { heartbeatTimeoutMs: 1000, scheduleToStartMs: 1000 },
    });
    if (row.failure === 'lost-worker') await nodes.find((n) => n.queue === turn.workerQueue)!.kill();
    const call = turn
      .callTool(
        { id: 'c1', name: pool.publicName('act'), arguments: { kind } },
        { onInput: async () => ({ action: 'accept', content: {} }) },
      )
      .then(
        (outcome): Settled => ({ outcome }),
        (err: unknown): Settled => ({ err }),
      );
    if (row.failure === 'cancel-call') {
      await within(script.running, 30_000, 'the tool never ran');
      await turn.cancelCall('c1');
    }
    if (row.failure === 'cancel-reconcile') {
      await within(script.reconcilesAgain, 30_000, 'the call never moved the servers');
      await turn.handle.cancel();
    }
    const settled = await within(call, 60_000, 'the call never settled');
    let got: Expected;
    if ('err' in settled) {
      assert.equal((await turn.handle.describe()).status.name, 'CANCELLED', String(settled.err));
      got = 'turn cancelled';
    } else {
      const { outcome } = settled;
      got = outcome.status === 'ok' ? (outcome.isError ? 'ok, isError' : 'ok') : outcome.errorKind!;
      await turn.end();
    }
    return { got, script, pool };
  } finally {
    await stop();
  }
}

// Rows share nothing but the dev server (each has its own queues, workers and session), so a few run at once.
describe(
  'what a failure of each kind of call answers (the call-failure table)',
  { timeout: 600_000, concurrency: 3 },
  () => {
    const suite = fakeWorkerSuite();
    for (const row of TABLE) {
      for (const kind of KINDS) {
        const expected = row.expect[kind];
        test(`${row.failure} x ${kind} -> ${expected}`, { timeout: 120_000 }, async () => {
          const { got, script, pool } = await runRow(suite.env, row, kind);
          assert.equal(got, expected, `${row.failure} x ${kind}`);
          assert.deepEqual(pool.misuse, [], 'the activities used the pool only as they may');
          if (kind === 'retry-safe')
            assert.ok(script.effects <= (row.retrySafeEffects ?? 1), `effects: ${script.effects}`);
          else assert.ok(script.effects <= 1, `a ${kind} call had its effect ${script.effects} times`);
          if (expected === 'ok' && row.failure !== 'tool-error') assert.ok(script.effects >= 1, 'the tool ran');
          if (row.failure === 'cancel-reconcile') assert.equal(script.effects, 0, 'the cancelled call never ran');
        });
      }
    }
  },
);
