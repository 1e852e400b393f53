/**
 * Reads and changes the shelf over a Temporal client. The first change starts the shelf workflow
 * (update-with-start) on the deployment's shared task queue; a read of a shelf never changed is
 * the empty shelf. Adding and granting are signed here with the operator's turn key; workers use
 * only what verifies.
 */
import { randomUUID } from 'node:crypto';
import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcServiceError,
  type Client,
} from '@temporalio/client';
import {
  WorkflowType,
  agentIdProblem,
  type RefusalDetail,
  type ShelfChange,
  type ShelfChangeResult,
  type ShelfEntry,
  type ShelfState,
} from '../contract/index.js';
import type { dmcpShelf, ShelfRunInput } from '../workflows/shelf.js';
import { shelfChangeUpdate as changeDef, shelfQuery as queryDef } from '../contract/definitions.js';
import { applicationFailureOf, findCause } from '../contract/failureCauses.js';
import {
  ShelfInputError,
  emptyShelf,
  shelfEntryProblem,
  shelfWorkflowId,
  signShelfGrant,
  signShelfServer,
} from './shelf.js';

/** Options of {@link ShelfClient}. */
export interface ShelfClientOptions {
  /** A client of the deployment's namespace. */
  client: Client;
  /** The shared task queue: the shelf workflow runs there, so any worker of the deployment serves it. */
  taskQueue: string;
  /** The operator's turn key (`<DMCP_DATA_DIR>/turn.key`); `add` and `grant` need it, reads do not. */
  turnKey?: Buffer;
  /** Who makes the changes, as the log shows it (`cli root@host`, `api token DMCP_API_TOKENS entry 2`); never a secret. */
  by: string;
  /** Default {@link shelfWorkflowId}(taskQueue). */
  workflowId?: string;
  /** How long a read or a change waits for a worker to answer (default 20 s). */
  timeoutMs?: number;
  /** The caller's environment: an entry holding one of its secret values is refused (default: none known). */
  env?: NodeJS.ProcessEnv;
  /** Passed to a shelf workflow this client starts; see {@link ShelfRunInput.continueAsNewAfter} (tests). */
  continueAsNewAfter?: number;
}

/** Options of one change. */
export interface ChangeOptions {
  /**
   * The Update ID. The same ID sent again within one run of the shelf is answered with the first
   * answer and not applied twice. Default: a new one. Changes are idempotent by content anyway
   * (adding the same entry again, granting a grant that exists, answer `changed: false`).
   */
  updateId?: string;
}

/** The shelf workflow did not answer in time: no worker polls its task queue, or Temporal is down. */
export class ShelfUnavailableError extends Error {
  override name = 'ShelfUnavailableError';
}

// By their contract names, with the workflow's types: loading the workflow module would cost every
// command that reads the shelf its start-up.

/** Reads and changes one namespace's shelf. */
export class ShelfClient {
  readonly workflowId: string;
  private readonly options: ShelfClientOptions;

  constructor(options: ShelfClientOptions) {
    this.options = options;
    this.workflowId = options.workflowId ?? shelfWorkflowId(options.taskQueue);
  }

