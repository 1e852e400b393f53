import { dirname, isAbsolute, resolve } from 'node:path';
import type { ObjectNode, ValueNode } from '@humanwhocodes/momoa';
import { z } from 'zod';
import { ProtocolMode, type LayerKind, type TransportKind } from '../contract/index.js';
import { commandsIn, expandString, type ExpandContext } from './expand.js';
import { jsonTypeOf, keyOf, memberValue, nodeAt, parseJsonDocument, toValue } from './json.js';
import { nameProblem, pluginServerName } from './names.js';
import { allowedSecretNames, ENV_NAME_RE, scrubSecrets } from './secrets.js';
import { isTrustedLayer, type LayerInfo, type ParseResult, type ServerEntry } from './types.js';

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

/** The entry shape. Strict: an unknown field refuses the entry. Types only; rules follow. */
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

type RawEntry = z.infer<typeof serverEntrySchema>;
const FIELDS = Object.keys(serverEntrySchema.shape);
const STDIO_ONLY = ['args', 'env', 'envFrom', 'cwd'] as const;
const HEADER_NAME_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BEARER_RE = /^Bearer\s+(?:\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*))\s*$/;

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

/** Human label of a layer, for messages. */
export function layerLabel(kind: LayerKind): string {
  return {
    configDir: 'config dir',
    shelf: 'shelf',
    workspace: 'workspace',
    plugin: 'plugin',
    explicit: '--mcp-config',
    inline: '--mcp',
  }[kind];
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length];
}

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

interface Problem {
  problem: string;
  field?: string;
  line: number;
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

/** Why a server URL is refused (scheme, syntax, credentials in it), or undefined. */
export function urlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '"url" is not a valid absolute URL; write http://host:port/path or https://...';
  }
  if (parsed.protocol === 'ws:' || parsed.protocol === 'wss:') {
    return `WebSocket URLs (${parsed.protocol}//) are not supported; MCP over HTTP uses http:// or https:// ("type": "http" for Streamable HTTP, "sse" for legacy SSE)`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `URL scheme ${JSON.stringify(parsed.protocol)} is not supported; use http:// or https://`;
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return '"url" contains a user name or password; remove it and send credentials with "bearerTokenEnv"';
  }
  return undefined;
}

class Refusal extends Error {
  constructor(readonly detail: Problem) {
    super(detail.problem);
  }
}

/** Everything one entry needs to know about its surroundings. */
interface EntryContext {
  layer: LayerInfo;
  env: NodeJS.ProcessEnv;
  trusted: boolean;
  warnings: string[];
}

/** Refuses the entry: `field` (a path such as `args[2]`) locates the message; without it, the entry's line. */
type Refuse = (problem: string, field?: string) => never;

function guessTransport(raw: Record<string, unknown>): TransportKind {
  if (raw.type === 'stdio' || raw.type === 'http' || raw.type === 'sse') return raw.type;
  return raw.url !== undefined && raw.command === undefined ? 'http' : 'stdio';
}

/** The line of a field inside an entry, for messages; the entry's own line when the path does not resolve. */
function fieldLine(node: ObjectNode, field: string): number {
  // Field paths look like `url`, `args[2]` or `headers.X-Api.Key` (map keys may hold dots).
  const m = /^(\w+)(?:\.(.*)|\[(\d+)\])?$/s.exec(field);
  if (!m) return node.loc.start.line;
  const path: (string | number)[] = [m[1]];
  if (m[2] !== undefined) path.push(m[2]);
  if (m[3] !== undefined) path.push(Number(m[3]));
  const { node: at, keyLine } = nodeAt(node, path);
  return keyLine ?? at.loc.start.line;
}

function refuserFor(node: ObjectNode): Refuse {
  return (problem, field) => {
    throw new Refusal({ problem, field, line: field ? fieldLine(node, field) : node.loc.start.line });
  };
}

/**
 * A field written twice is refused before the schema sees the entry: `toValue` keeps only the last
 * one, so the schema alone would silently drop the first.
 */
