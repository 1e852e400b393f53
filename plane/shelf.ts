/**
 * The shelf's pure side: `mcp add` arguments into an entry, an entry's checks (the config room's
 * parser, as a `shelf` layer, plus the shelf's own rule that no secret value may be written into
 * it), and proofs with the operator's turn key. The machine-login client fields are checked in
 * `shelfMachineClient.ts`; what a worker reads of the shelf is `shelfLayer.ts`. No I/O.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  DEFAULT_TASK_QUEUE,
  SHELF_WORKFLOW_ID,
  shelfGrantProofText,
  shelfServerProofText,
  type ShelfEntry,
  type ShelfGrant,
  type ShelfOAuthClient,
  type ShelfServer,
  type ShelfState,
} from '../contract/index.js';
import { nameProblem } from '../config/names.js';
import { parseConfigText } from '../config/parse.js';
import { isSecretName, secretValues } from '../config/secrets.js';
import { mcpEnvEntries } from '../settings/index.js';
import { machineClientProblem, VARIABLE_NAME } from './shelfMachineClient.js';

/** A shelf request that cannot be honoured; `field` names what was wrong (`headers.Authorization`, `agent`). */
export class ShelfInputError extends Error {
  override name = 'ShelfInputError';
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The task queue every process uses unless DMCP_TASK_QUEUE says otherwise. */

/**
 * The shelf workflow's ID for the deployment whose workers poll `taskQueue`: one shelf per
 * namespace and shared queue. The default queue keeps the plain ID; another queue is another
 * deployment (or a test) and gets a shelf of its own, on a queue its own workers poll.
 */
export function shelfWorkflowId(taskQueue: string): string {
  return taskQueue === DEFAULT_TASK_QUEUE ? SHELF_WORKFLOW_ID : `${SHELF_WORKFLOW_ID}/${taskQueue}`;
}

/** The empty shelf: what a namespace reads before its first change. */
export function emptyShelf(): ShelfState {
  return { servers: [], grants: [], log: [], version: 0 };
}

// --- `mcp add` arguments ---

/** What `mcp add` was given besides the name. */
export interface AddArguments {
  /** Everything after the name: `<url>`, `sse <url>`, `http <url>`, or the command and its arguments. */
  target: string[];
  /** `--header 'K: V'` values, in order. */
  headers?: string[];
  /** `--env K=V` values, in order. */
  env?: string[];
  /** Whether the target came after `--` (always a command then, even if it looks like a URL). */
  afterDashes?: boolean;
  /** `--client-id`: a client registered with the server's authorization server beforehand. */
  clientId?: string;
  /** `--client-secret-env`: the variable holding that client's secret (where `mcp login` runs, and on the workers). */
  clientSecretEnv?: string;
  /** `--client-credentials`: the workers obtain tokens with the client-credentials grant (no login). */
  clientCredentials?: boolean;
  /** `--private-key-env`: the worker variable holding the client's private key (PEM) for `private_key_jwt`. */
  privateKeyEnv?: string;
  /** `--signing-algorithm`: the JWS algorithm of the client assertion (default: from the key). */
  signingAlgorithm?: string;
  /** `--id-jag`: the workers exchange a user's ID token at the identity provider and present the ID-JAG (no login). */
  idJag?: boolean;
  /** `--idp-token-endpoint`: the identity provider's token endpoint (with `--id-jag`). */
  idpTokenEndpoint?: string;
  /** `--idp-client-id`: this client's ID at the identity provider (with `--id-jag`). */
  idpClientId?: string;
  /** `--id-token-env`: the worker variable holding the user's ID token (with `--id-jag`). */
  idTokenEnv?: string;
}

/** The pre-registered client of `mcp add`, or why its flags are wrong. */
function oauthClientOf(name: string, args: AddArguments): ShelfOAuthClient | undefined {
  if (args.clientId === undefined) {
    if (args.clientSecretEnv !== undefined)
      throw new ShelfInputError(
        `mcp add ${name}: --client-secret-env needs --client-id (the client the secret belongs to)`,
        'oauth.clientSecretEnv',
      );
    if (args.clientCredentials || args.idJag || args.privateKeyEnv !== undefined)
      throw new ShelfInputError(
        `mcp add ${name}: a machine login (--client-credentials) needs --client-id (the client registered with the authorization server)`,
        'oauth.clientId',
      );
    return undefined;
  }
  const clientId = args.clientId.trim();
  if (clientId === '' || clientId.length > 1024 || [...clientId].some((c) => c.charCodeAt(0) < 0x20))
    throw new ShelfInputError(
      `mcp add ${name}: --client-id must be the client ID the authorization server gave (one line, at most 1024 characters)`,
      'oauth.clientId',
    );
  const secretEnv = args.clientSecretEnv?.replace(/^\$\{?|\}$/g, '');
  if (secretEnv !== undefined && !VARIABLE_NAME.test(secretEnv)) {
    throw new ShelfInputError(
      `mcp add ${name}: --client-secret-env takes the name of a variable holding the secret (CLIENT_SECRET), not the secret itself`,
      'oauth.clientSecretEnv',
    );
  }
  const privateKeyEnv = args.privateKeyEnv?.replace(/^\$\{?|\}$/g, '');
  const client: ShelfOAuthClient = {
    clientId,
    ...(secretEnv !== undefined ? { clientSecretEnv: secretEnv } : {}),
    ...(args.clientCredentials ? { grant: 'client_credentials' as const } : {}),
    ...(privateKeyEnv !== undefined ? { privateKeyEnv } : {}),
    ...(args.signingAlgorithm !== undefined ? { signingAlgorithm: args.signingAlgorithm.trim().toUpperCase() } : {}),
    ...(args.idJag ? { grant: 'id_jag' as const } : {}),
    ...(args.idpTokenEndpoint !== undefined ? { idpTokenEndpoint: args.idpTokenEndpoint.trim() } : {}),
    ...(args.idpClientId !== undefined ? { idpClientId: args.idpClientId.trim() } : {}),
    ...(args.idTokenEnv !== undefined ? { idTokenEnv: args.idTokenEnv.replace(/^\$\{?|\}$/g, '') } : {}),
  };
  if (args.idJag && args.clientCredentials)
    throw new ShelfInputError(
      `mcp add ${name}: --id-jag and --client-credentials are two different machine logins: give one`,
      'oauth.grant',
    );
  const problem = machineClientProblem(client, true);
  if (problem) throw new ShelfInputError(`mcp add ${name}: ${problem.message}`, problem.field);
  return client;
}

const URL_START = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * Parses `mcp add <name> <url>`, `mcp add <name> sse <url>` and `mcp add <name> -- <command...>`
 * (with `--header` for remote servers, `--env` for commands) into a shelf entry. Pure.
 * @throws ShelfInputError naming the argument that is wrong.
 */
export function parseAddArguments(name: string, args: AddArguments): { name: string; entry: ShelfEntry } {
  const bad = nameProblem(name);
  if (bad) throw new ShelfInputError(bad, 'name');
  const target = args.target;
  if (target.length === 0) {
    throw new ShelfInputError(
      `mcp add ${name}: say what the server is: a URL (https://...), "sse <url>", or "-- <command> [args...]"`,
      'target',
    );
  }
  const headers = parsePairs(args.headers ?? [], ':', '--header', "'Name: value'");
  const env = parsePairs(args.env ?? [], '=', '--env', 'NAME=value');
  const [first, ...rest] = target as [string, ...string[]];
  const keyword = first.toLowerCase();
  if (!args.afterDashes && (URL_START.test(first) || keyword === 'sse' || keyword === 'http')) {
    const type = URL_START.test(first) ? 'http' : (keyword as 'http' | 'sse');
    const url = URL_START.test(first) ? first : rest[0];
    const extra = URL_START.test(first) ? rest : rest.slice(1);
    if (url === undefined) throw new ShelfInputError(`mcp add ${name} ${keyword}: the server's URL is missing`, 'url');
    if (!URL_START.test(url))
      throw new ShelfInputError(
        `mcp add ${name}: ${JSON.stringify(url)} is not a URL; write http://host:port/path or https://...`,
        'url',
      );
    if (extra.length > 0)
      throw new ShelfInputError(
        `mcp add ${name}: unexpected ${JSON.stringify(extra.join(' '))} after the URL; a command goes after "--"`,
        'target',
      );
    if (Object.keys(env).length > 0)
      throw new ShelfInputError(
        `mcp add ${name}: --env only applies to a command (-- <command>); send values to a remote server with --header`,
        'env',
      );
    const oauth = oauthClientOf(name, args);
    return {
      name,
      entry: { type, url, ...(Object.keys(headers).length > 0 ? { headers } : {}), ...(oauth ? { oauth } : {}) },
    };
  }
  if (
    args.clientId !== undefined ||
    args.clientSecretEnv !== undefined ||
    args.clientCredentials ||
    args.privateKeyEnv !== undefined
  )
    throw new ShelfInputError(
      `mcp add ${name}: --client-id, --client-secret-env, --client-credentials and --private-key-env only apply to a remote server (a URL) that wants a login`,
      'oauth',
    );
  if (Object.keys(headers).length > 0)
    throw new ShelfInputError(
      `mcp add ${name}: --header only applies to a remote server (a URL); give a command values with --env NAME=value`,
      'headers',
    );
  const [command, ...commandArgs] = target as [string, ...string[]];
  if (command.trim() === '') throw new ShelfInputError(`mcp add ${name}: the command is empty`, 'command');
  return {
    name,
    entry: { type: 'stdio', command, args: commandArgs, ...(Object.keys(env).length > 0 ? { env } : {}) },
  };
}

/** `K: V` or `K=V` pairs into an object; a repeated name is refused rather than silently overwritten. */
function parsePairs(values: string[], separator: string, flag: string, form: string): Record<string, string> {
  const out: Record<string, string> = {};
  values.forEach((value, i) => {
    const at = value.indexOf(separator);
    const key = at < 0 ? '' : value.slice(0, at).trim();
    if (at <= 0 || key === '')
      throw new ShelfInputError(`${flag} #${i + 1}: expected ${form}, got ${JSON.stringify(value)}`, flag.slice(2));
    if (Object.hasOwn(out, key))
      throw new ShelfInputError(`${flag} #${i + 1}: ${JSON.stringify(key)} is given twice`, flag.slice(2));
    out[key] = separator === ':' ? value.slice(at + 1).trim() : value.slice(at + 1);
  });
  return out;
}

// --- checks ---

/** `${VAR}` or `$VAR` and nothing else: a value the worker hands over from its own environment. */
const WHOLE_REFERENCE = /^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$/;
/** A credential-looking header name: `Authorization`, `Cookie`, `X-Api-Key`, `Private-Token`... */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);

