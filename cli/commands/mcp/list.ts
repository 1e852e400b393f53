/** `durable-mcp mcp list` and `mcp log`: the shelf as it is, with what the logins and a probe say, and its changes. */
import type { ShelfEntry } from '../../../contract/index.js';
import { isMachineGrant } from '../../../contract/shelf.js';
import type { Settings } from '../../../settings/index.js';
import { stripTerminalControls, terminalJson } from '../../../text/terminal.js';
import { packageVersion } from '../../common.js';
import { listRows, renderLog, renderTable, type ProbeResult, type ServerFacts } from './listView.js';
import { print, shelfCommand } from './shelfCommand.js';

/**
 * One connection attempt as a worker makes it (the pool's transport and era negotiation), without
 * the entry's headers (their values are the workers' to resolve) and without a token. 401: it
 * wants an account. A session it opened is ended.
 */
export async function probeServer(entry: ShelfEntry, timeoutMs: number): Promise<ProbeResult> {
  if (entry.type === 'stdio') return { kind: 'not_probed', why: 'a command' };
  const { probeRemote } = await import('../../../mcp/probe.js');
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

/** What the token store says of one server's login (not secret: IDs and times). */
export type LoginFacts = (
  server: string,
) => Promise<Pick<ServerFacts, 'loginId' | 'pendingSince' | 'expiredAt' | 'loginUrl' | 'wantedScope' | 'movedTo'>>;

/** The token store's facts for `mcp list`; none when the store cannot be opened (the list still shows the rest). */
async function loginFacts(settings: Settings): Promise<{ facts: LoginFacts; warning?: string }> {
  try {
    const { tokenStoreFromSettings } = await import('../../../plane/tokenStore.js');
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

export async function listCommand(opts: { json?: boolean; probeTimeout: string }): Promise<void> {
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

export async function logCommand(opts: { json?: boolean }): Promise<void> {
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
