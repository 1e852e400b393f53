/**
 * The shape of a server entry (its fields and their types) and the messages of a shape problem,
 * each located with the JSON nodes and saying what to write instead.
 */
import type { ObjectNode } from '@humanwhocodes/momoa';
import { z } from 'zod';
import { ProtocolMode, editDistance } from '../contract/index.js';
import { jsonTypeOf, keyOf, nodeAt, toValue } from './json.js';

/** Upper bounds for the per-server timeouts, in seconds: a start longer than 10 minutes is a mistake. */
export const MAX_START_TIMEOUT_S = 600;
export const MAX_TOOL_TIMEOUT_S = 86_400;

const stringMap = z.record(z.string(), z.string());

/**
 * When a call that may already have started is retried: `auto` lets the tool's annotations decide
 * (read-only or idempotent tools only), `safe` retries every call of the server, `never` retries none.
 */
export const RETRY_MODES = ['auto', 'safe', 'never'] as const;

/** The entry's `tasks` values: whether a tool that may run as an MCP task is called as one. */
export const TASK_MODES = ['auto', 'prefer'] as const;

/** The entry shape. Strict: an unknown field refuses the entry. Types only; the rules come after it (`entry.ts`). */
export const serverEntrySchema = z.strictObject({
  type: z.enum(['stdio', 'http', 'sse']).optional(),
  command: z.string().min(1).optional(),
  args: z.array(z.string()).optional(),
  env: stringMap.optional(),
  envFrom: stringMap.optional(),
  cwd: z.string().min(1).optional(),
  url: z.string().min(1).optional(),
  headers: stringMap.optional(),
  bearerTokenEnv: z.string().min(1).optional(),
  tools: z.array(z.string().min(1)).optional(),
  startTimeout: z.number().positive().max(MAX_START_TIMEOUT_S).optional(),
  toolTimeout: z.number().positive().max(MAX_TOOL_TIMEOUT_S).optional(),
  enabled: z.boolean().optional(),
  retry: z.enum(RETRY_MODES).optional(),
  protocol: z.enum(ProtocolMode).optional(),
  roots: z.boolean().optional(),
  tasks: z.enum(TASK_MODES).optional(),
});

export type RawEntry = z.infer<typeof serverEntrySchema>;
const FIELDS = Object.keys(serverEntrySchema.shape);

/** Fields other products use, mapped to what to write here. */
const FIELD_HINTS: Record<string, string> = {
  disabled: 'write "enabled": false',
  timeout: 'write "toolTimeout" (seconds)',
  transport: 'write "type" ("stdio", "http" or "sse")',
  environment: 'write "env"',
  workingDirectory: 'write "cwd"',
  serverUrl: 'write "url"',
  autoApprove: 'to keep only some tools write "tools": [...]',
  alwaysAllow: 'to keep only some tools write "tools": [...]',
  bearerToken: 'write "bearerTokenEnv": "WORKER_VAR" (a variable listed in DMCP_MCP_ENV), never the token itself',
  retries: 'write "retry": "auto", "safe" (up to 3 attempts) or "never"',
  maxRetries: 'write "retry": "auto", "safe" (up to 3 attempts) or "never"',
  protocolVersion: 'write "protocol": "auto", "legacy" or "2026-07-28"',
  era: 'write "protocol": "auto", "legacy" or "2026-07-28"',
};

function unknownFieldProblem(key: string): string {
  const hint = Object.hasOwn(FIELD_HINTS, key) ? FIELD_HINTS[key] : undefined;
  if (hint) return `unknown field ${JSON.stringify(key)}; ${hint}`;
  const close =
    FIELDS.find((f) => f.toLowerCase() === key.toLowerCase()) ??
    FIELDS.find((f) => editDistance(f.toLowerCase(), key.toLowerCase()) <= 2);
  const suffix = close ? ` (did you mean "${close}"?)` : ` (known fields: ${FIELDS.join(', ')})`;
  return `unknown field ${JSON.stringify(key)}${suffix}`;
}

function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  array: 'an array of strings',
  record: 'an object of names to strings',
  object: 'an object of names to strings',
  number: 'a number of seconds (for example 30)',
  boolean: 'true or false',
};