function credentialHeader(name: string): boolean {
  return CREDENTIAL_HEADERS.has(name.toLowerCase()) || isSecretName(name.replace(/-/g, '_'), {});
}

/** The variables a value refers to (`$NAME`, `${NAME}`, `${NAME:-default}`). */
function referencedVariables(value: string): string[] {
  return [...value.matchAll(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))/g)].map(
    (m) => (m[1] ?? m[2])!,
  );
}

/** Whether a value has literal text left once its variable references are taken out. */
function hasLiteralText(value: string): boolean {
  return (
    value
      .replace(/\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$\$/g, '')
      .replace(/^\s*Bearer\s+/i, '')
      .trim() !== ''
  );
}

/**
 * The entry as the worker's `mcp.json` holds it. A command's variable whose value is only a
 * reference to a secret variable (`GITHUB_TOKEN=${GITHUB_TOKEN}`) is handed over from the worker's
 * environment (`envFrom`), which the worker allows only for variables its DMCP_MCP_ENV lists;
 * every other reference is expanded on the worker.
 */
export function shelfConfigEntry(entry: ShelfEntry, env: NodeJS.ProcessEnv = {}): Record<string, unknown> {
  if (entry.type !== 'stdio')
    return {
      type: entry.type,
      url: entry.url,
      ...(entry.headers && Object.keys(entry.headers).length > 0 ? { headers: entry.headers } : {}),
    };
  const plain: Record<string, string> = {};
  const from: Record<string, string> = {};
  for (const [key, value] of Object.entries(entry.env ?? {})) {
    const m = WHOLE_REFERENCE.exec(value);
    const variable = m ? (m[1] ?? m[2])! : undefined;
    if (variable !== undefined && isSecretName(variable, env)) from[key] = variable;
    else plain[key] = value;
  }
  return {
    type: 'stdio',
    command: entry.command,
    args: entry.args,
    ...(Object.keys(plain).length > 0 ? { env: plain } : {}),
    ...(Object.keys(from).length > 0 ? { envFrom: from } : {}),
  };
}

