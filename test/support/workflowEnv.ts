/**
 * The workflow test tier: the real `agentTurn` workflow and the real activities, against a fake
 * server pool instead of MCP server processes, on a Temporal dev server that
 * `TestWorkflowEnvironment.createLocal` starts from the project's own Temporal CLI (no download).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import pino from 'pino';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { TurnClient, sessionIdKey } from '../../client/turnClient.js';
import type { LoadedConfig, ServerEntry } from '../../config/types.js';
import type { ToolAnnotations, ToolInfo, TurnStatus } from '../../contract/index.js';
import { findTemporalCli } from '../../dev/temporalCli.js';
import { bundleWorkflows } from '../../worker/index.js';
import { uniqueQueue } from './harness.js';

type Pool = ActivityDeps['pool'];

/** One tool of the fake server. */
export interface FakeTool {
  /** The tool's own name; its public name is `mcp__<server>__<tool>`. */
  tool: string;
  annotations?: ToolAnnotations;
  /**
   * What one execution returns (`attempt` counts executions of this tool in the session, from 1).
   * Throwing fails the call: a plain Error is what a lost connection looks like to the activities.
   * Default: echoes the arguments as text.
   */
  run?: (args: Record<string, unknown>, attempt: number) => CallToolResult | Promise<CallToolResult>;
}

/** One execution the fake pool saw. */
export interface FakeCall {
  sessionId: string;
  server: string;
  tool: string;
  args: Record<string, unknown>;
  startedAt: number;
  endedAt?: number;
}

/**
 * A server pool with one server and scripted tools. It implements only what the activities may
 * use (reconcile, tools, callTool, endSession); anything else, or a session used before it was reconciled, or
 * a server or tool it does not have, is recorded in `misuse` and throws. Tests assert `misuse` is
 * empty, since an error thrown inside an activity would otherwise only show up as a call outcome.
 */
export class FakePool {
  readonly calls: FakeCall[] = [];
  readonly misuse: string[] = [];
  readonly reconciled: string[] = [];
  /** Sessions the activities ended (`endSession`), in order. */
  readonly ended: string[] = [];
  private readonly byName: Map<string, FakeTool>;

  /**
   * @param options.modern the server is a remote one of the 2026-07-28 revision (Streamable HTTP),
   * whose calls any worker may take: the config names it as such, its status says so, and the pool
   * answers `serves` for the connections the activities open outside sessions.
   */
  constructor(
    readonly server: string,
    readonly toolList: FakeTool[],
    private readonly options: { modern?: boolean } = {},
  ) {
    this.byName = new Map(toolList.map((t) => [t.tool, t]));
  }

  /** What the fake config loader returns: nothing, or the modern server's entry. */
  config(): LoadedConfig {
    if (!this.options.modern) return fakeConfig;
    const entry: ServerEntry = {
      name: this.server,
      layer: 'inline',
      source: '--mcp #1',
      trusted: true,
      type: 'http',
      url: 'http://127.0.0.1:9/mcp',
      args: [],
      env: {},
      envFrom: {},
      headers: {},
      enabled: true,
    };
    return { ...fakeConfig, servers: [entry] };
  }

  publicName(tool: string): string {
    return `mcp__${this.server}__${tool}`;
  }

  /** How many times `tool` was executed (in any session). */
  count(tool: string): number {
    return this.calls.filter((c) => c.tool === tool).length;
  }

