/**
 * `durable-mcp mcp ...`: the shelf of servers and the agents they are granted to, and logins.
 * Connects like `run` (TEMPORAL_ADDRESS, a running `dev`, else the embedded dev server with an
 * in-process worker, which then serves the shelf). What only these commands need is loaded when
 * one of them runs.
 */
import { hostname, userInfo } from 'node:os';
import type { Command } from 'commander';
import type { ProtocolEra, ShelfEntry, ShelfOAuthClient, ShelfServer, ShelfState } from '../../contract/index.js';
import { isMachineGrant } from '../../contract/shelf.js';
import type { AddArguments } from '../../plane/shelf.js';
import type { ShelfClient } from '../../plane/shelfClient.js';
import type { Settings } from '../../settings/index.js';
import { stripTerminalControls, terminalJson } from '../../text/terminal.js';
import { sameServerUrl } from '../../text/sameUrl.js';
import { cliLogger, collect, commandSettings, packageVersion, progress } from '../common.js';

const print = (line: string) => process.stdout.write(`${stripTerminalControls(line)}\n`);

// --- what `mcp list` shows (pure) ---

/** What `mcp list` learned about one server besides the shelf. */
export interface ServerFacts {
  /** The token store's login ID, when the server has a login. */
  loginId?: string;
  /** When the authorization server refused the login's refresh: it is over until a new login. */
  expiredAt?: Date;
  /** The address the login was made for (a server forgotten and put back elsewhere keeps its old login file). */
  loginUrl?: string;
  /** A login started and not finished. */
  pendingSince?: Date;
  /** Scopes the server refused the login's token for (403 `insufficient_scope`): a new login asks for them. */
  wantedScope?: string;
  /** The authorization server the server's metadata names instead of the login's: a new login registers there. */
  movedTo?: string;
  /** What one connection attempt learned (remote servers that some agent has). */
  probe?: ProbeResult;
}

export type ProbeResult =
  | { kind: 'reachable'; era?: ProtocolEra }
  | { kind: 'unauthorized' }
  | { kind: 'unreachable'; why: string }
  | { kind: 'not_probed'; why: string };

export interface ListRow {
  name: string;
  transport: ShelfEntry['type'];
  /** The URL, or the command line. */
  where: string;
  state: string;
  agents: string[];
  addedAt: string;
  addedBy: string;
}

/** The command line of a stdio entry, quoted where a word needs it. */
export function commandLine(entry: ShelfEntry): string {
  if (entry.type !== 'stdio') return entry.url;
  return [entry.command, ...entry.args]
    .map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}

/**
 * One server's state: `not granted` (no agent has it), `command` (a stdio server, not probed),
 * `logged in`, `logged in, wants more access (scope ...)`, `its authorization server moved to ...`, `login started <time>, not finished`, `wants an account`, `reachable`,
 * `unreachable: <why>`.
 */
export function serverState(server: ShelfServer, agents: string[], facts: ServerFacts): string {
  if (agents.length === 0) return 'not granted';
  if (server.entry.type === 'stdio') return 'command';
  if (isMachineGrant(server.entry.oauth?.grant)) return machineState(server.name, server.entry.oauth, facts);
  if (facts.loginId !== undefined && facts.loginUrl !== undefined && !sameServerUrl(facts.loginUrl, server.entry.url)) {
    return `logged in for another address (${facts.loginUrl}), so not used: durable-mcp mcp login ${server.name}`;
  }
  if (facts.loginId !== undefined && facts.movedTo)
    return `its authorization server moved to ${facts.movedTo}: durable-mcp mcp login ${server.name}`;
  if (facts.loginId !== undefined && facts.expiredAt)
    return `login expired or revoked ${facts.expiredAt.toISOString()}: durable-mcp mcp login ${server.name}`;
  if (facts.loginId !== undefined && facts.wantedScope)
    return `logged in, wants more access (scope ${facts.wantedScope}): durable-mcp mcp login ${server.name}`;
  if (facts.loginId !== undefined) return 'logged in';
  if (facts.pendingSince)
    return `login started ${facts.pendingSince.toISOString()}, not finished: durable-mcp mcp login ${server.name}`;
  const probe = facts.probe;
  if (!probe) return 'not probed';
  switch (probe.kind) {
    case 'reachable':
      return probe.era ? `reachable (${probe.era === 'modern' ? 'MCP 2026-07-28' : 'legacy MCP'})` : 'reachable';
    case 'unauthorized':
      return hasAuthorizationHeader(server.entry)
        ? 'reachable (answers 401 without the bearer token the workers send)'
        : `wants an account: durable-mcp mcp login ${server.name}`;
    case 'unreachable':
      return `unreachable: ${probe.why}`;
    case 'not_probed':
      return `not probed: ${probe.why}`;
  }
}

