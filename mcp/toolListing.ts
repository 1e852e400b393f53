/**
 * One page of `tools/list`, read loosely so that one bad tool cannot fail the whole listing: each
 * tool is checked on its own, and an invalid one is left out while the server's others stay.
 * Schemas are kept as the server sent them (JSON Schema 2020-12 keywords and `$ref` included; a
 * `$ref` is never fetched or resolved).
 */
import { SdkError, SdkErrorCode, type Client, type RequestOptions, type Tool } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { MAX_NESTING_DEPTH, isJsonObject, nestedDeeperThan } from '../contract/index.js';
import { ListingBoundError } from './serverErrors.js';

/** Pages of one tool listing (see {@link listAllTools}). */
export const MAX_LIST_PAGES = 100;
/** Tools of one server; far more than a model can choose from. */
export const MAX_LISTED_TOOLS = 10_000;
/** Nesting depth of a tool's input or output schema (see MAX_NESTING_DEPTH). */
export const MAX_SCHEMA_DEPTH = MAX_NESTING_DEPTH;

/** Longest a modern server's listing is kept without asking again, whatever its `ttlMs` says. */
export const MAX_LISTING_TTL_MS = 24 * 60 * 60 * 1000;

/** A tool of a listing that was left out, and why. */
export interface RefusedTool {
  /** The tool's name as the server gave it (cut to 100 characters). */
  name: string;
  reason: string;
}

/** A listing page as it came: tools unchecked, plus the revision's freshness hints. */
export interface ToolListingPage {
  tools: unknown[];
  nextCursor?: string;
  /** 2026-07-28: how long the listing stays fresh, in ms. */
  ttlMs?: number;
  /** 2026-07-28: whether the listing may be shared across users (`public`) or not. */
  cacheScope?: string;
}

const pageSchema = z.looseObject({
  tools: z.array(z.unknown()),
  nextCursor: z.string().optional(),
  ttlMs: z.number().optional(),
  cacheScope: z.string().optional(),
});

/** Fetches one page; the first when `params` is undefined. */
export async function toolListingPage(
  client: Client,
  params: { cursor: string } | undefined,
  options: RequestOptions,
): Promise<ToolListingPage> {
  const page = await client.request({ method: 'tools/list', ...(params ? { params } : {}) }, pageSchema, options);
  return { tools: page.tools, nextCursor: page.nextCursor, ttlMs: page.ttlMs, cacheScope: page.cacheScope };
}

/** Why a listed tool cannot be offered, or `undefined` when it can. */
export function invalidToolReason(tool: unknown): string | undefined {
  if (!isJsonObject(tool)) return 'the listed tool is not an object';
  if (typeof tool.name !== 'string' || tool.name.trim() === '') return 'its "name" is missing, empty or not a string';
  if (!isJsonObject(tool.inputSchema)) return 'its "inputSchema" is missing or not a JSON object';
  if (tool.outputSchema !== undefined && !isJsonObject(tool.outputSchema))
    return 'its "outputSchema" is not a JSON object';
  if (tool.description !== undefined && typeof tool.description !== 'string')
    return 'its "description" is not a string';
  if (tool.title !== undefined && typeof tool.title !== 'string') return 'its "title" is not a string';
  if (tool.annotations !== undefined && !isJsonObject(tool.annotations)) return 'its "annotations" is not an object';
  return undefined;
}

/** RFC 9110 `token`: what an `x-mcp-header` name may be (it becomes `Mcp-Param-<name>`). */
const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Property types the 2026-07-28 revision admits for `x-mcp-header` (`number` is not among them). */
const HEADER_PROPERTY_TYPES = new Set(['string', 'integer', 'boolean']);
/** Keywords whose subschemas are not reached by a chain of `properties`: no `x-mcp-header` there. */
const UNREACHABLE_KEYWORDS = [
  'items',
  'prefixItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'patternProperties',
  'dependentSchemas',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
];
/** Of those, the ones whose value is an object of named subschemas. */
const NAMED_SUBSCHEMAS = new Set(['patternProperties', 'dependentSchemas', '$defs', 'definitions']);

/**
 * Why a tool's `x-mcp-header` declarations (2026-07-28, SEP-2243: a property's value sent as an
 * `Mcp-Param-*` header) make it invalid, or `undefined`. A client must leave such a tool out: the
 * header it would send is malformed or ambiguous, and the server refuses the call anyway. Only
 * properties reached through `properties` from the root may declare one, each a non-empty token,
 * on a string, integer or boolean property, unique without regard to case.
 */