  /** The object the activities get: only reconcile, tools, callTool and endSession are reachable. */
  asPool(): Pool {
    const impl: Pool = {
      ...(this.options.modern ? { serves: (sessionId: string) => this.reconciled.includes(sessionId) } : {}),
      reconcile: (...args: Parameters<Pool['reconcile']>) => this.reconcile(args[0]),
      tools: (...args: Parameters<Pool['tools']>) => this.tools(args[0]),
      callTool: (...args: Parameters<Pool['callTool']>) => this.callTool(args[0], args[1], args[2], args[3]),
      endSession: async (sessionId: string) => {
        this.ended.push(sessionId);
        return this.reconciled.includes(sessionId) ? 1 : 0;
      },
    };
    return new Proxy(impl, {
      get: (target, prop, receiver) => {
        if (typeof prop === 'string' && !Object.hasOwn(target, prop))
          this.fail(`the activities used pool.${prop}, which the fake pool does not implement`);
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
  }

  private fail(message: string): never {
    this.misuse.push(message);
    throw new Error(`fake pool misused: ${message}`);
  }

  private status(): TurnStatus {
    return {
      mcp: 'on',
      servers: [
        {
          name: this.server,
          layer: 'inline',
          source: '--mcp #1',
          transport: this.options.modern ? 'http' : 'stdio',
          ...(this.options.modern ? { era: 'modern' as const } : {}),
          state: 'ready',
          tools: this.toolList.map((t) => this.publicName(t.tool)),
          warnings: [],
        },
      ],
      warnings: [],
      reportedAt: new Date().toISOString(),
    };
  }

  private async reconcile(sessionId: string): Promise<TurnStatus> {
    this.reconciled.push(sessionId);
    return this.status();
  }

  private tools(sessionId: string): ToolInfo[] {
    if (!this.reconciled.includes(sessionId)) this.fail(`tools(${sessionId}) before the session was reconciled`);
    return this.toolList.map((t) => ({
      name: this.publicName(t.tool),
      server: this.server,
      tool: t.tool,
      description: `fake ${t.tool}`,
      inputSchema: { type: 'object' },
      ...(t.annotations ? { annotations: t.annotations } : {}),
    }));
  }

  private async callTool(
    sessionId: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<CallToolResult> {
    if (!this.reconciled.includes(sessionId)) this.fail(`callTool(${sessionId}) before the session was reconciled`);
    if (server !== this.server) this.fail(`callTool on server "${server}"; the fake has only "${this.server}"`);
    const spec =
      this.byName.get(tool) ?? this.fail(`callTool of unknown tool "${tool}" (the workflow should have refused it)`);
    const call: FakeCall = { sessionId, server, tool, args, startedAt: Date.now() };
    this.calls.push(call);
    const attempt = this.calls.filter((c) => c.sessionId === sessionId && c.tool === tool).length;
    try {
      return spec.run ? await spec.run(args, attempt) : { content: [{ type: 'text', text: JSON.stringify(args) }] };
    } finally {
      call.endedAt = Date.now();
    }
  }
}

/** The config the fake loader returns: the fake pool ignores it. */
export const fakeConfig: LoadedConfig = { off: false, servers: [], refused: [], warnings: [], hash: 'fake' };

let runtimeInstalled = false;

/** A dev server started from the project's Temporal CLI, with the search attribute turns set. */
export async function createWorkflowEnv(): Promise<TestWorkflowEnvironment> {
  if (!runtimeInstalled) {
    // The tests fail calls on purpose; the SDK would log each failed activity attempt as a warning.
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  const cli = await findTemporalCli();
  if (!cli)
    throw new Error('no Temporal CLI found: run `npm run setup:temporal` (the workflow tests never download one)');
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: cli.path },
      ip: '127.0.0.1',
      searchAttributes: [sessionIdKey],
      log: { format: 'pretty', level: 'warn' },
    },
  });
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

export interface FakeWorker {
  taskQueue: string;
  workerQueue: string;
  client: TurnClient;
  stop(): Promise<void>;
}

/** How {@link startFakeWorker} builds its worker. */
export interface FakeWorkerOptions {
  /** The workflow cache; 0 replays every workflow task from the start of the history. */
  maxCachedWorkflows?: number;
  /** The activities' governance (allowed tools, hooks). Default: none. */
  governance?: ActivityDeps['governance'];
  /** Replaces the real activities with what it returns (e.g. one wrapped to misbehave once). */
  wrapActivities?: (real: Activities, queues: { taskQueue: string; workerQueue: string }) => Activities;
}

type Activities = ReturnType<typeof createActivities>;

/**
 * Runs the real workflow bundle and the real activities (built by `createActivities`) on a fresh
 * queue, with `pool` as the server pool: a shared-queue worker and a pinned worker queue, as in
 * production.
 */
export async function startFakeWorker(
  env: TestWorkflowEnvironment,
  name: string,
  pool: FakePool,
  options: FakeWorkerOptions = {},
): Promise<FakeWorker> {
  bundle ??= bundleWorkflows();
  const taskQueue = uniqueQueue(name);
  const workerQueue = `${taskQueue}@fake-worker`;
  const real = createActivities({
    pool: pool.asPool(),
    workerQueue,
    loadConfig: async () => pool.config(),
    logger: pino({ level: 'silent' }),
    scrub: (text) => text,
    ...(options.governance ? { governance: options.governance } : {}),
  });
  const activities = options.wrapActivities ? options.wrapActivities(real, { taskQueue, workerQueue }) : real;
  const shared = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await bundle,
    activities,
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
  });
  const pinned = await Worker.create({ connection: env.nativeConnection, taskQueue: workerQueue, activities });
  const runs = Promise.all([shared.run(), pinned.run()]);
  return {
    taskQueue,
    workerQueue,
    client: new TurnClient({ client: env.client, taskQueue }),
    async stop() {
      for (const w of [shared, pinned]) if (w.getState() === 'RUNNING') w.shutdown();
      await runs;
    },
  };
}

/** What {@link fakeWorkerSuite} gives the tests of one `describe`. */
export interface FakeWorkerSuite {
  /** This file's dev server (set once the suite's `before` hook ran). */
  readonly env: TestWorkflowEnvironment;
  /** Starts a worker over `pool`; it is stopped after the test, and the pool checked for misuse. */
  start(name: string, pool: FakePool, options?: FakeWorkerOptions): Promise<FakeWorker>;
}

/**
 * The lifecycle every fake-pool workflow file shares, registered on the enclosing `describe`: one
 * dev server for the file; after each test, the workers it started are stopped and their pools must
 * show no misuse (a fake fails loudly when the activities use it as they may not).
 */
export function fakeWorkerSuite(): FakeWorkerSuite {
  let env: TestWorkflowEnvironment | undefined;
  let started: { worker: FakeWorker; pool: FakePool }[] = [];
  before(async () => {
    env = await createWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });
  afterEach(async () => {
    const done = started;
    started = [];
    for (const { worker } of done) await worker.stop();
    for (const { pool } of done) assert.deepEqual(pool.misuse, [], 'the activities used the pool only as they may');
  });
  return {
    get env() {
      if (!env) throw new Error('fakeWorkerSuite: the dev server is not started yet (use it inside a test)');
      return env;
    },
    async start(name, pool, options) {
      const worker = await startFakeWorker(this.env, name, pool, options);
      started.push({ worker, pool });
      return worker;
    },
  };
}