function checkDuplicateFields(node: ObjectNode): void {
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
function checkShape(node: ObjectNode): RawEntry {
  const parsed = serverEntrySchema.safeParse(toValue(node));
  if (!parsed.success) {
    const problems = issueProblems(parsed.error.issues, node).sort((a, b) => a.line - b.line);
    throw new Refusal(problems[0]);
  }
  return parsed.data;
}

/** The transport, declared or inferred, refusing a `type` that contradicts `command` / `url`. */
function transportOf(raw: RawEntry, refuse: Refuse): TransportKind {
  if (raw.command !== undefined && raw.url !== undefined) {
    refuse(
      'has both "command" (a local stdio server) and "url" (a remote server); keep one, and put the other in an entry of its own',
      'url',
    );
  }
  if (raw.command === undefined && raw.url === undefined) {
    refuse('needs "command" (a local stdio server) or "url" (a remote http/sse server)');
  }
  const type: TransportKind = raw.type ?? (raw.url !== undefined ? 'http' : 'stdio');
  if (type === 'stdio' && raw.url !== undefined) {
    refuse('"type": "stdio" needs "command"; for a remote server at "url" write "type": "http" (or "sse")', 'type');
  }
  if (type !== 'stdio' && raw.command !== undefined) {
    refuse(`"type": "${type}" needs "url"; for a local process write "type": "stdio" (or leave "type" out)`, 'type');
  }
  return type;
}

/** Untrusted layers never reach worker credentials (the `Authorization` header is checked with the headers). */
function checkTrust(raw: RawEntry, refuse: Refuse, untrustedHint: string): void {
  if (raw.envFrom !== undefined) refuse(`"envFrom" is ${untrustedHint}`, 'envFrom');
  if (raw.bearerTokenEnv !== undefined) refuse(`"bearerTokenEnv" is ${untrustedHint}`, 'bearerTokenEnv');
}

/** One entry being resolved: its raw fields and the helpers every transport uses. */
interface EntryScope {
  name: string;
  raw: RawEntry;
  ctx: EntryContext;
  enabled: boolean;
  /** Says why a credential field is refused in an untrusted layer and where to move the entry. */
  untrustedHint: string;
  refuse: Refuse;
  /** Expands variables (and, in trusted file layers, command outputs) in one string field. */
  expand(value: string, field: string): string;
  /** Refuses a worker variable that is not a name, or that DMCP_MCP_ENV does not let servers receive. */
  checkWorkerVar(workerVar: string, field: string): void;
}

function entryScope(name: string, raw: RawEntry, ctx: EntryContext, refuse: Refuse, untrustedHint: string): EntryScope {
  const { layer, env, trusted } = ctx;
  // A check-only layer (the client's pre-check) is checked as if every entry were disabled.
  const enabled = (raw.enabled ?? true) && layer.checkOnly !== true;
  // A disabled entry starts nothing, so its variables need not be set and its commands are not run.
  const expandCtx: ExpandContext = {
    env,
    allowCommands: trusted && layer.kind !== 'inline' && layer.kind !== 'shelf',
    layerLabel: layerLabel(layer.kind),
    commands: layer.commands,
    checkOnly: !enabled,
  };
  const allowed = allowedSecretNames(env);
  return {
    name,
    raw,
    ctx,
    enabled,
    untrustedHint,
    refuse,
    expand(value, field) {
      const r = expandString(value, expandCtx);
      return r.ok ? r.value : refuse(`${JSON.stringify(field)}: ${r.problem}`, field);
    },
    checkWorkerVar(workerVar, field) {
      if (!ENV_NAME_RE.test(workerVar))
        refuse(`${JSON.stringify(field)}: ${JSON.stringify(workerVar)} is not a variable name`, field);
      if (!allowed.includes(workerVar)) {
        refuse(
          `${JSON.stringify(field)}: worker variable "${workerVar}" is not listed in DMCP_MCP_ENV; add it (DMCP_MCP_ENV=${workerVar}) to let servers receive it`,
          field,
        );
      }
    },
  };
}

/** How one transport checks and resolves its own fields. */
interface TransportRules {
  /** Refuses fields of the other transport, saying what to write instead. */
  refuseForeignFields(raw: RawEntry, refuse: Refuse, type: TransportKind): void;
  /** Fills the transport's fields of `entry` from the raw fields. */
  resolve(scope: EntryScope, entry: ServerEntry): void;
}

function refuseRemoteFields(raw: RawEntry, refuse: Refuse): void {
  if (raw.headers !== undefined) {
    refuse(
      '"headers" only apply to http/sse servers; pass values to a stdio server with "env" (plain values) or "envFrom" (variables listed in DMCP_MCP_ENV)',
      'headers',
    );
  }
  if (raw.bearerTokenEnv !== undefined) {
    refuse(
      '"bearerTokenEnv" only applies to http/sse servers; give a stdio server the variable with "envFrom": { "SERVER_VAR": "WORKER_VAR" }',
      'bearerTokenEnv',
    );
  }
}

const STDIO_ONLY_HINTS: Record<(typeof STDIO_ONLY)[number], string> = {
  args: 'put parameters into the "url"',
  env: 'send values to an http server with "headers"',
  envFrom: 'send a credential to an http server with "bearerTokenEnv": "WORKER_VAR"',
  cwd: 'remove it',
};

function refuseStdioFields(raw: RawEntry, refuse: Refuse, type: TransportKind): void {
  for (const field of STDIO_ONLY) {
    if (raw[field] !== undefined)
      refuse(`"${field}" only applies to stdio servers (this one is ${type}); ${STDIO_ONLY_HINTS[field]}`, field);
  }
}

/** A local process: command, arguments, environment and working directory. */
function resolveStdio(scope: EntryScope, entry: ServerEntry): void {
  const { raw, refuse, expand, enabled } = scope;
  const { layer } = scope.ctx;
  const command = expand(raw.command ?? '', 'command');
  if (command.trim() === '') refuse('"command" is empty after expansion', 'command');
  if (command.includes('\0')) refuse('"command" contains a NUL character', 'command');
  if (/\s/.test(command.trim()) && !isAbsolute(command)) {
    scope.ctx.warnings.push(
      `${entry.source}: server "${scope.name}": "command" contains spaces and runs without a shell; if those are arguments, move them to "args"`,
    );
  }
  entry.command = command;
  entry.args = (raw.args ?? []).map((a, i) => expand(a, `args[${i}]`));
  for (const [key, value] of Object.entries(raw.env ?? {})) {
    if (!ENV_NAME_RE.test(key)) refuse(`"env": ${JSON.stringify(key)} is not a variable name`, `env.${key}`);
    entry.env[key] = expand(value, `env.${key}`);
  }
  for (const [serverVar, workerVar] of Object.entries(raw.envFrom ?? {})) {
    if (!ENV_NAME_RE.test(serverVar))
      refuse(`"envFrom": ${JSON.stringify(serverVar)} is not a variable name`, `envFrom.${serverVar}`);
    scope.checkWorkerVar(workerVar, `envFrom.${serverVar}`);
    entry.envFrom[serverVar] = workerVar;
  }
  const cwd = raw.cwd === undefined ? undefined : expand(raw.cwd, 'cwd');
  if (cwd !== undefined) {
    if (cwd === '') refuse('"cwd" is empty after expansion', 'cwd');
    if (cwd.includes('\0')) refuse('"cwd" contains a NUL character', 'cwd');
    if (cwd.startsWith('~')) refuse('"cwd" starts with "~", which is not expanded; write $HOME/... instead', 'cwd');
  }
  // A server starts in its layer's own folder, which is also the base of a relative cwd. Trusted
  // servers may hold secrets: started in the agent-writable workspace, a relative script or `npx`
  // would resolve to files the agent wrote. Only workspace servers start there, plugin servers in
  // their plugin. A disabled entry keeps unexpanded text, which is no path to resolve.
  const home = layerFolder(layer);
  entry.cwd = cwd === undefined || (!enabled && cwd.includes('$')) ? home : resolve(home, cwd);
}

/** The folder a layer's servers start in and resolve a relative `cwd` against. */
function layerFolder(layer: LayerInfo): string {
  if (layer.kind === 'workspace') return layer.workspace;
  if (layer.kind === 'plugin') return layer.plugin?.root ?? dirname(layer.file);
  return layer.folder ?? dirname(layer.file);
}

/**
 * A remote server: URL, headers and bearer token. Streamable HTTP and legacy SSE take exactly the
 * same fields; only the client the pool builds differs.
 */
function resolveRemote(scope: EntryScope, entry: ServerEntry): void {
  const { raw, refuse, expand, enabled } = scope;
  const url = expand(raw.url ?? '', 'url');
  // A disabled entry keeps unexpanded text, which is no URL yet.
  if (enabled || !url.includes('$')) {
    const bad = urlProblem(url);
    if (bad) refuse(bad, 'url');
  }
  entry.url = url;
  const bearer = resolveHeaders(scope, entry);
  if (bearer !== undefined) {
    scope.checkWorkerVar(bearer.variable, bearer.field);
    entry.bearerTokenEnv = bearer.variable;
  }
}

/**
 * Checks and expands the headers into `entry.headers`, and returns the bearer-token variable with the
 * field that named it: `bearerTokenEnv`, or a trusted `Authorization: Bearer ${VAR}` header.
 */
function resolveHeaders(scope: EntryScope, entry: ServerEntry): { variable: string; field: string } | undefined {
  const { raw, refuse, expand } = scope;
  const { trusted } = scope.ctx;
  let bearerEnv = raw.bearerTokenEnv;
  let bearerField = 'bearerTokenEnv';
  for (const [key, value] of Object.entries(raw.headers ?? {})) {
    const field = `headers.${key}`;
    if (!HEADER_NAME_RE.test(key)) refuse(`header name ${JSON.stringify(key)} is not a valid HTTP header name`, field);
    if (/[\r\n\0]/.test(value))
      refuse(
        `header ${JSON.stringify(key)}: the value contains a line break (CR/LF) or NUL; header values must be a single line`,
        field,
      );
    if (key.toLowerCase() === 'authorization') {
      const m = BEARER_RE.exec(value);
      if (m && trusted) {
        const variable = m[1] ?? m[2];
        if (bearerEnv !== undefined && bearerEnv !== variable)
          refuse('has both an "Authorization" header and "bearerTokenEnv"; keep only "bearerTokenEnv"', field);
        bearerEnv = variable;
        if (raw.bearerTokenEnv === undefined) bearerField = field;
        continue;
      }
      // A literal credential would sit in the file, and in an untrusted layer the agent would choose it.
      refuse(
        trusted
          ? 'a literal "Authorization" header is refused (it would put the credential in the file); write "bearerTokenEnv": "WORKER_VAR" and list WORKER_VAR in DMCP_MCP_ENV'
          : `an "Authorization" header is ${scope.untrustedHint}`,
        field,
      );
    }
    const expanded = expand(value, field);
    // Checked again after expansion: a variable must not smuggle in a second header.
    if (/[\r\n\0]/.test(expanded))
      refuse(`header ${JSON.stringify(key)}: the expanded value contains a line break (CR/LF) or NUL`, field);
    entry.headers[key] = expanded;
  }
  return bearerEnv === undefined ? undefined : { variable: bearerEnv, field: bearerField };
}

const REMOTE: TransportRules = { refuseForeignFields: refuseStdioFields, resolve: resolveRemote };

const TRANSPORTS: Record<TransportKind, TransportRules> = {
  stdio: { refuseForeignFields: refuseRemoteFields, resolve: resolveStdio },
  http: REMOTE,
  sse: REMOTE,
};

/** Fields every transport shares, resolved last. */
function resolveCommonFields(raw: RawEntry, entry: ServerEntry): void {
  if (raw.tools !== undefined) entry.tools = [...new Set(raw.tools)];
  if (raw.startTimeout !== undefined) entry.startTimeoutMs = Math.round(raw.startTimeout * 1000);
  if (raw.toolTimeout !== undefined) entry.toolTimeoutMs = Math.round(raw.toolTimeout * 1000);
  if (raw.retry !== undefined) entry.retry = raw.retry;
  if (raw.protocol !== undefined) entry.protocol = raw.protocol;
  if (raw.tasks !== undefined) entry.tasks = raw.tasks;
  if (raw.roots === false) entry.roots = false;
}

/**
 * Validates and resolves one entry; throws Refusal with the first problem found. The order of the
 * checks decides which problem a user sees first: shape, then transport, then trust, then values.
 */
function resolveEntry(name: string, node: ObjectNode, ctx: EntryContext): ServerEntry {
  const { layer, trusted } = ctx;
  const refuse = refuserFor(node);
  checkDuplicateFields(node);
  const raw = checkShape(node);

  const type = transportOf(raw, refuse);
  const rules = TRANSPORTS[type];
  rules.refuseForeignFields(raw, refuse, type);

  const untrustedHint = `not allowed in the ${layerLabel(layer.kind)} layer (untrusted: the agent can write it); define this server in the config dir or a --mcp-config file`;
  if (!trusted) checkTrust(raw, refuse, untrustedHint);

  const scope = entryScope(name, raw, ctx, refuse, untrustedHint);
  const entry: ServerEntry = {
    name,
    layer: layer.kind,
    source: `${layer.file}:${node.loc.start.line}`,
    trusted,
    type,
    args: [],
    env: {},
    envFrom: {},
    headers: {},
    enabled: scope.enabled,
  };
  rules.resolve(scope, entry);
  resolveCommonFields(raw, entry);
  return entry;
}

function layerError(layer: LayerInfo, problem: string, line?: number, field?: string): ParseResult {
  const where = line === undefined ? layer.file : `${layer.file}:${line}`;
  return {
    servers: [],
    refused: [],
    warnings: [],
    error: { message: `${where}: ${problem}`, file: layer.file, line, field },
  };
}

/** Replaces `${PLUGIN_ROOT}` inside the JSON text, escaped so any folder name keeps the JSON valid. */
function expandPluginRoot(text: string, root: string): string {
  return text.split('${PLUGIN_ROOT}').join(JSON.stringify(root).slice(1, -1));
}

/** Fields that configure hooks or allowed tools in other agents' files: never taken from a server layer. */
const GOVERNANCE_FIELDS = ['hooks', 'permissions', 'allowedTools', 'disallowedTools'];

/** Why a layer's hooks or rules are not used. */
function governanceRefusal(layer: LayerInfo): string {
  const home =
    "hooks and allowed-tools rules come only from settings.json in the worker's config dir (and its DMCP_ALLOWED_TOOLS / DMCP_DISALLOWED_TOOLS)";
  if (!isTrustedLayer(layer.kind))
    return `refused: the ${layerLabel(layer.kind)} layer is untrusted (the agent can write it); ${home}`;
  return `ignored: ${home}, not from mcp.json`;
}

/** The `mcpServers` object node of a parsed document, or a layer problem. */
function serversNode(root: ValueNode, layer: LayerInfo, warnings: string[]): ObjectNode | ParseResult | undefined {
  const example = 'expected { "mcpServers": { "<name>": { "command": "..." } } }';
  if (root.type !== 'Object')
    return layerError(layer, `the top level is ${jsonTypeOf(root)}; ${example}`, root.loc.start.line);
  for (const m of root.members) {
    if (GOVERNANCE_FIELDS.includes(keyOf(m)))
      warnings.push(`${layer.file}:${m.name.loc.start.line}: ${JSON.stringify(keyOf(m))} ${governanceRefusal(layer)}`);
  }
  const servers = memberValue(root, 'mcpServers');
  if (servers === undefined) {
    if (layer.manifest) return undefined;
    const near = root.members.find((m) => /^(mcp_?servers|servers)$/i.test(keyOf(m)));
    const hint = near ? ` (found ${JSON.stringify(keyOf(near))}; the key is "mcpServers")` : '';
    return layerError(
      layer,
      `no "mcpServers" object${hint}; ${example}`,
      near?.name.loc.start.line ?? root.loc.start.line,
      'mcpServers',
    );
  }
  if (servers.type !== 'Object') {
    return layerError(
      layer,
      `"mcpServers" must be an object of server entries, got ${jsonTypeOf(servers)}`,
      servers.loc.start.line,
      'mcpServers',
    );
  }
  for (const m of root.members) {
    const key = keyOf(m);
    if (!layer.manifest && !GOVERNANCE_FIELDS.includes(key) && key !== 'mcpServers' && key !== '$schema') {
      warnings.push(`${layer.file}:${m.name.loc.start.line}: unknown top-level field ${JSON.stringify(key)} ignored`);
    }
  }
  return servers;
}

/**
 * Parses one config file. Pure: the text, the layer and the worker environment in;
 * resolved entries, refused entries (each naming file, line and field) and warnings out. A problem with
 * the whole file comes back as `error`. Never throws.
 */
export function parseConfigText(text: string, layer: LayerInfo, env: NodeJS.ProcessEnv): ParseResult {
  const trusted = isTrustedLayer(layer.kind);
  const source = layer.plugin ? expandPluginRoot(text, layer.plugin.root) : text;
  const doc = parseJsonDocument(source);
  if (!doc.ok) return layerError(layer, doc.problem, doc.line);
  const warnings: string[] = [];
  const servers = serversNode(doc.root, layer, warnings);
  if (servers === undefined) return { servers: [], refused: [], warnings };
  if (!('type' in servers)) return servers;

  const result: ParseResult = { servers: [], refused: [], warnings };
  const counts = new Map<string, number>();
  for (const m of servers.members) counts.set(keyOf(m), (counts.get(keyOf(m)) ?? 0) + 1);
  const reported = new Set<string>();
  const ctx: EntryContext = { layer, env, trusted, warnings };

  for (const member of servers.members) {
    const key = keyOf(member);
    const line = member.name.loc.start.line;
    const name = layer.plugin ? pluginServerName(layer.plugin.name, key) : key;
    const raw = member.value.type === 'Object' ? (toValue(member.value) as Record<string, unknown>) : {};
    const refuse = (problem: string, at: number, field?: string): void => {
      result.refused.push({
        name,
        layer: layer.kind,
        source: `${layer.file}:${line}`,
        transport: guessTransport(raw),
        reason: `${layer.file}:${at}: server ${JSON.stringify(name)}: ${problem}`,
        line: at,
        field,
      });
    };
    if ((counts.get(key) ?? 0) > 1) {
      // Which definition was meant is a guess either way: refuse the name once, at its second line.
      if (!reported.has(key)) {
        reported.add(key);
        const lines = servers.members.filter((o) => keyOf(o) === key).map((o) => o.name.loc.start.line);
        refuse(`is defined ${lines.length} times in this file (lines ${lines.join(', ')}); keep one`, lines[1]);
      }
      continue;
    }
    const badName = nameProblem(key);
    if (badName) {
      refuse(badName, line);
      continue;
    }
    if (member.value.type !== 'Object') {
      refuse(
        `must be an object such as { "command": "..." } or { "url": "..." }, got ${jsonTypeOf(member.value)}`,
        member.value.loc.start.line,
      );
      continue;
    }
    try {
      result.servers.push(resolveEntry(name, member.value, ctx));
    } catch (err) {
      if (err instanceof Refusal) refuse(err.detail.problem, err.detail.line, err.detail.field);
      // One entry's surprise must not take the others down; the message still says what happened.
      else refuse(`internal error while reading this entry: ${(err as Error).message}`, line);
    }
  }
  for (const r of result.refused) r.reason = scrubSecrets(r.reason, env);
  result.warnings = result.warnings.map((w) => scrubSecrets(w, env));
  return result;
}

/**
 * The `$(command)` expressions the loader must run before parsing `text` (trusted file layers only):
 * unique, in order, from the string fields of enabled entries. Pure; returns [] for unparsable text.
 */
export function findCommandExpressions(text: string): string[] {
  const doc = parseJsonDocument(text);
  if (!doc.ok || doc.root.type !== 'Object') return [];
  const servers = memberValue(doc.root, 'mcpServers');
  if (servers?.type !== 'Object') return [];
  const out = new Set<string>();
  for (const member of servers.members) {
    const entry = toValue(member.value);
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) continue;
    const e = entry as Record<string, unknown>;
    if (e.enabled === false) continue;
    const strings: unknown[] = [e.command, e.cwd, e.url, ...(Array.isArray(e.args) ? e.args : [])];
    for (const map of [e.env, e.headers]) {
      if (typeof map === 'object' && map !== null) strings.push(...Object.values(map));
    }
    for (const s of strings) if (typeof s === 'string') for (const c of commandsIn(s)) out.add(c);
  }
  return [...out];
}

/** A plugin's name: the manifest's `name` when it is a valid server-name part, else the folder name. */
export function pluginNameFrom(manifestText: string | undefined, folderName: string): string {
  if (manifestText !== undefined) {
    const doc = parseJsonDocument(manifestText);
    if (doc.ok && doc.root.type === 'Object') {
      const name = memberValue(doc.root, 'name');
      if (name?.type === 'String') return name.value;
    }
  }
  return folderName;
}