/** A problem of one entry: the message, the field it is about and the line it sits on. */
export interface Problem {
  problem: string;
  field?: string;
  line: number;
}

/** An entry refused: thrown while the entry is resolved, turned into a refused entry by the parser. */
export class Refusal extends Error {
  constructor(readonly detail: Problem) {
    super(detail.problem);
  }
}

/** Turns zod issues into one problem each, located with the JSON nodes. */
function issueProblems(issues: readonly z.core.$ZodIssue[], entry: ObjectNode): Problem[] {
  const out: Problem[] = [];
  for (const issue of issues) {
    const { node, keyLine } = nodeAt(entry, issue.path);
    const field = fieldPath(issue.path);
    const shown = JSON.stringify(field);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const member = entry.members.find((m) => keyOf(m) === key);
        out.push({
          problem: unknownFieldProblem(key),
          field: key,
          line: member?.name.loc.start.line ?? entry.loc.start.line,
        });
      }
      continue;
    }
    const line = keyLine ?? node.loc.start.line;
    let problem: string;
    if (issue.code === 'invalid_type') {
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      problem =
        node.type === 'Null'
          ? `${shown} is null; remove the field or give ${expected}`
          : `${shown} must be ${expected}, got ${jsonTypeOf(node)}`;
    } else if (issue.code === 'invalid_value' && field === 'type') {
      problem = typeProblem(node.type === 'String' ? node.value : '');
    } else if (issue.code === 'invalid_value') {
      const choices = oneOf(issue.values);
      problem =
        node.type === 'Null'
          ? `${shown} is null; remove the field or give ${choices}`
          : `${shown} must be ${choices}, got ${node.type === 'String' ? JSON.stringify(node.value) : jsonTypeOf(node)}`;
    } else if (issue.code === 'too_small') {
      problem =
        issue.origin === 'number' ? `${shown} must be a positive number of seconds` : `${shown} must not be empty`;
    } else if (issue.code === 'too_big') {
      problem = `${shown} is at most ${String(issue.maximum)} seconds`;
    } else {
      problem = `${shown}: ${issue.message}`;
    }
    out.push({ problem, field, line });
  }
  return out;
}

/** `"a", "b" or "c"`, for messages about a field with a fixed set of values. */
function oneOf(values: readonly unknown[]): string {
  const shown = values.map((v) => JSON.stringify(v));
  return shown.length > 1 ? `${shown.slice(0, -1).join(', ')} or ${shown[shown.length - 1]}` : shown.join('');
}

function typeProblem(value: string): string {
  const v = value.toLowerCase().replace(/[-_\s]/g, '');
  if (v === 'streamablehttp' || v === 'https')
    return `"type" ${JSON.stringify(value)} is not a type; write "type": "http" (Streamable HTTP)`;
  if (v === 'ws' || v === 'websocket' || v === 'wss')
    return 'WebSocket servers are not supported; use "type": "http" (Streamable HTTP) or "sse"';
  return `"type" must be "stdio", "http" or "sse", got ${JSON.stringify(value)}`;
}

/**
 * A field written twice is refused before the schema sees the entry: `toValue` keeps only the last
 * one, so the schema alone would silently drop the first.
 */
export function checkDuplicateFields(node: ObjectNode): void {
  const seen = new Map<string, number>();
  for (const m of node.members) {
    const first = seen.get(keyOf(m));
    if (first !== undefined) {
      throw new Refusal({
        problem: `field ${JSON.stringify(keyOf(m))} appears twice (lines ${first} and ${m.name.loc.start.line})`,
        field: keyOf(m),
        line: m.name.loc.start.line,
      });
    }
    seen.set(keyOf(m), m.name.loc.start.line);
  }
}

/** Checks field names and types with the schema; the problem on the earliest line wins. */
export function checkShape(node: ObjectNode): RawEntry {
  const parsed = serverEntrySchema.safeParse(toValue(node));
  if (!parsed.success) {
    const problems = issueProblems(parsed.error.issues, node).sort((a, b) => a.line - b.line);
    throw new Refusal(problems[0]);
  }
  return parsed.data;
}
