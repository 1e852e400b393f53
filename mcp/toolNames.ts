import { createHash } from 'node:crypto';

/** Tool name prefix setting (DMCP_TOOL_PREFIX). */
export type ToolPrefix = 'mcp' | 'none';

/** A tool as its server names it. */
export interface ToolRef {
  server: string;
  tool: string;
}

/** Longest public tool name; model providers reject longer function names. */
export const MAX_TOOL_NAME_LENGTH = 64;

const HASH_LENGTH = 8;
const UNSAFE_CHARS = /[^A-Za-z0-9_-]/gu;

/**
 * Reads `DMCP_TOOL_PREFIX`. Unset or empty means `mcp`; anything other than `mcp` or `none`
 * (case-insensitive) throws, so a typo does not silently rename every tool.
 */
export function parseToolPrefix(value: string | undefined): ToolPrefix {
  const normalized = (value ?? '').trim().toLowerCase();
  if (normalized === '' || normalized === 'mcp') return 'mcp';
  if (normalized === 'none') return 'none';
  throw new Error(`DMCP_TOOL_PREFIX must be "mcp" or "none", got ${JSON.stringify(value)}`);
}

/** Short hash of the original (server, tool) pair; JSON keeps the pair boundary unambiguous. */
function pairHash(server: string, tool: string): string {
  return createHash('sha256')
    .update(JSON.stringify([server, tool]))
    .digest('hex')
    .slice(0, HASH_LENGTH);
}

/** `base` cut so that `base + suffix` fits the limit. */
function withSuffix(base: string, suffix: string): string {
  return base.slice(0, MAX_TOOL_NAME_LENGTH - suffix.length) + suffix;
}

/**
 * Public name of a server's tool: `mcp__<server>__<tool>`, or `<server>__<tool>` with
 * prefix `none`. Characters outside `[A-Za-z0-9_-]` become `_`. A name that had to be cleaned or
 * cut to 64 characters ends with `_<hash>` of the original pair, so `a.b` and `a_b` stay distinct.
 * A server name that would make the split point ambiguous (empty, containing `__`, ending in `_`)
 * counts as cleaned too: otherwise server `a` + tool `b__c` and server `a__b` + tool `c` would
 * both read `mcp__a__b__c`.
 */
export function publicToolName(server: string, tool: string, prefix: ToolPrefix = 'mcp'): string {
  const raw = `${prefix === 'none' ? '' : 'mcp__'}${server}__${tool}`;
  const cleaned = raw.replace(UNSAFE_CHARS, '_');
  const ambiguousServer = server === '' || server.includes('__') || server.endsWith('_');
  if (cleaned === raw && cleaned.length <= MAX_TOOL_NAME_LENGTH && !ambiguousServer) return cleaned;
  return withSuffix(cleaned, `_${pairHash(server, tool)}`);
}

/**
 * The tool description shown to the model, tagged with the server it comes from.
 * Idempotent: an already tagged description is returned unchanged.
 */
export function describeTool(server: string, description: string | undefined): string {
  const tag = `[from MCP server ${JSON.stringify(server)}]`;
  const text = description?.trim() ?? '';
  if (text === tag || text.startsWith(`${tag} `)) return text;
  return text === '' ? tag : `${tag} ${text}`;
}

function compareRefs(a: ToolRef, b: ToolRef): number {
  if (a.server !== b.server) return a.server < b.server ? -1 : 1;
  if (a.tool !== b.tool) return a.tool < b.tool ? -1 : 1;
  return 0;
}

function refKey(ref: ToolRef): string {
  return JSON.stringify([ref.server, ref.tool]);
}

/**
 * The exact two-way mapping between (server, tool) pairs and public names for one turn's tool
 * list. Names come from {@link publicToolName}; if two pairs still land on the same name, the
 * first in (server, tool) order keeps it and the others get `_2`, `_3`, ... so the outcome does
 * not depend on the order servers answered in. This map, not a re-computation, is authoritative.
 */
export class ToolNameMap {
  readonly prefix: ToolPrefix;
  private readonly byRef = new Map<string, string>();
  private readonly byName = new Map<string, ToolRef>();

  /** Builds the map; duplicate pairs are counted once. */
  constructor(refs: Iterable<ToolRef>, prefix: ToolPrefix = 'mcp') {
    this.prefix = prefix;
    const unique = new Map<string, ToolRef>();
    for (const { server, tool } of refs) unique.set(refKey({ server, tool }), { server, tool });
    const sorted = [...unique.values()].sort(compareRefs);
    const bases = sorted.map((ref) => publicToolName(ref.server, ref.tool, prefix));
    // A disambiguated name must not take a name some other pair gets as its own base.
    const reserved = new Set(bases);
    sorted.forEach((ref, i) => {
      let name = bases[i];
      if (this.byName.has(name)) {
        let n = 2;
        do name = withSuffix(bases[i], `_${n++}`);
        while (reserved.has(name) || this.byName.has(name));
      }
      this.byName.set(name, ref);
      this.byRef.set(refKey(ref), name);
    });
  }

  /** Number of distinct tools in the map. */
  get size(): number {
    return this.byName.size;
  }

  /** Public name of a tool, or `undefined` if the tool is not in this map. */
  publicName(server: string, tool: string): string | undefined {
    return this.byRef.get(refKey({ server, tool }));
  }

  /** The (server, tool) pair behind a public name, or `undefined` for an unknown name. */
  resolve(publicName: string): ToolRef | undefined {
    const ref = this.byName.get(publicName);
    return ref === undefined ? undefined : { ...ref };
  }

  /** All entries in (server, tool) order. */
  entries(): Array<{ name: string } & ToolRef> {
    return [...this.byName].map(([name, ref]) => ({ name, ...ref })).sort(compareRefs);
  }
}