/** A machine login's state: it needs no login, whatever the token store holds, unless its pinned authorization server moved. */
function machineState(name: string, client: ShelfOAuthClient, facts: ServerFacts): string {
  const variable = client.privateKeyEnv ?? client.clientSecretEnv;
  const scope = facts.wantedScope
    ? `; wants more access (scope ${facts.wantedScope}), asked for at the next grant`
    : '';
  const moved =
    facts.loginId !== undefined && facts.movedTo
      ? `; its authorization server moved to ${facts.movedTo}, where no grant is made: if the move is expected, durable-mcp mcp logout ${name}`
      : '';
  if (client.grant === 'id_jag')
    return `cross-app access (the workers exchange the ID token in ${client.idTokenEnv} at the identity provider, then present it with ${variable})${scope}${moved}`;
  return `client credentials (the workers get tokens with ${variable})${scope}${moved}`;
}

function hasAuthorizationHeader(entry: ShelfEntry): boolean {
  return entry.type !== 'stdio' && Object.keys(entry.headers ?? {}).some((k) => k.toLowerCase() === 'authorization');
}

/** The rows of `mcp list`, by server name. */
export function listRows(state: ShelfState, facts: ReadonlyMap<string, ServerFacts>): ListRow[] {
  return [...state.servers]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((s) => {
      const agents = state.grants
        .filter((g) => g.server === s.name)
        .map((g) => g.agent)
        .sort();
      return {
        name: s.name,
        transport: s.entry.type,
        where: commandLine(s.entry),
        state: serverState(s, agents, facts.get(s.name) ?? {}),
        agents,
        addedAt: s.addedAt,
        addedBy: s.addedBy,
      };
    });
}

