/** `durable-mcp mcp add`: puts a server on the shelf, granted at once to the agents named. */
import type { Command } from 'commander';
import type { ShelfEntry } from '../../../contract/index.js';
import { isMachineGrant } from '../../../contract/shelf.js';
import type { AddArguments } from '../../../plane/shelf.js';
import { commandLine } from './listView.js';
import { checked, print, shelfCommand } from './shelfCommand.js';

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

/** The options of `mcp add`, as commander gives them. */
export interface AddOptions extends MachineAddFlags, Pick<AddArguments, 'clientId' | 'clientSecretEnv'> {
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

/** Puts the server on the shelf and grants it; says what the workers still need for it. */
export async function addCommand(program: Command, name: string, target: string[], opts: AddOptions): Promise<void> {
  const { parseAddArguments, shelfEntryProblem, workerVariablesOf, ShelfInputError } = await import(
    '../../../plane/shelf.js'
  );
  const { agentIdProblem } = await import('../../../contract/index.js');
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