/** The worker variables an entry needs listed in DMCP_MCP_ENV (bearer tokens, handed-over variables). */
export function workerVariablesOf(entry: ShelfEntry, env: NodeJS.ProcessEnv = {}): string[] {
  const config = shelfConfigEntry(entry, env);
  const out = new Set<string>(Object.values((config.envFrom as Record<string, string> | undefined) ?? {}));
  if (entry.type !== 'stdio') {
    for (const [key, value] of Object.entries(entry.headers ?? {})) {
      if (key.toLowerCase() === 'authorization') for (const v of referencedVariables(value)) out.add(v);
    }
    if (entry.oauth?.clientSecretEnv) out.add(entry.oauth.clientSecretEnv);
    if (entry.oauth?.privateKeyEnv) out.add(entry.oauth.privateKeyEnv);
    if (entry.oauth?.idTokenEnv) out.add(entry.oauth.idTokenEnv);
  }
  return [...out];
}

/** Every string of an entry with its field path, for the secret checks. */
function entryStrings(entry: ShelfEntry): [string, string][] {
  if (entry.type !== 'stdio') {
    return [
      ['url', entry.url],
      ...Object.entries(entry.headers ?? {}).map(([k, v]): [string, string] => [`headers.${k}`, v]),
      ...(entry.oauth ? [['oauth.clientId', entry.oauth.clientId] as [string, string]] : []),
    ];
  }
  return [
    ['command', entry.command],
    ...entry.args.map((a, i): [string, string] => [`args[${i}]`, a]),
    ...Object.entries(entry.env ?? {}).map(([k, v]): [string, string] => [`env.${k}`, v]),
  ];
}