export function headerDeclarationProblem(inputSchema: unknown): string | undefined {
  const seen = new Map<string, string>();
  const visit = (node: unknown, path: string[], reachable: boolean): string | undefined => {
    if (!isJsonObject(node)) return undefined;
    const at = path.length > 0 ? `property ${path.join('.')}` : 'the schema root';
    if ('x-mcp-header' in node) {
      const name = node['x-mcp-header'];
      if (!reachable || path.length === 0)
        return `${at}: "x-mcp-header" is allowed only on properties reached through "properties"`;
      if (typeof name !== 'string' || name === '') return `${at}: "x-mcp-header" must be a non-empty string`;
      if (!HEADER_TOKEN.test(name)) return `${at}: "x-mcp-header" ${JSON.stringify(name)} is not an HTTP token`;
      if (typeof node.type !== 'string' || !HEADER_PROPERTY_TYPES.has(node.type))
        return `${at}: "x-mcp-header" needs a string, integer or boolean property, not ${JSON.stringify(node.type ?? null)}`;
      const prior = seen.get(name.toLowerCase());
      if (prior !== undefined)
        return `${at}: "x-mcp-header" ${JSON.stringify(name)} is declared twice (also as ${JSON.stringify(prior)})`;
      seen.set(name.toLowerCase(), name);
    }
    if (isJsonObject(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        const problem = visit(child, [...path, key], reachable);
        if (problem) return problem;
      }
    }
    for (const keyword of UNREACHABLE_KEYWORDS) {
      const sub = node[keyword];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub)
        ? sub
        : NAMED_SUBSCHEMAS.has(keyword) && isJsonObject(sub)
          ? Object.values(sub)
          : [sub];
      for (const branch of branches) {
        const problem = visit(branch, [...path, `(${keyword})`], false);
        if (problem) return problem;
      }
    }
    return undefined;
  };
  return visit(inputSchema, [], true);
}

/** What one whole listing found: the tools kept, those left out, and the first page's `ttlMs`. */
export interface ToolListing {
  tools: Tool[];
  refused: RefusedTool[];
  ttlMs?: number;
}

/**
 * Lists every page of tools, within `timeoutMs` and {@link MAX_LIST_PAGES} pages of at most
 * {@link MAX_LISTED_TOOLS} tools in all: a server that answers with a `nextCursor` forever would
 * otherwise hold the session (and every later turn of it) while it is listed. Tools whose schemas
 * nest deeper than {@link MAX_SCHEMA_DEPTH} are left out: they parse, but cannot be serialized
 * into the turn's history, which would fail every turn of the session. `checkHeaders`: the
 * server speaks the modern Streamable HTTP wire, the only one where parameter headers exist.
 */
export async function listAllTools(
  page: (params: { cursor: string } | undefined, timeoutMs: number) => Promise<ToolListingPage>,
  options: { timeoutMs: number; checkHeaders: boolean },
): Promise<ToolListing> {
  const { timeoutMs } = options;
  const deadline = Date.now() + timeoutMs;
  const overdue = (pages: number) =>
    new ListingBoundError(`tools/list did not finish within ${timeoutMs} ms (start timeout; ${pages} page(s) so far)`);
  const tools: Tool[] = [];
  const refused: RefusedTool[] = [];
  let cursor: string | undefined;
  let pages = 0;
  let ttlMs: number | undefined;
  do {
    if (pages >= MAX_LIST_PAGES) {
      throw new ListingBoundError(
        `tools/list still had a next page after ${MAX_LIST_PAGES} pages (${tools.length} tools): a listing may have at most ${MAX_LIST_PAGES} pages`,
      );
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw overdue(pages);
    let listed: ToolListingPage;
    try {
      listed = await page(cursor ? { cursor } : undefined, remaining);
    } catch (err) {
      if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout && Date.now() >= deadline - 50)
        throw overdue(pages);
      throw err;
    }
    pages += 1;
    if (pages === 1) ttlMs = listed.ttlMs;
    for (const tool of listed.tools) {
      const name = String((tool as { name?: unknown } | null)?.name ?? '').slice(0, 100);
      const invalid =
        invalidToolReason(tool) ??
        (tools.some((t) => t.name === name) ? 'another tool of the listing has the same name' : undefined) ??
        (options.checkHeaders ? headerDeclarationProblem((tool as Tool).inputSchema) : undefined);
      if (invalid) refused.push({ name, reason: invalid });
      else if (
        nestedDeeperThan((tool as Tool).inputSchema, MAX_SCHEMA_DEPTH) ||
        nestedDeeperThan((tool as Tool).outputSchema, MAX_SCHEMA_DEPTH)
      ) {
        refused.push({ name, reason: `its schemas nest deeper than ${MAX_SCHEMA_DEPTH} levels` });
      } else tools.push(tool as Tool);
    }
    if (tools.length > MAX_LISTED_TOOLS)
      throw new ListingBoundError(
        `tools/list returned more than ${MAX_LISTED_TOOLS} tools: a server may offer at most ${MAX_LISTED_TOOLS}`,
      );
    cursor = listed.nextCursor;
  } while (cursor);
  return { tools, refused, ...(ttlMs !== undefined ? { ttlMs } : {}) };
}
