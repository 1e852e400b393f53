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
 * Exit code: 0 when the turn ran (whatever the calls returned: the suite judges those), 1 when no
 * turn could be driven (no server, no tools where the scenario has some), 2 on bad usage.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TurnClient, type Turn } from '../../client/turnClient.js';
import { unattendedAnswer, type CallRequest, type ToolInfo } from '../../contract/index.js';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { loadSettings } from '../../settings/index.js';

/** The inline server's name: its tools are `mcp__conformance__<tool>`. */
const SERVER = 'conformance';

/** Scenario data the suite passes in MCP_CONFORMANCE_CONTEXT that this client reads. */
interface ScenarioContext {
  toolCalls?: { name: string; arguments?: Record<string, unknown> }[];
}

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

function describeServer(turn: Turn): string {
  const server = turn.status.servers.find((s) => s.name === SERVER);
  if (!server) return `no server "${SERVER}" in the turn's status (warnings: ${turn.status.warnings.join('; ') || 'none'})`;
  const parts = [`server "${SERVER}": ${server.state}, ${server.tools.length} tool(s)`];
  if (server.error) parts.push(`error: ${server.error}`);
  if (server.warnings.length > 0) parts.push(`warnings: ${server.warnings.join('; ')}`);
  return parts.join('; ');
}

async function driveTurn(client: TurnClient, url: string, scenario: string, context: ScenarioContext, workspace: string): Promise<number> {
  const sessionId = `conformance-${scenario.replace(/[^A-Za-z0-9._:-]/g, '-')}-${randomBytes(4).toString('hex')}`;
  const turn = await client.startTurn({ sessionId, workspace, servers: { inlineSpecs: [`${SERVER}:${url}`] } });
  process.stderr.write(`${turn.turnId}: ${describeServer(turn)}\n`);
  let exitCode = 0;
  try {
    const server = turn.status.servers.find((s) => s.name === SERVER);
    if (!server || server.state === 'failed' || server.state === 'disabled' || server.state === 'off') {
      exitCode = 1;
      return exitCode;
    }
    const tools = turn.tools.filter((t) => t.server === SERVER && !t.refusedBy);
    const calls = (plans[scenario] ?? callEveryTool)(tools, context);
    for (const [i, call] of calls.entries()) {
      const request: CallRequest = { id: `call-${i + 1}`, name: tools.find((t) => t.tool === call.tool)?.name ?? `mcp__${SERVER}__${call.tool}`, arguments: call.arguments };
      // A scenario that asks for input gets what an unattended run answers: the schema's defaults.
      const outcome = await turn.callTool(request, { inputPollMs: 200, onInput: (asked) => unattendedAnswer('accept-defaults', asked) });
      const text = outcome.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ').slice(0, 300);
      process.stderr.write(`${request.name}: ${outcome.status}${outcome.isError ? ' (tool error)' : ''}${outcome.errorKind ? ` ${outcome.errorKind}: ${outcome.errorMessage ?? ''}` : ''} ${text}\n`);
    }
  } finally {
    const result = await turn.end({ endSession: true });
    process.stderr.write(`${turn.turnId}: ended (${result.endedBy}), ${result.calls.length} call(s)\n`);
  }
  return exitCode;
}

async function main(): Promise<number> {
  const url = process.argv[process.argv.length - 1];
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO;
  const address = process.env.TEMPORAL_ADDRESS;
  if (!url || !/^https?:\/\//.test(url) || !scenario || !address) {
    process.stderr.write('usage: TEMPORAL_ADDRESS=host:port DMCP_TASK_QUEUE=q DMCP_DATA_DIR=dir MCP_CONFORMANCE_SCENARIO=name node client.js <server-url>\n');
    return 2;
  }
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as ScenarioContext;
  const settings = loadSettings(process.env);
  const client = await TurnClient.connect({ address, taskQueue: settings.taskQueue, dataDir: settings.dataDir, dataConverter: dataConverterFor(settings) });
  // An empty workspace: the turn's servers are the scenario's alone, not a checkout's .mcp.json.
  const workspace = await mkdtemp(join(tmpdir(), 'dmcp-conformance-workspace-'));
  try {
    return await driveTurn(client, url, scenario, context, workspace);
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