/** Rows as an aligned table with a header line. */
export function renderTable(rows: ListRow[]): string[] {
  const table = [
    ['SERVER', 'TRANSPORT', 'WHERE', 'STATE', 'AGENTS'],
    ...rows.map((r) => [r.name, r.transport, r.where, r.state, r.agents.join(', ') || '-']),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** The log as lines, oldest first. */
export function renderLog(state: ShelfState): string[] {
  return state.log.map(
    (e) => `${e.at}  ${e.op.padEnd(6)}  ${e.server}${e.agent !== undefined ? ` (agent ${e.agent})` : ''}  by ${e.by}`,
  );
}

// --- probing ---

/**
 * One connection attempt as a worker makes it (the pool's transport and era negotiation), without
 * the entry's headers (their values are the workers' to resolve) and without a token. 401: it
 * wants an account. A session it opened is ended.
 */
export async function probeServer(entry: ShelfEntry, timeoutMs: number): Promise<ProbeResult> {
  if (entry.type === 'stdio') return { kind: 'not_probed', why: 'a command' };
  const { probeRemote } = await import('../../mcp/probe.js');
  const probe = await probeRemote(
    { type: entry.type, url: entry.url },
    { timeoutMs, clientInfo: { name: 'durable-mcp mcp list', version: packageVersion() } },
  );
  switch (probe.kind) {
    case 'reachable':
      return { kind: 'reachable', era: probe.era };
    case 'unauthorized':
      return { kind: 'unauthorized' };
    default:
      return probe;
  }
}

// --- the commands ---

/** Who the shelf's log says made a change from this command line. */
function cliBy(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No user name on this system: the log still says it came from the CLI.
  }
  return `cli ${user}@${hostname()}`;
}

/** What the token store says of one server's login (not secret: IDs and times). */
export type LoginFacts = (
  server: string,
) => Promise<Pick<ServerFacts, 'loginId' | 'pendingSince' | 'expiredAt' | 'loginUrl' | 'wantedScope' | 'movedTo'>>;

interface ShelfCommandContext {
  shelf: ShelfClient;
  settings: Settings;
  /** The turn key, read when the command signs (or checks) shelf entries. */
  turnKey?: Buffer;
  close(): Promise<void>;
}

/** Connects like `run` does and builds the shelf client; the turn key is read only when `signing`. */
async function openShelf(signing: boolean): Promise<ShelfCommandContext> {
  const [{ connect, stopOnSignals }, { ShelfClient }, { ensureTurnKey, readTurnKey, turnKeyFile }] = await Promise.all([
    import('../embedded.js'),
    import('../../plane/shelfClient.js'),
    import('../../config/load.js'),
  ]);
  const settings = commandSettings();
  const logger = cliLogger(settings, 'warn');
  // The embedded case needs its in-process worker: the shelf workflow runs on a worker like any other.
  const session = await connect({ logger, withWorker: true, settings, env: process.env, progress });
  stopOnSignals(session);
  try {
    let turnKey: Buffer | undefined;
    if (signing) {
      // A cluster's workers check proofs with their own key file: a key made up here would sign
      // changes no worker honours, so only the local cases create one.
      if (session.mode === 'TEMPORAL_ADDRESS') {
        const file = turnKeyFile(settings.dataDir);
        turnKey = await readTurnKey(file).catch((err: NodeJS.ErrnoException) => {
          throw new ShelfCommandError(
            err.code === 'ENOENT'
              ? `no turn key at ${file}: copy the workers' turn.key there (mode 0600), or set DMCP_DATA_DIR to the folder holding it; the shelf only takes changes signed with it`
              : err.message,
          );
        });
      } else {
        turnKey = await ensureTurnKey(settings.dataDir);
      }
    }
    const shelf = new ShelfClient({
      client: session.client.client,
      taskQueue: session.client.taskQueue,
      turnKey,
      by: cliBy(),
      env: process.env,
    });
    return { shelf, settings, ...(turnKey ? { turnKey } : {}), close: () => session.close() };
  } catch (err) {
    await session.close();
    throw err;
  }
}

/** A refusal: one line on stderr and exit code 2. */
class ShelfCommandError extends Error {}

/** Runs one shelf command: refusals print one line and exit 2; everything else goes to the CLI's handler. */
async function shelfCommand(signing: boolean, body: (ctx: ShelfCommandContext) => Promise<number>): Promise<void> {
  const { ShelfInputError } = await import('../../plane/shelf.js');
  let ctx: ShelfCommandContext | undefined;
  try {
    ctx = await openShelf(signing);
    process.exitCode = await body(ctx);
  } catch (err) {
    if (err instanceof ShelfInputError || err instanceof ShelfCommandError) {
      process.stderr.write(`error: ${stripTerminalControls(err.message)}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  } finally {
    await ctx?.close();
  }
}

/** Refuses bad arguments before anything connects. */
async function checked<T>(fn: () => T | Promise<T>): Promise<T | undefined> {
  const { ShelfInputError } = await import('../../plane/shelf.js');
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ShelfInputError)) throw err;
    process.stderr.write(`error: ${stripTerminalControls(err.message)}\n`);
    process.exitCode = 2;
    return undefined;
  }
}

/** What the program was given (commander keeps it; `--` is not among the parsed operands). */
function rawArgs(program: Command): string[] {
  return (program as Command & { rawArgs?: string[] }).rawArgs ?? process.argv;
}

function describe(name: string, entry: ShelfEntry): string {
  return `${name} (${entry.type} ${commandLine(entry)})`;
}

/** The machine-login flags of `mcp add`, which parseAddArguments takes as commander gives them. */
type MachineAddFlags = Pick<
  AddArguments,
  | 'clientCredentials'
  | 'privateKeyEnv'
  | 'signingAlgorithm'
  | 'idJag'
  | 'idpTokenEndpoint'
  | 'idpClientId'
  | 'idTokenEnv'
>;

interface AddOptions extends MachineAddFlags, Pick<AddArguments, 'clientId' | 'clientSecretEnv'> {
  agent: string[];
  header: string[];
  env: string[];
}

/** The machine-login flags of `mcp add`, as {@link parseAddArguments} takes them. */
function machineAddArguments(opts: AddOptions): MachineAddFlags {
  return {
    ...(opts.idJag ? { idJag: true } : {}),
    ...(opts.idpTokenEndpoint !== undefined ? { idpTokenEndpoint: opts.idpTokenEndpoint } : {}),
    ...(opts.idpClientId !== undefined ? { idpClientId: opts.idpClientId } : {}),
    ...(opts.idTokenEnv !== undefined ? { idTokenEnv: opts.idTokenEnv } : {}),
    ...(opts.clientCredentials ? { clientCredentials: true } : {}),
    ...(opts.privateKeyEnv !== undefined ? { privateKeyEnv: opts.privateKeyEnv } : {}),
    ...(opts.signingAlgorithm !== undefined ? { signingAlgorithm: opts.signingAlgorithm } : {}),
  };
}

async function addCommand(program: Command, name: string, target: string[], opts: AddOptions): Promise<void> {
  const { parseAddArguments, shelfEntryProblem, workerVariablesOf, ShelfInputError } = await import(
    '../../plane/shelf.js'
  );
  const { agentIdProblem } = await import('../../contract/index.js');
  const parsed = await checked(() => {
    const p = parseAddArguments(name, {
      target,
      headers: opts.header,
      env: opts.env,
      afterDashes: rawArgs(program).includes('--'),
      ...(opts.clientId !== undefined ? { clientId: opts.clientId } : {}),
      ...(opts.clientSecretEnv !== undefined ? { clientSecretEnv: opts.clientSecretEnv } : {}),
      ...machineAddArguments(opts),
    });
    const problem = shelfEntryProblem(p.name, p.entry, process.env);
    if (problem) throw problem;
    for (const agent of opts.agent) {
      const bad = agentIdProblem(agent);
      if (bad) throw new ShelfInputError(`--agent: ${bad}`, 'agent');
    }
    return p;
  });
  if (!parsed) return;
  const [first, ...more] = opts.agent;
  await shelfCommand(true, async ({ shelf }) => {
    // Read first only to say what happened: an add of a name already there may still grant.
    const before = await shelf.read();
    const existed = before.servers.some((s) => s.name === parsed.name);
    const results = [await shelf.add(parsed.name, parsed.entry, first !== undefined ? { agent: first } : {})];
    for (const agent of more) results.push(await shelf.grant(parsed.name, agent));
    const granted = opts.agent;
    const version = Math.max(...results.map((r) => r.version));
    if (!existed)
      print(
        `added ${describe(parsed.name, parsed.entry)}${granted.length > 0 ? `; granted to ${granted.join(', ')}` : ''} (shelf version ${version})`,
      );
    else if (results.some((r) => r.changed))
      print(
        `${parsed.name} is on the shelf already with this entry; granted to ${granted.join(', ')} (shelf version ${version})`,
      );
    else
      print(
        `${parsed.name} is on the shelf already with this entry${granted.length > 0 ? ` and granted to ${granted.join(', ')}` : ''}; nothing changed`,
      );
    const machine =
      parsed.entry.type !== 'stdio' && isMachineGrant(parsed.entry.oauth?.grant) ? parsed.entry.oauth : undefined;
    const secretEnv =
      parsed.entry.type !== 'stdio' ? (machine?.privateKeyEnv ?? parsed.entry.oauth?.clientSecretEnv) : undefined;
    const variables = workerVariablesOf(parsed.entry, process.env).filter(
      (v) => v !== secretEnv && v !== machine?.idTokenEnv,
    );
    if (machine?.grant === 'id_jag')
      print(
        `  a cross-app access login: the workers exchange the user's ID token in ${machine.idTokenEnv} at ${machine.idpTokenEndpoint} and present the grant with the client secret in ${secretEnv} (both listed in their DMCP_MCP_ENV); no mcp login needed`,
      );
    else if (machine)
      print(
        `  a machine login: the workers get its tokens by the client-credentials grant, with the ${machine.privateKeyEnv !== undefined ? 'private key (PEM)' : 'client secret'} in ${secretEnv} (listed in their DMCP_MCP_ENV); no mcp login needed`,
      );
    else if (secretEnv !== undefined)
      print(
        `  the client secret is read from ${secretEnv}: set it where durable-mcp mcp login runs, and on the workers (listed in their DMCP_MCP_ENV) for refreshes`,
      );
    if (variables.length > 0)
      print(
        `  workers hand ${variables.join(', ')} to it only when their DMCP_MCP_ENV lists ${variables.length > 1 ? 'them' : 'it'}`,
      );
    if (granted.length === 0) print(`  no agent has it yet: durable-mcp mcp grant ${parsed.name} --agent <id>`);
    if (parsed.entry.type !== 'stdio' && !machine)
      print(`  if it wants an account: durable-mcp mcp login ${parsed.name}`);
    return 0;
  });
}

/** `--agent` given at least once; commander's required options count a default of [] as given. */
function needAgents(command: string, agents: string[]): boolean {
  if (agents.length > 0) return true;
  process.stderr.write(
    `error: mcp ${command} needs --agent <id> (the agent to ${command === 'grant' ? 'give it to' : 'take it from'})\n`,
  );
  process.exitCode = 2;
  return false;
}

async function grantCommand(server: string, opts: { agent: string[] }): Promise<void> {
  if (!needAgents('grant', opts.agent)) return;
  await shelfCommand(true, async ({ shelf }) => {
    for (const agent of opts.agent) {
      const r = await shelf.grant(server, agent);
      print(
        r.changed
          ? `granted ${server} to ${agent} (shelf version ${r.version})`
          : `${agent} has ${server} already; nothing changed`,
      );
    }
    return 0;
  });
}

async function dropCommand(server: string, opts: { agent: string[] }): Promise<void> {
  if (!needAgents('drop', opts.agent)) return;
  await shelfCommand(false, async ({ shelf }) => {
    for (const agent of opts.agent) {
      const r = await shelf.drop(server, agent);
      print(
        r.changed
          ? `dropped ${server} from ${agent} (shelf version ${r.version}); its next turn goes without it`
          : `${agent} does not have ${server}; nothing changed`,
      );
    }
    return 0;
  });
}

async function forgetCommand(server: string): Promise<void> {
  await shelfCommand(false, async ({ shelf }) => {
    const r = await shelf.forget(server);
    if (!r.changed) {
      print(`${server} is not on the shelf; nothing changed`);
      return 0;
    }
    const agents = [...(r.agents ?? [])].sort();
    print(
      `forgot ${server} (shelf version ${r.version})${agents.length > 0 ? `; taken from ${agents.join(', ')} as of their next turn` : ''}`,
    );
    return 0;
  });
}

/** The token store's facts for `mcp list`; none when the store cannot be opened (the list still shows the rest). */
async function loginFacts(settings: Settings): Promise<{ facts: LoginFacts; warning?: string }> {
  try {
    const { tokenStoreFromSettings } = await import('../../plane/tokenStore.js');
    const store = await tokenStoreFromSettings(settings);
    return {
      facts: async (server) => {
        const { loginId, pendingSince, expiredAt } = await store.loginState(server);
        const record = loginId !== undefined ? await store.read(server).catch(() => undefined) : undefined;
        const loginUrl = record?.serverUrl;
        return {
          ...(loginId !== undefined ? { loginId } : {}),
          ...(pendingSince ? { pendingSince } : {}),
          ...(expiredAt ? { expiredAt } : {}),
          ...(loginUrl !== undefined ? { loginUrl } : {}),
          ...(record?.wantedScope ? { wantedScope: record.wantedScope } : {}),
          ...(record?.movedTo !== undefined ? { movedTo: record.movedTo } : {}),
        };
      },
    };
  } catch (err) {
    return { facts: async () => ({}), warning: `logins not read: ${(err as Error).message}` };
  }
}

async function listCommand(opts: { json?: boolean; probeTimeout: string }): Promise<void> {
  const timeoutMs = Number(opts.probeTimeout) * 1000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    process.stderr.write(
      `error: --probe-timeout must be a positive number of seconds, got ${JSON.stringify(opts.probeTimeout)}\n`,
    );
    process.exitCode = 2;
    return;
  }
  await shelfCommand(false, async ({ shelf, settings }) => {
    const state = await shelf.read();
    const logins = await loginFacts(settings);
    const granted = new Set(state.grants.map((g) => g.server));
    const facts = new Map<string, ServerFacts>();
    await Promise.all(
      state.servers.map(async (s) => {
        if (!granted.has(s.name) || s.entry.type === 'stdio') return;
        const login = await logins.facts(s.name);
        const probe =
          login.loginId === undefined && !login.pendingSince && !isMachineGrant(s.entry.oauth?.grant)
            ? await probeServer(s.entry, timeoutMs)
            : undefined;
        facts.set(s.name, { ...login, ...(probe ? { probe } : {}) });
      }),
    );
    const rows = listRows(state, facts);
    if (opts.json) {
      const entries = new Map(state.servers.map((s) => [s.name, s.entry]));
      process.stdout.write(
        `${terminalJson({ version: state.version, servers: rows.map((r) => ({ ...r, entry: entries.get(r.name) })) }, 2)}\n`,
      );
      return 0;
    }
    if (logins.warning) process.stderr.write(`warning: ${stripTerminalControls(logins.warning)}\n`);
    if (rows.length === 0) {
      print(
        'the shelf is empty: durable-mcp mcp add <name> <url>, or durable-mcp mcp add <name> -- <command> [args...]',
      );
      return 0;
    }
    for (const line of renderTable(rows)) print(line);
    return 0;
  });
}