/**
 * Why an entry may not go on the shelf, or undefined. The shelf is recorded in workflow history, so
 * beyond what the config room refuses in any trusted file, no secret value may be written into it:
 * not a literal credential header, not a literal value for a credential-named variable, not a
 * credential in the URL's query, and not the value of any secret variable of `env` (the caller's
 * environment). References (`${GITHUB_TOKEN}`) are fine: the worker resolves them.
 * @param env the caller's environment: its secret values are looked for, and its DMCP_MCP_ENV names secrets.
 */
export function shelfEntryProblem(
  name: string,
  entry: ShelfEntry,
  env: NodeJS.ProcessEnv = {},
): ShelfInputError | undefined {
  const badName = nameProblem(name);
  if (badName) return new ShelfInputError(badName, 'name');
  // The values the scrubber would hide (plain words such as "true" are not secrets, whatever their name).
  const values = new Set(secretValues(env));
  const known = Object.entries(env).filter(
    ([k, v]) => typeof v === 'string' && values.has(v) && isSecretName(k, env),
  ) as [string, string][];
  for (const [field, value] of entryStrings(entry)) {
    const hit = known.find(([, secret]) => value.includes(secret));
    if (hit) {
      return new ShelfInputError(
        `server "${name}": ${field} contains the value of the secret variable ${hit[0]}; the shelf is recorded in workflow history. Write \${${hit[0]}} instead: the worker resolves it`,
        field,
      );
    }
  }
  if (entry.type === 'stdio') {
    for (const [key, value] of Object.entries(entry.env ?? {})) {
      if (isSecretName(key, env) && hasLiteralText(value)) {
        return new ShelfInputError(
          `server "${name}": env.${key} holds a literal value, and ${key} names a credential; the shelf is recorded in workflow history. ` +
            `Write ${key}='\${${key}}' (handed over from the worker's environment; list ${key} in DMCP_MCP_ENV on the workers)`,
          `env.${key}`,
        );
      }
    }
  } else {
    for (const [key, value] of Object.entries(entry.headers ?? {})) {
      if (credentialHeader(key) && hasLiteralText(value)) {
        return new ShelfInputError(
          `server "${name}": headers.${key} holds a literal credential; the shelf is recorded in workflow history. ` +
            `Write 'Authorization: Bearer \${VAR}' with a worker variable listed in DMCP_MCP_ENV, or log in (durable-mcp mcp login ${name})`,
          `headers.${key}`,
        );
      }
    }
    const clientId = entry.oauth?.clientId;
    if (
      clientId !== undefined &&
      (clientId.trim() === '' || clientId.length > 1024 || [...clientId].some((c) => c.charCodeAt(0) < 0x20))
    ) {
      return new ShelfInputError(
        `server "${name}": oauth.clientId must be the client ID the authorization server gave (one line, not blank, at most 1024 characters)`,
        'oauth.clientId',
      );
    }
    const secretEnv = entry.oauth?.clientSecretEnv;
    if (secretEnv !== undefined && !VARIABLE_NAME.test(secretEnv)) {
      return new ShelfInputError(
        `server "${name}": oauth.clientSecretEnv must name a variable (CLIENT_SECRET), not hold the secret`,
        'oauth.clientSecretEnv',
      );
    }
    const machine = entry.oauth ? machineClientProblem(entry.oauth, false) : undefined;
    if (machine) return new ShelfInputError(`server "${name}": ${machine.message}`, machine.field);
    let query: URLSearchParams | undefined;
    try {
      query = new URL(entry.url).searchParams;
    } catch {
      query = undefined; // the parser below names a malformed URL
    }
    for (const [key, value] of query ?? []) {
      if (isSecretName(key.replace(/-/g, '_'), {}) && hasLiteralText(value)) {
        return new ShelfInputError(
          `server "${name}": url: the query parameter ${JSON.stringify(key)} holds a literal credential; the shelf is recorded in workflow history`,
          'url',
        );
      }
    }
  }
  return configProblem(name, entry, env);
}

