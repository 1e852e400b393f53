/**
 * One page of `tools/list`, read loosely so that one bad tool cannot fail the whole listing: each
 * tool is checked on its own, and an invalid one is left out while the server's others stay.
 * Schemas are kept as the server sent them (JSON Schema 2020-12 keywords and `$ref` included; a
 * `$ref` is never fetched or resolved).
 */
import type { Client, RequestOptions } from '@modelcontextprotocol/client';
import { z } from 'zod';

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
export async function toolListingPage(client: Client, params: { cursor: string } | undefined, options: RequestOptions): Promise<ToolListingPage> {
  const page = await client.request({ method: 'tools/list', ...(params ? { params } : {}) }, pageSchema, options);
  return { tools: page.tools, nextCursor: page.nextCursor, ttlMs: page.ttlMs, cacheScope: page.cacheScope };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why a listed tool cannot be offered, or `undefined` when it can. */
export function invalidToolReason(tool: unknown): string | undefined {
  if (!isObject(tool)) return 'the listed tool is not an object';
  if (typeof tool.name !== 'string' || tool.name.trim() === '') return 'its "name" is missing, empty or not a string';
  if (!isObject(tool.inputSchema)) return 'its "inputSchema" is missing or not a JSON object';
  if (tool.outputSchema !== undefined && !isObject(tool.outputSchema)) return 'its "outputSchema" is not a JSON object';
  if (tool.description !== undefined && typeof tool.description !== 'string') return 'its "description" is not a string';
  if (tool.title !== undefined && typeof tool.title !== 'string') return 'its "title" is not a string';
  if (tool.annotations !== undefined && !isObject(tool.annotations)) return 'its "annotations" is not an object';
  return undefined;
}