async function logCommand(opts: { json?: boolean }): Promise<void> {
  await shelfCommand(false, async ({ shelf }) => {
    const state = await shelf.read();
    if (opts.json) {
      process.stdout.write(
        `${terminalJson({ version: state.version, workflowId: shelf.workflowId, log: state.log }, 2)}\n`,
      );
      return 0;
    }
    if (state.log.length === 0) {
      print('no changes yet');
      return 0;
    }
    for (const line of renderLog(state)) print(line);
    print(
      `(the newest ${state.log.length} change${state.log.length === 1 ? '' : 's'}; the history of workflow ${shelf.workflowId} holds every one)`,
    );
    return 0;
  });
}

/** The shelf entry of `server`, or a refusal naming what to do. */
async function remoteEntry(
  shelf: ShelfClient,
  server: string,
  turnKey: Buffer | undefined,
): Promise<{ url: string; oauth?: ShelfOAuthClient }> {
  const state = await shelf.read();
  const found = state.servers.find((s) => s.name === server);
  if (!found) throw new ShelfCommandError(`${server} is not on the shelf: durable-mcp mcp add ${server} <url> first`);
  if (found.entry.type === 'stdio')
    throw new ShelfCommandError(`${server} is a command, not a remote server: there is nothing to log in to`);
  // Whoever can send the shelf Updates could have put another address under this name: the
  // operator's browser is sent only to an address a holder of the turn key put there.
  const { verifyShelfServer } = await import('../../plane/shelf.js');
  if (turnKey && !verifyShelfServer(turnKey, found)) {
    throw new ShelfCommandError(
      `${server} (${found.entry.url}) is not signed with this deployment's turn key, so no worker uses it; check the address, then put it back: durable-mcp mcp forget ${server} && durable-mcp mcp add ${server} <url>`,
    );
  }
  if (found.entry.url.includes('${')) {
    throw new ShelfCommandError(
      `${server}: its url ${found.entry.url} holds a variable that only the workers resolve; a login needs the address itself on the shelf`,
    );
  }
  return { url: found.entry.url, ...(found.entry.oauth ? { oauth: found.entry.oauth } : {}) };
}

