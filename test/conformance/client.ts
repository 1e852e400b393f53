/**
 * The project's MCP conformance client: what the conformance suite runs as `--command`, with the
 * scenario server's URL as its last argument and the scenario in MCP_CONFORMANCE_SCENARIO
 * (MCP_CONFORMANCE_CONTEXT: the scenario's data, such as the tool calls it expects).
 *
 * It is not a bare SDK client: it drives one real durable turn through TurnClient against the
 * worker that test/conformance/run.ts started (TEMPORAL_ADDRESS, DMCP_TASK_QUEUE, DMCP_DATA_DIR for
 * the turn key), with the scenario server as the turn's one inline server. So every request the
 * suite sees is what a worker sends for a turn: the listing during reconciliation, each call from
 * its activity. Then it ends the turn and its session, so the worker closes the session's streams
 * at once (the scenario server waits for them to close before the suite reports).
 *
 * An authorization scenario (`auth/...`) goes through the operator's own commands instead, as a
 * person would: `durable-mcp mcp add <name> <url> --agent <agent>`, `durable-mcp mcp login <name>
 * --no-wait`, the authorization address followed with a plain GET (the suite's authorization server
 * approves at once and redirects), the address it redirects to pasted back with `durable-mcp mcp
 * login <name> '<address>'`, then a turn of that agent, whose worker sends the login's token. When
 * that turn says the login wants more access (a 403 `insufficient_scope`) or that the server's
 * authorization server moved, the driver logs in once more, as the status says to, and drives a
 * second turn. A machine login (`auth/client-credentials-*`) has no login step: a worker holding the
 * client's secret or key, `mcp add ... --client-credentials`, then a turn.
 *
 * Exit code: 0 when the turn ran (whatever the calls returned: the suite judges those), 1 when no
 * turn could be driven (no server, no tools where the scenario has some, a login refused), 2 on bad
 * usage.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TurnClient, type StartTurnOptions, type Turn } from '../../client/turnClient.js';
import { unattendedAnswer, type CallRequest, type ToolInfo } from '../../contract/index.js';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { loadSettings } from '../../settings/index.js';

/** The inline server's name: its tools are `mcp__conformance__<tool>`. */
const SERVER = 'conformance';

/** The command line interface an operator runs (`durable-mcp`), from this build. */
const cliScript = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

/** Scenario data the suite passes in MCP_CONFORMANCE_CONTEXT that this client reads. */
interface ScenarioContext {
  toolCalls?: { name: string; arguments?: Record<string, unknown> }[];
  /** A client registered beforehand (auth/pre-registration): given to `mcp add`, its secret through a variable. */
  client_id?: string;
  client_secret?: string;
  /** A machine client's private key (auth/client-credentials-jwt): PEM, and the algorithm to sign with. */
  private_key_pem?: string;
  signing_algorithm?: string;
  /** Cross-app access (auth/cross-app-access-complete-flow): the user's ID token and the identity provider it is exchanged at. */
  idp_client_id?: string;
  idp_id_token?: string;
  idp_issuer?: string;
  idp_token_endpoint?: string;
}

/** The variable the operator keeps a pre-registered client's secret in. */
const SECRET_VARIABLE = 'CONFORMANCE_CLIENT_SECRET';

/** Which calls a scenario expects, from the tools the turn listed (server names, not public ones). */
type CallPlan = (tools: ToolInfo[], context: ScenarioContext) => { tool: string; arguments: Record<string, unknown> }[];

/** Lists only: the scenario checks what the client sent (or did not fetch) while listing. */
const listOnly: CallPlan = () => [];

/**
 * The default: the calls the scenario's context names, else every listed tool once with example
 * arguments. A client that leaves an invalid tool out of its list therefore never calls it, which
 * is what http-invalid-tool-headers checks.
 */
const callEveryTool: CallPlan = (tools, context) => {
  if (context.toolCalls) {
    return context.toolCalls.flatMap((c) => {
      if (tools.some((t) => t.tool === c.name)) return [{ tool: c.name, arguments: c.arguments ?? {} }];
      process.stderr.write(`the scenario asks for ${c.name}, which the turn does not list: not called\n`);
      return [];
    });
  }
  return tools.map((t) => ({ tool: t.tool, arguments: exampleArguments(t.inputSchema) }));
};

