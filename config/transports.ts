/**
 * What each transport takes of an entry: stdio servers a command, arguments, environment and working
 * folder; remote (http, sse) servers a URL, headers and a bearer token. Each refuses the other's fields.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import type { TransportKind } from '../contract/index.js';
import type { RawEntry } from './entryShape.js';
import { ENV_NAME_RE } from './secrets.js';
import type { LayerInfo, ServerEntry } from './types.js';

const STDIO_ONLY = ['args', 'env', 'envFrom', 'cwd'] as const;
const HEADER_NAME_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BEARER_RE = /^Bearer\s+(?:\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*))\s*$/;

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

/** Everything one entry needs to know about its surroundings. */
export interface EntryContext {
  layer: LayerInfo;
  env: NodeJS.ProcessEnv;
  trusted: boolean;
  warnings: string[];
}

/** Refuses the entry: `field` (a path such as `args[2]`) locates the message; without it, the entry's line. */
export type Refuse = (problem: string, field?: string) => never;
/** One entry being resolved: its raw fields and the helpers every transport uses. */
export interface EntryScope {
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
export const TRANSPORTS: Record<TransportKind, TransportRules> = {
  stdio: { refuseForeignFields: refuseRemoteFields, resolve: resolveStdio },
  http: REMOTE,
  sse: REMOTE,
};