const printError = (line: string) => process.stderr.write(`error: ${stripTerminalControls(line)}\n`);

async function loginCli(
  server: string,
  address: string | undefined,
  opts: { browser: boolean; wait: boolean },
): Promise<void> {
  let found: { url: string; oauth?: ShelfOAuthClient; settings: Settings } | undefined;
  // The shelf is read and the connection closed before the login waits for the browser.
  await shelfCommand(true, async ({ shelf, settings, turnKey }) => {
    found = { ...(await remoteEntry(shelf, server, turnKey)), settings };
    return 0;
  });
  if (!found) return;
  if (isMachineGrant(found.oauth?.grant)) {
    const { machineLoginCommand } = await import('../machineLogin.js');
    process.exitCode = await machineLoginCommand({
      server,
      serverUrl: found.url,
      client: { ...found.oauth, grant: found.oauth.grant },
      settings: found.settings,
      out: print,
      err: printError,
    });
    return;
  }
  const { loginCommand } = await import('../login.js');
  process.exitCode = await loginCommand({
    server,
    serverUrl: found.url,
    settings: found.settings,
    out: print,
    err: printError,
    env: process.env,
    ...(found.oauth ? { client: found.oauth } : {}),
    ...(address !== undefined ? { redirect: address } : {}),
    ...(opts.browser ? {} : { noBrowser: true }),
    ...(opts.wait ? {} : { noWait: true }),
  });
}