/**
 * The config room's verdict on the entry, as the worker will read it (a `shelf` layer), in
 * check-only mode: shape, URL, header syntax, trust and secret-variable rules; no variable needs
 * to be set here. Which variables servers may receive is the workers' DMCP_MCP_ENV, not this
 * process's, so the variables the entry hands over count as listed.
 */
function configProblem(name: string, entry: ShelfEntry, env: NodeJS.ProcessEnv): ShelfInputError | undefined {
  const needed = workerVariablesOf(entry, env);
  const checkEnv = { ...env, DMCP_MCP_ENV: [...mcpEnvEntries(env), ...needed].join(',') };
  const text = JSON.stringify({ mcpServers: { [name]: shelfConfigEntry(entry, checkEnv) } }, null, 2);
  const result = parseConfigText(
    text,
    { kind: 'shelf', file: 'shelf', workspace: '/', folder: '/', checkOnly: true },
    checkEnv,
  );
  if (result.error)
    return new ShelfInputError(
      `server "${name}": ${result.error.message.replace(/^shelf(:\d+)?: /, '')}`,
      result.error.field,
    );
  const refused = result.refused[0];
  if (refused) {
    const reason = refused.reason.replace(/^shelf:\d+: /, '');
    return new ShelfInputError(reason, refused.field ? fromConfigField(refused.field, entry) : undefined);
  }
  return undefined;
}

/** A field of the `mcp.json` entry as the shelf entry names it (`envFrom.X` was `env.X`). */
function fromConfigField(field: string, entry: ShelfEntry): string {
  if (field.startsWith('envFrom.')) return `env.${field.slice('envFrom.'.length)}`;
  if (field === 'bearerTokenEnv' && entry.type !== 'stdio') return 'headers.Authorization';
  return field;
}

// --- proofs ---

function hmac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text, 'utf8').digest('hex');
}

function sameHex(a: string, b: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(a)) return false;
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}

/** The proof of a shelf server: HMAC-SHA256 of its name and entry with the turn key. */
export function signShelfServer(key: Buffer, name: string, entry: ShelfEntry): string {
  return hmac(key, shelfServerProofText(name, entry));
}

/** The proof of a grant: HMAC-SHA256 of server, agent and the server's entry with the turn key. */
export function signShelfGrant(key: Buffer, server: string, agent: string, entry: ShelfEntry): string {
  return hmac(key, shelfGrantProofText(server, agent, entry));
}

/** Whether a shelf server was put there by a holder of `key` (its name and entry unchanged since). */
export function verifyShelfServer(key: Buffer, server: ShelfServer): boolean {
  return typeof server.proof === 'string' && sameHex(server.proof, signShelfServer(key, server.name, server.entry));
}

/** Whether a grant was made by a holder of `key`, for the server's entry as it is now. */
export function verifyShelfGrant(key: Buffer, grant: ShelfGrant, entry: ShelfEntry): boolean {
  return typeof grant.proof === 'string' && sameHex(grant.proof, signShelfGrant(key, grant.server, grant.agent, entry));
}
