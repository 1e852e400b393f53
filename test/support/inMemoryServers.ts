/**
 * MCP servers in the test's own process, for pool logic that needs a server to answer but no
 * process: pass {@link InMemoryServers.connect} as the pool's `connect` option, and each server
 * the pool starts is a new `Server` on one end of `InMemoryTransport.createLinkedPair()`. They
 * offer what test/fixtures/lifecycleServer.ts always offers: `whoami`, `sleep` and `add_tool`.
 */
import type { Transport } from '@modelcontextprotocol/client';
import { InMemoryTransport, Server, type Tool } from '@modelcontextprotocol/server';
import type { ServerEntry } from '../../config/types.js';

/** One server the pool started: what a process is to the real pool (its `id` stands for a PID). */
export interface InMemoryServer {
  /** The entry's name. */
  name: string;
  /** Unique across the {@link InMemoryServers} that made it, from 1, in start order. */
  id: number;
  /** How often it answered tools/list. */
  listings: number;
  /** Set once its connection is closed (the pool stopped it). */
  closed: boolean;
}

const plain: Tool['inputSchema'] = { type: 'object', properties: {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class InMemoryServers {
  /** Every server started, in start order. */
  readonly started: InMemoryServer[] = [];

  /** The pool's `connect` option: starts a new server for `entry` and returns the pool's end. */
  readonly connect = async (entry: ServerEntry): Promise<Transport> => {
    const record: InMemoryServer = { name: entry.name, id: this.started.length + 1, listings: 0, closed: false };
    this.started.push(record);
    const added: string[] = [];
    const server = new Server(
      { name: `in-memory-${entry.name}`, version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    const text = (value: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(value) }] });
    server.setRequestHandler('tools/list', () => {
      record.listings += 1;
      const tools: Tool[] = [
        { name: 'whoami', description: 'Returns the server name and id.', inputSchema: plain },
        { name: 'add_tool', description: 'Adds a tool and sends tools/list_changed.', inputSchema: plain },
        {
          name: 'sleep',
          description: 'Answers after `ms` milliseconds.',
          inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
        },
        ...added.map((t) => ({ name: t, description: 'Added at run time.', inputSchema: plain })),
      ];
      return { tools };
    });
    server.setRequestHandler('tools/call', async (request) => {
      const tool = request.params.name;
      if (tool === 'whoami') return text({ name: entry.name, id: record.id });
      if (tool === 'sleep') {
        await sleep(Number(request.params.arguments?.ms ?? 0));
        return text({ slept: request.params.arguments?.ms ?? 0 });
      }
      if (tool === 'add_tool') {
        const newName = `added_${added.length + 1}`;
        added.push(newName);
        await server.sendToolListChanged();
        return text({ added: newName });
      }
      if (added.includes(tool)) return text({ server: entry.name, tool });
      return { content: [{ type: 'text' as const, text: `no tool ${tool}` }], isError: true };
    });
    server.onclose = () => {
      record.closed = true;
    };
    const [poolEnd, serverEnd] = InMemoryTransport.createLinkedPair();
    await server.connect(serverEnd);
    return poolEnd;
  };

  /** The servers started for `name`, in start order. */
  of(name: string): InMemoryServer[] {
    return this.started.filter((s) => s.name === name);
  }

  /** The newest server started for `name`; fails when there is none. */
  latest(name: string): InMemoryServer {
    const found = this.of(name).at(-1);
    if (!found) throw new Error(`no in-memory server "${name}" was started`);
    return found;
  }
}