async function logoutCli(server: string): Promise<void> {
  const { logoutCommand } = await import('../login.js');
  // No shelf needed: a login outlives a forgotten server until it is logged out.
  process.exitCode = await logoutCommand({ server, settings: commandSettings(), out: print, err: printError });
}

async function rekeyCli(): Promise<void> {
  const { rekeyCommand } = await import('../login.js');
  process.exitCode = await rekeyCommand({ settings: commandSettings(), out: print, err: printError });
}

/**
 * `mcp client-metadata`: the client ID metadata document to host at DMCP_OAUTH_CLIENT_METADATA_URL
 * (its `client_id` is that address; its redirect is this machine's callback port). Exit 1 when the
 * variable is not set.
 */
async function clientMetadataCli(): Promise<void> {
  const settings = commandSettings();
  const url = settings.oauth.clientMetadataUrl;
  if (url === undefined) {
    process.stderr.write(
      'DMCP_OAUTH_CLIENT_METADATA_URL is not set: set it to the https address where you will host the document (https://example.com/durable-mcp/client.json), then run durable-mcp mcp client-metadata again\n',
    );
    process.exitCode = 1;
    return;
  }
  const { callbackUrl, clientMetadataFor } = await import('../../plane/oauth.js');
  process.stdout.write(
    `${JSON.stringify(clientMetadataFor(callbackUrl(settings.oauth.callbackPort), url), null, 2)}\n`,
  );
}