const plans: Record<string, CallPlan> = {
  'json-schema-ref-no-deref': listOnly,
  'request-metadata': listOnly,
  // The server echoes back the input schema the client holds for its focal tool, to show that it
  // was passed on verbatim.
  'json-schema-2020-12-preservation': (tools) => {
    const focal = tools.find((t) => t.tool === 'json_schema_2020_12_tool');
    if (!focal) throw new Error('the turn does not list json_schema_2020_12_tool');
    return [{ tool: 'json_schema_echo', arguments: { schema: focal.inputSchema } }];
  },
};

/** Arguments that satisfy the required properties of a simple object schema. */
function exampleArguments(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  return Object.fromEntries(required.map((name) => [name, exampleValue(properties[name] ?? {})]));
}

function exampleValue(property: Record<string, unknown>): unknown {
  if ('const' in property) return property.const;
  if ('default' in property) return property.default;
  if (Array.isArray(property.examples) && property.examples.length > 0) return property.examples[0];
  if (Array.isArray(property.enum) && property.enum.length > 0) return property.enum[0];
  const type = Array.isArray(property.type) ? property.type[0] : property.type;
  switch (type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return exampleArguments(property);
    case 'null':
      return null;
    default:
      return 'example';
  }
}

function describeServer(turn: Turn, name: string): string {
  const server = turn.status.servers.find((s) => s.name === name);
  if (!server)
    return `no server "${name}" in the turn's status (warnings: ${turn.status.warnings.join('; ') || 'none'})`;
  const parts = [`server "${name}": ${server.state}, ${server.tools.length} tool(s)`];
  if (server.error) parts.push(`error: ${server.error}`);
  if (server.warnings.length > 0) parts.push(`warnings: ${server.warnings.join('; ')}`);
  return parts.join('; ');
}

/** Where the turn's one server comes from: inline (its name and URL), or the shelf through an agent. */
type TurnSource = { name: string; servers: StartTurnOptions['servers'] } | { name: string; agent: string };

/**
 * What a turn tells the driver beyond its exit code: the status asks for a new login, since the
 * login wants more access (403 `insufficient_scope`) or its authorization server moved.
 */
interface TurnNotes {
  logInAgain: boolean;
}

/** The login problems a person's new `mcp login` resolves, as the status names them. */
const LOG_IN_AGAIN = new Set(['insufficient_scope', 'moved']);

async function driveTurn(
  client: TurnClient,
  source: TurnSource,
  scenario: string,
  context: ScenarioContext,
  workspace: string,
  notes: TurnNotes = { logInAgain: false },
): Promise<number> {
  const name = source.name;
  const sessionId = `conformance-${scenario.replace(/[^A-Za-z0-9._:-]/g, '-')}-${randomBytes(4).toString('hex')}`;
  const turn = await client.startTurn({
    sessionId,
    workspace,
    ...('agent' in source ? { agent: source.agent } : { servers: source.servers }),
  });
  process.stderr.write(`${turn.turnId}: ${describeServer(turn, name)}\n`);
  let exitCode = 0;
  try {
    const server = turn.status.servers.find((s) => s.name === name);
    if (server?.login !== undefined && LOG_IN_AGAIN.has(server.login)) notes.logInAgain = true;
    if (!server || server.state === 'failed' || server.state === 'disabled' || server.state === 'off') {
      exitCode = 1;
      return exitCode;
    }
    const tools = turn.tools.filter((t) => t.server === name && !t.refusedBy);
    const calls = (plans[scenario] ?? callEveryTool)(tools, context);
    for (const [i, call] of calls.entries()) {
      const request: CallRequest = {
        id: `call-${i + 1}`,
        name: tools.find((t) => t.tool === call.tool)?.name ?? `mcp__${name}__${call.tool}`,
        arguments: call.arguments,
      };
      // A scenario that asks for input gets what an unattended run answers: the schema's defaults.
      const outcome = await turn.callTool(request, {
        inputPollMs: 200,
        onInput: (asked) => unattendedAnswer('accept-defaults', asked),
      });
      const text = outcome.content
        .map((c) => (c.type === 'text' ? c.text : `[${c.type}]`))
        .join(' ')
        .slice(0, 300);
      if (outcome.isError && text.includes('wants more access')) notes.logInAgain = true;
      process.stderr.write(
        `${request.name}: ${outcome.status}${outcome.isError ? ' (tool error)' : ''}${outcome.errorKind ? ` ${outcome.errorKind}: ${outcome.errorMessage ?? ''}` : ''} ${text}\n`,
      );
    }
  } finally {
    const result = await turn.end({ endSession: true });
    process.stderr.write(`${turn.turnId}: ended (${result.endedBy}), ${result.calls.length} call(s)\n`);
  }
  return exitCode;
}

