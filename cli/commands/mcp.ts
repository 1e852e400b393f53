/**
 * `durable-mcp mcp ...`: the shelf of servers and the agents they are granted to, and logins.
 * Each subcommand group lives in its own module under `mcp/`; what only they need is loaded when
 * one of them runs.
 */
import type { Command } from 'commander';
import { collect } from '../common.js';
import { addCommand, type AddOptions } from './mcp/add.js';
import { dropCommand, forgetCommand, grantCommand } from './mcp/grants.js';
import { listCommand, logCommand } from './mcp/list.js';
import { clientMetadataCli, loginCli, logoutCli, rekeyCli } from './mcp/login.js';

/** Adds `durable-mcp mcp ...` to the program. */
export function registerMcpCommand(program: Command): void {
  const mcp = program
    .command('mcp')
    .description('the shelf: servers registered once and granted to agents by name, and their logins');
  registerAddCommand(mcp, program);
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

/** `mcp add`, whose flags cover every kind of login a remote server may want. */
function registerAddCommand(mcp: Command, program: Command): void {
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
}
