import {
  allHandlersFinished,
  condition,
  continueAsNew,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import {
  RefusalType,
  SHELF_LOG_KEPT,
  agentIdProblem,
  serverNameProblem,
  type ShelfChange,
  type ShelfChangeResult,
  type ShelfEntry,
  type ShelfGrant,
  type ShelfServer,
  type ShelfState,
} from '../contract/index.js';
import { shelfChangeUpdate, shelfQuery } from '../contract/definitions.js';
import { refusal } from './failures.js';

/** What the shelf workflow starts with, and carries into each next run. */
export interface ShelfRunInput {
  /** The shelf as the run before left it. */
  state?: ShelfState;
  /** Continue as new after this many changes in one run (default 1000), or earlier when Temporal suggests it. */
  continueAsNewAfter?: number;
}

/** Changes per run before continuing as new: well under Temporal's 2,000 Updates per run. */
const DEFAULT_CONTINUE_AS_NEW_AFTER = 1000;
/** The server-name rule of the config room (letters, digits, single `_`/`-` inside, at most 32). */
/** Bounds that keep one change, and so the history, small. */
const MAX_BY_CHARS = 200;
const MAX_ENTRY_CHARS = 16_384;

/**
 * Whether this workflow task runs on a worker of a worker deployment (deterministic on replay). An
 * unversioned worker has a build ID too, but no deployment name.
 */
const onVersionedWorker = () => Boolean(workflowInfo().currentDeploymentVersion?.deploymentName);

// On a versioned worker the shelf follows the current build instead of staying pinned (the worker's
// default): it never ends, so pinned it would keep its first build running for ever. The price: a
// change to this workflow must replay the shelf's histories of the builds before. An unversioned
// worker refuses a task that names a versioning behaviour, hence the getter.
setWorkflowOptions(() => (onVersionedWorker() ? { versioningBehavior: 'AUTO_UPGRADE' } : {}), dmcpShelf);

/**
 * The namespace's shelf of servers and grants: one long-running workflow whose history is the
 * record of every change. It only holds what clients signed; workers check the proofs.
 */
export async function dmcpShelf(input: ShelfRunInput = {}): Promise<void> {
  const shelf = new Shelf(input.state);
  let changes = 0;
  setHandler(shelfQuery, () => shelf.state());
  setHandler(
    shelfChangeUpdate,
    (change) => {
      changes += 1;
      return shelf.apply(change, new Date(Date.now()).toISOString());
    },
    {
      // A refused change leaves no trace in history.
      validator: (change) => {
        const problem = shelf.problem(change);
        // Every problem names its field first (`url: ...`); the field also travels as data.
        if (!problem) return;
        const field = /^(\S+): /.exec(problem)?.[1];
        throw refusal(RefusalType.shelfChange, problem, field === undefined ? undefined : { field });
      },
    },
  );
  const limit = input.continueAsNewAfter ?? DEFAULT_CONTINUE_AS_NEW_AFTER;
  // A run started on unversioned workers keeps the behaviour it started with, which pins it to the
  // first versioned build that takes it: a new run there auto-upgrades.
  const startedVersioned = onVersionedWorker();
  await condition(
    () => changes >= limit || workflowInfo().continueAsNewSuggested || (!startedVersioned && onVersionedWorker()),
  );
  await condition(allHandlersFinished);
  await continueAsNew<typeof dmcpShelf>({ ...input, state: shelf.state() });
}

class Shelf {
  private readonly servers: Map<string, ShelfServer>;
  private grants: ShelfGrant[];
  private readonly log: ShelfState['log'];
  private version: number;

  constructor(state?: ShelfState) {
    this.servers = new Map((state?.servers ?? []).map((s) => [s.name, s]));
    this.grants = [...(state?.grants ?? [])];
    this.log = [...(state?.log ?? [])];
    this.version = state?.version ?? 0;
  }

  state(): ShelfState {
    return { servers: [...this.servers.values()], grants: [...this.grants], log: [...this.log], version: this.version };
  }

  /** Why a change is refused, naming the field first (`url: ...`), or undefined. */
  problem(change: ShelfChange): string | undefined {
    if (typeof change !== 'object' || change === null) return 'change: expected an object';
    if (typeof change.by !== 'string' || change.by.length > MAX_BY_CHARS)
      return `by: expected a string of at most ${MAX_BY_CHARS} characters`;
    switch (change.op) {
      case 'add': {
        const { server, grant } = change;
        const bad =
          nameProblem(server?.name) ?? entryProblem(server?.entry) ?? proofProblem(server?.proof, 'server.proof');
        if (bad) return bad;
        if (grant !== undefined) {
          if (grant.server !== server.name)
            return `grant.server: the grant is for "${String(grant.server)}", the server is "${server.name}"`;
          const badGrant = agentProblem(grant.agent) ?? proofProblem(grant.proof, 'grant.proof');
          if (badGrant) return badGrant;
        }
        const existing = this.servers.get(server.name);
        if (existing) {
          const field = differingField(existing.entry, server.entry);
          if (field) {
            return `${field}: "${server.name}" is on the shelf already with another ${field}; take it off first (durable-mcp mcp forget ${server.name}) or choose another name`;
          }
        }
        return undefined;
      }
      case 'grant': {
        const { grant } = change;
        const bad =
          nameProblem(grant?.server, 'server') ??
          agentProblem(grant?.agent) ??
          proofProblem(grant?.proof, 'grant.proof');
        if (bad) return bad;
        if (!this.servers.has(grant.server))
          return `server: "${grant.server}" is not on the shelf; add it first (durable-mcp mcp add ${grant.server} ...)`;
        return undefined;
      }
      case 'drop':
        return nameProblem(change.server, 'server') ?? agentProblem(change.agent);
      case 'forget':
        return nameProblem(change.server, 'server');
      default:
        return `op: expected "add", "grant", "drop" or "forget", got ${JSON.stringify((change as { op?: unknown }).op)}`;
    }
  }

  apply(change: ShelfChange, at: string): ShelfChangeResult {
    let changed = false;
    let agents: string[] | undefined;
    const record = (agent?: string) => {
      changed = true;
      this.version += 1;
      this.log.push({
        at,
        by: change.by,
        op: change.op,
        server: serverOf(change),
        ...(agent !== undefined ? { agent } : {}),
      });
      if (this.log.length > SHELF_LOG_KEPT) this.log.splice(0, this.log.length - SHELF_LOG_KEPT);
    };
    switch (change.op) {
      case 'add': {
        const existing = this.servers.get(change.server.name);
        const added = existing === undefined;
        // The same entry with another proof (a rotated turn key, or a proof that never held) is
        // signed again: putting it back is how the operator repairs it.
        const resigned = existing !== undefined && existing.proof !== change.server.proof;
        if (added || resigned) this.servers.set(change.server.name, { ...change.server, addedAt: at });
        const granted = change.grant !== undefined && this.addGrant(change.grant, at);
        if (added || resigned || granted) record(change.grant?.agent);
        break;
      }
      case 'grant':
        if (this.addGrant(change.grant, at)) record(change.grant.agent);
        break;
      case 'drop': {
        const before = this.grants.length;
        this.grants = this.grants.filter((g) => !(g.server === change.server && g.agent === change.agent));
        if (this.grants.length < before) record(change.agent);
        break;
      }
      case 'forget': {
        agents = this.grants.filter((g) => g.server === change.server).map((g) => g.agent);
        const had = this.servers.delete(change.server);
        this.grants = this.grants.filter((g) => g.server !== change.server);
        if (had) record();
        break;
      }
    }
    return { changed, version: this.version, ...(agents !== undefined ? { agents } : {}) };
  }

  private addGrant(grant: ShelfGrant, at: string): boolean {
    const i = this.grants.findIndex((g) => g.server === grant.server && g.agent === grant.agent);
    if (i >= 0 && this.grants[i]!.proof === grant.proof) return false;
    // A grant given again with another proof replaces the old one (see 'add').
    if (i >= 0) this.grants.splice(i, 1);
    this.grants.push({ ...grant, grantedAt: at });
    return true;
  }
}

function serverOf(change: ShelfChange): string {
  if (change.op === 'add') return change.server.name;
  if (change.op === 'grant') return change.grant.server;
  return change.server;
}

function nameProblem(name: unknown, field = 'name'): string | undefined {
  if (typeof name === 'string' && serverNameProblem(name) === undefined) return undefined;
  return `${field}: ${JSON.stringify(name)} is not a server name (a letter first; letters, digits, single "_" or "-" between them; at most 32)`;
}

function agentProblem(agent: unknown): string | undefined {
  if (typeof agent !== 'string') return 'agent: expected an agent ID';
  const bad = agentIdProblem(agent);
  return bad ? `agent: ${bad}` : undefined;
}

function proofProblem(proof: unknown, field: string): string | undefined {
  return typeof proof === 'string' && /^[0-9a-f]{64}$/.test(proof)
    ? undefined
    : `${field}: expected the turn key's proof (64 hex digits)`;
}

function isStringMap(value: unknown): boolean {
  return (
    value === undefined ||
    (typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      Object.values(value).every((v) => typeof v === 'string'))
  );
}

function entryProblem(entry: unknown): string | undefined {
  if (typeof entry !== 'object' || entry === null) return 'entry: expected an object';
  if (JSON.stringify(entry).length > MAX_ENTRY_CHARS) return `entry: larger than ${MAX_ENTRY_CHARS} characters`;
  const e = entry as Record<string, unknown>;
  if (e.type === 'http' || e.type === 'sse') {
    if (typeof e.url !== 'string' || !/^https?:\/\//i.test(e.url)) return 'url: expected an http:// or https:// URL';
    if (!isStringMap(e.headers)) return 'headers: expected names to strings';
    return undefined;
  }
  if (e.type === 'stdio') {
    if (typeof e.command !== 'string' || e.command === '') return 'command: expected a command';
    if (!Array.isArray(e.args) || !e.args.every((a) => typeof a === 'string'))
      return 'args: expected a list of strings';
    if (!isStringMap(e.env)) return 'env: expected names to strings';
    return undefined;
  }
  return `type: expected "http", "sse" or "stdio", got ${JSON.stringify(e.type)}`;
}

/** The first field in which two entries differ (`url`, `headers.X-Team`, `args`), or undefined when they are the same. */
function differingField(a: ShelfEntry, b: ShelfEntry): string | undefined {
  if (a.type !== b.type) return 'type';
  if (a.type === 'stdio' && b.type === 'stdio') {
    if (a.command !== b.command) return 'command';
    if (a.args.length !== b.args.length || a.args.some((x, i) => x !== b.args[i])) return 'args';
    return mapDifference('env', a.env, b.env);
  }
  if (a.type !== 'stdio' && b.type !== 'stdio') {
    if (a.url !== b.url) return 'url';
    return mapDifference('headers', a.headers, b.headers);
  }
  return 'type';
}

function mapDifference(
  field: string,
  a: Record<string, string> = {},
  b: Record<string, string> = {},
): string | undefined {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  const key = keys.find((k) => a[k] !== b[k]);
  return key === undefined ? undefined : `${field}.${key}`;
}