/** Runs `durable-mcp <args>` as the operator would, against the same deployment (the environment's TEMPORAL_ADDRESS, queue and data dir). */
function durableMcp(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliScript, ...args], { env, timeout: 20_000 }, (err, stdout, stderr) => {
      process.stderr.write(
        `$ durable-mcp ${args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a}'`)).join(' ')}\n${stdout}${stderr}`,
      );
      const code = err
        ? typeof (err as { code?: unknown }).code === 'number'
          ? (err as { code: number }).code
          : 1
        : 0;
      resolve({ code, out: stdout });
    });
  });
}

/**
 * Puts the scenario server on the shelf for `agent` and logs in to it the way an operator without
 * a browser on the worker's machine does: start the login without waiting, open the address (here
 * a GET whose redirect is not followed), paste back where it redirects. False when a step refused.
 */
async function logIn(
  name: string,
  url: string,
  agent: string,
  context: ScenarioContext,
  scenario: string,
): Promise<boolean> {
  const client =
    context.client_id !== undefined
      ? [
          '--client-id',
          context.client_id,
          ...(context.client_secret !== undefined ? ['--client-secret-env', SECRET_VARIABLE] : []),
        ]
      : [];
  if ((await durableMcp(['mcp', 'add', name, url, '--agent', agent, ...client])).code !== 0) return false;
  return logInAgain(name, context, scenario);
}

/**
 * The client ID metadata document address auth/basic-cimd expects. Set for that scenario alone:
 * the others check dynamic registration itself, which an authorization server that accepts
 * metadata documents would no longer see.
 */
const CIMD_URL = 'https://conformance-test.local/client-metadata.json';

/** `mcp login` with paste-back for a server already on the shelf. */
async function logInAgain(name: string, context: ScenarioContext, scenario: string): Promise<boolean> {
  const env = {
    ...process.env,
    ...(context.client_secret !== undefined ? { [SECRET_VARIABLE]: context.client_secret } : {}),
    ...(scenario === 'auth/basic-cimd' ? { DMCP_OAUTH_CLIENT_METADATA_URL: CIMD_URL } : {}),
  };
  const started = await durableMcp(['mcp', 'login', name, '--no-wait', '--no-browser'], env);
  const address = /^\s+(https?:\/\/\S+)$/m.exec(started.out)?.[1];
  if (started.code !== 0 || !address) return false;
  const response = await fetch(address, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
  await response.body?.cancel().catch(() => undefined);
  const location = response.headers.get('location');
  if (!location) {
    process.stderr.write(`the authorization address answered ${response.status} without a redirect\n`);
    return false;
  }
  const finished = await durableMcp(['mcp', 'login', name, new URL(location, address).href], env);
  return finished.code === 0;
}

/** The variable the user's ID token (cross-app access) is kept in, on the workers. */
const ID_TOKEN_VARIABLE = 'CONFORMANCE_ID_TOKEN';

/** The variable a machine client's private key is kept in, on the workers. */
const KEY_VARIABLE = 'CONFORMANCE_PRIVATE_KEY';

/**
 * A worker of its own for a machine login, the way a fleet runs one: the client's secret or key
 * in its environment, listed in DMCP_MCP_ENV, on a task queue (and so a shelf) of its own, since
 * the suite makes a new key for each run. Resolves once it polls; `stop` ends it.
 */
async function machineWorker(queue: string, variables: Record<string, string>): Promise<{ stop(): Promise<void> }> {
  const env = { ...process.env, DMCP_TASK_QUEUE: queue, DMCP_MCP_ENV: Object.keys(variables).join(','), ...variables };
  const child = spawn(process.execPath, [cliScript, 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let seen = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the worker did not start in 40 s: ${seen.slice(-500)}`)), 40_000);
    const look = (d: Buffer) => {
      seen += String(d);
      if (seen.includes('worker started')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the worker exited (${code}): ${seen.slice(-500)}`));
    });
  });
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * A machine login (auth/client-credentials-*, auth/cross-app-access-*), as an operator of a worker
 * fleet sets it up: the workers hold the client's secret or key (and for cross-app access the
 * user's ID token), `mcp add ... --client-credentials` or `--id-jag`, then a turn, with no login step.
 */
async function machineScenario(
  url: string,
  scenario: string,
  context: ScenarioContext,
  workspace: string,
  address: string,
): Promise<number> {
  const suffix = randomBytes(4).toString('hex');
  const name = `auth-${suffix}`;
  const agent = `conformance-${suffix}`;
  const queue = `${loadSettings(process.env).taskQueue}-machine-${suffix}`;
  const key = context.private_key_pem !== undefined;
  const idJag = context.idp_id_token !== undefined;
  const variables: Record<string, string> = key
    ? { [KEY_VARIABLE]: context.private_key_pem! }
    : { [SECRET_VARIABLE]: context.client_secret ?? '' };
  if (idJag) variables[ID_TOKEN_VARIABLE] = context.idp_id_token!;
  const worker = await machineWorker(queue, variables);
  const env = { ...process.env, DMCP_TASK_QUEUE: queue };
  try {
    const how = idJag
      ? [
          '--id-jag',
          '--client-secret-env',
          SECRET_VARIABLE,
          '--idp-token-endpoint',
          context.idp_token_endpoint ?? '',
          '--idp-client-id',
          context.idp_client_id ?? '',
          '--id-token-env',
          ID_TOKEN_VARIABLE,
        ]
      : key
        ? [
            '--client-credentials',
            '--private-key-env',
            KEY_VARIABLE,
            ...(context.signing_algorithm ? ['--signing-algorithm', context.signing_algorithm] : []),
          ]
        : ['--client-credentials', '--client-secret-env', SECRET_VARIABLE];
    if (
      (
        await durableMcp(
          ['mcp', 'add', name, url, '--agent', agent, '--client-id', context.client_id ?? '', ...how],
          env,
        )
      ).code !== 0
    )
      return 1;
    const settings = loadSettings(env);
    const client = await TurnClient.connect({
      address,
      taskQueue: queue,
      dataDir: settings.dataDir,
      dataConverter: dataConverterFor(settings),
    });
    try {
      return await driveTurn(client, { name, agent }, scenario, context, workspace);
    } finally {
      await client.close();
    }
  } finally {
    await worker.stop();
  }
}

async function main(): Promise<number> {
  const url = process.argv[process.argv.length - 1];
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO;
  const address = process.env.TEMPORAL_ADDRESS;
  if (!url || !/^https?:\/\//.test(url) || !scenario || !address) {
    process.stderr.write(
      'usage: TEMPORAL_ADDRESS=host:port DMCP_TASK_QUEUE=q DMCP_DATA_DIR=dir MCP_CONFORMANCE_SCENARIO=name node client.js <server-url>\n',
    );
    return 2;
  }
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as ScenarioContext;
  const settings = loadSettings(process.env);
  const client = await TurnClient.connect({
    address,
    taskQueue: settings.taskQueue,
    dataDir: settings.dataDir,
    dataConverter: dataConverterFor(settings),
  });
  // An empty workspace: the turn's servers are the scenario's alone, not a checkout's .mcp.json.
  const workspace = await mkdtemp(join(tmpdir(), 'dmcp-conformance-workspace-'));
  try {
    if (scenario.startsWith('auth/client-credentials-') || scenario.startsWith('auth/cross-app-access-'))
      return await machineScenario(url, scenario, context, workspace, address);
    if (scenario.startsWith('auth/')) {
      // Scenarios run side by side on one deployment: each gets its own shelf name and agent.
      const suffix = randomBytes(4).toString('hex');
      const name = `auth-${suffix}`;
      const agent = `conformance-${suffix}`;
      if (!(await logIn(name, url, agent, context, scenario))) return 1;
      const notes: TurnNotes = { logInAgain: false };
      const code = await driveTurn(client, { name, agent }, scenario, context, workspace, notes);
      if (!notes.logInAgain) return code;
      // What the status told the operator to run, once: a server that still refuses after that
      // gets no further logins (auth/scope-retry-limit counts them).
      process.stderr.write(`${name} asks for a new login: logging in again, then a second turn\n`);
      if (!(await logInAgain(name, context, scenario))) return 1;
      return await driveTurn(client, { name, agent }, scenario, context, workspace);
    }
    return await driveTurn(
      client,
      { name: SERVER, servers: { inlineSpecs: [`${SERVER}:${url}`] } },
      scenario,
      context,
      workspace,
    );
  } finally {
    await client.close();
    await rm(workspace, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