/** Adds `durable-mcp mcp ...` to the program. */
export function registerMcpCommand(program: Command): void {
  const mcp = program
    .command('mcp')
    .description('the shelf: servers registered once and granted to agents by name, and their logins');
  mcp
    .command('add')
    .description('put a server on the shelf: <name> <url>, <name> sse <url>, or <name> -- <command> [args...]')
    .argument('<name>', 'the server name agents see (mcp__<name>__<tool>)')
    .argument('[target...]', 'a URL (Streamable HTTP), "sse <url>", or after "--" a command and its arguments')
    .option('--agent <id>', 'grant it to this agent at once (repeatable; before "--")', collect, [])
    .option(
      '--header <header>',
      "a header of a remote server, 'Name: value' (repeatable; ${VAR} is resolved on the workers)",
      collect,
      [],
    )
    .option(
      '--env <pair>',
      'a variable of a command, NAME=value (repeatable; ${VAR} is resolved on the workers)',
      collect,
      [],
    )
    .option(
      '--client-id <id>',
      'log in as this client, registered with the authorization server beforehand (for servers without dynamic registration)',
    )
    .option(
      '--client-secret-env <VAR>',
      "the variable holding that client's secret (where mcp login runs, and on the workers, listed in DMCP_MCP_ENV)",
    )
    .option(
      '--client-credentials',
      'a machine login: the workers get tokens by the client-credentials grant as --client-id, no mcp login (with --client-secret-env or --private-key-env)',
    )
    .option(
      '--private-key-env <VAR>',
      "with --client-credentials: the worker variable holding the client's private key (PEM), for private_key_jwt",
    )
    .option(
      '--id-jag',
      "a cross-app access login (enterprise-managed authorization): the workers exchange a user's ID token at the identity provider for an ID-JAG and present it as --client-id (with --client-secret-env, --idp-token-endpoint, --idp-client-id, --id-token-env)",
    )
    .option('--idp-token-endpoint <url>', "with --id-jag: the identity provider's token endpoint (token exchange)")
    .option('--idp-client-id <id>', "with --id-jag: this client's ID at the identity provider")
    .option(
      '--id-token-env <VAR>',
      "with --id-jag: the worker variable holding the user's ID token from the identity provider",
    )
    .option(
      '--signing-algorithm <alg>',
      'with --private-key-env: the JWS algorithm of the client assertion (RS256, PS256, ES256...; default from the key)',
    )
    .action((name: string, target: string[], opts: AddOptions) => addCommand(program, name, target, opts));
  mcp
    .command('list')
    .description('every server on the shelf: transport and where, state, and the agents that have it')
    .option('--json', 'print { version, servers: [...] }')
    .option('--probe-timeout <seconds>', 'how long to wait for a remote server to answer', '3')
    .action(listCommand);
  mcp
    .command('grant')
    .description('give an agent a server on the shelf (from its next turn)')
    .argument('<name>')
    .option('--agent <id>', 'the agent (repeatable; at least one)', collect, [])
    .action(grantCommand);
  mcp
    .command('drop')
    .description('take a server away from an agent (from its next turn)')
    .argument('<name>')
    .option('--agent <id>', 'the agent (repeatable; at least one)', collect, [])
    .action(dropCommand);
  mcp
    .command('forget')
    .description('take a server off the shelf and away from every agent (calls in flight finish)')
    .argument('<name>')
    .action(forgetCommand);
  mcp
    .command('log')
    .description("the shelf's newest changes: when, who, what")
    .option('--json', 'print { version, workflowId, log: [...] }')
    .action(logCommand);
  mcp
    .command('login')
    .description(
      'log in to a remote server on the shelf (OAuth in the browser); with an address, finish a login started elsewhere',
    )
    .argument('<name>')
    .argument('[address]', 'the address the browser ended on (paste-back)')
    .option('--no-browser', 'print the authorization address instead of opening a browser')
    .option('--no-wait', 'start the login and return; finish it with the address the browser ends on')
    .action(loginCli);
  mcp
    .command('logout')
    .description('revoke and delete the login of a server, for every worker')
    .argument('<name>')
    .action(logoutCli);
  mcp
    .command('client-metadata')
    .description(
      'print the client ID metadata document to host at DMCP_OAUTH_CLIENT_METADATA_URL (used as the client ID where the authorization server accepts it)',
    )
    .action(clientMetadataCli);
  mcp
    .command('rekey')
    .description('rewrite every login file with the current OAuth key (DMCP_OAUTH_KEY), after a rotation')
    .action(rekeyCli);
}
