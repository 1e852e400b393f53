/** `durable-mcp mcp grant`, `drop` and `forget`: which agents have a server on the shelf. */
import { print, shelfCommand } from './shelfCommand.js';

/** `--agent` given at least once; commander's required options count a default of [] as given. */
function needAgents(command: string, agents: string[]): boolean {
  if (agents.length > 0) return true;
  process.stderr.write(
    `error: mcp ${command} needs --agent <id> (the agent to ${command === 'grant' ? 'give it to' : 'take it from'})\n`,
  );
  process.exitCode = 2;
  return false;
}

export async function grantCommand(server: string, opts: { agent: string[] }): Promise<void> {
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

export async function dropCommand(server: string, opts: { agent: string[] }): Promise<void> {
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

export async function forgetCommand(server: string): Promise<void> {
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