  /** The shelf (servers, grants, the newest changes, version); the empty shelf before its first change. */
  async read(): Promise<ShelfState> {
    const handle = this.options.client.workflow.getHandle<typeof dmcpShelf>(this.workflowId);
    try {
      return await this.withinTimeout(() => handle.query(queryDef));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError || grpcCode(err) === 5) return emptyShelf();
      throw this.mapped(err);
    }
  }

  /**
   * Puts a server on the shelf, and grants it to `agent` at once when given. Refused (ShelfInputError)
   * when the name or entry is not valid, when the entry would write a secret into history, or when
   * the name is on the shelf with another entry.
   */
  add(name: string, entry: ShelfEntry, options: ChangeOptions & { agent?: string } = {}): Promise<ShelfChangeResult> {
    const problem = shelfEntryProblem(name, entry, this.options.env ?? {});
    if (problem) return Promise.reject(problem);
    if (options.agent !== undefined) {
      const bad = agentIdProblem(options.agent);
      if (bad) return Promise.reject(new ShelfInputError(bad, 'agent'));
    }
    const key = this.key();
    if (key instanceof Error) return Promise.reject(key);
    const now = new Date().toISOString();
    return this.send(
      {
        op: 'add',
        server: { name, entry, addedAt: now, addedBy: this.options.by, proof: signShelfServer(key, name, entry) },
        ...(options.agent !== undefined
          ? {
              grant: {
                server: name,
                agent: options.agent,
                grantedAt: now,
                proof: signShelfGrant(key, name, options.agent, entry),
              },
            }
          : {}),
        by: this.options.by,
      },
      options,
    );
  }

  /**
   * Gives an agent a server that is on the shelf. The grant is signed for the server's entry as it
   * is now (read first), so it does not carry over to another entry put on the shelf under the name.
   */
  async grant(server: string, agent: string, options: ChangeOptions = {}): Promise<ShelfChangeResult> {
    const bad = agentIdProblem(agent);
    if (bad) throw new ShelfInputError(bad, 'agent');
    const key = this.key();
    if (key instanceof Error) throw key;
    const onShelf = (await this.read()).servers.find((s) => s.name === server);
    if (!onShelf)
      throw new ShelfInputError(
        `server: "${server}" is not on the shelf; add it first (durable-mcp mcp add ${server} ...)`,
        'server',
      );
    const proof = signShelfGrant(key, server, agent, onShelf.entry);
    return this.send(
      { op: 'grant', grant: { server, agent, grantedAt: new Date().toISOString(), proof }, by: this.options.by },
      options,
    );
  }

  /** Takes a server away from one agent; `changed: false` when the agent did not have it. */
  drop(server: string, agent: string, options: ChangeOptions = {}): Promise<ShelfChangeResult> {
    return this.send({ op: 'drop', server, agent, by: this.options.by }, options);
  }

  /** Takes a server off the shelf and away from every agent; `agents` are those that had it. */
  forget(server: string, options: ChangeOptions = {}): Promise<ShelfChangeResult> {
    return this.send({ op: 'forget', server, by: this.options.by }, options);
  }

  private key(): Buffer | ShelfInputError {
    return (
      this.options.turnKey ??
      new ShelfInputError(
        "adding to the shelf and granting need the operator's turn key (turn.key in DMCP_DATA_DIR, as the workers have it)",
        'turnKey',
      )
    );
  }

  private async send(change: ShelfChange, options: ChangeOptions): Promise<ShelfChangeResult> {
    const { client, taskQueue } = this.options;
    const input: ShelfRunInput =
      this.options.continueAsNewAfter !== undefined ? { continueAsNewAfter: this.options.continueAsNewAfter } : {};
    const start = new WithStartWorkflowOperation<typeof dmcpShelf>(WorkflowType.shelf, {
      workflowId: this.workflowId,
      taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    try {
      return await this.withinTimeout(() =>
        client.workflow.executeUpdateWithStart(changeDef, {
          args: [change],
          updateId: options.updateId ?? randomUUID(),
          startWorkflowOperation: start,
        }),
      );
    } catch (err) {
      throw this.mapped(err);
    }
  }

  private withinTimeout<T>(fn: () => Promise<T>): Promise<T> {
    return this.options.client.withDeadline(Date.now() + (this.options.timeoutMs ?? 20_000), fn);
  }

  /** A refusal by the shelf's validator becomes a ShelfInputError; no answer in time, ShelfUnavailableError. */
  private mapped(err: unknown): Error {
    if (err instanceof WorkflowUpdateFailedError) {
      const refused = applicationFailureOf(err);
      const detail = refused?.details?.[0] as RefusalDetail | undefined;
      return new ShelfInputError(refused?.message ?? err.message, detail?.field);
    }
    const code = grpcCode(err);
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || code === 4 /* DEADLINE_EXCEEDED */) {
      const seconds = Math.round((this.options.timeoutMs ?? 20_000) / 1000);
      return new ShelfUnavailableError(
        `the shelf (workflow ${this.workflowId}) did not answer within ${seconds} s: no worker polls task queue "${this.options.taskQueue}" (start one: durable-mcp worker, or durable-mcp dev)`,
      );
    }
    return err as Error;
  }
}

function grpcCode(err: unknown): number | undefined {
  return findCause(err, (e): e is Error & { code: number } => isGrpcServiceError(e))?.code;
}
