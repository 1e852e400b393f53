/**
 * One server entry checked and resolved: shape, then transport, then trust, then the values of its
 * fields, each problem refusing the entry at the line and field it is about.
 */
import type { ObjectNode } from '@humanwhocodes/momoa';
import type { TransportKind } from '../contract/index.js';
import { expandString, type ExpandContext } from './expand.js';
import { nodeAt } from './json.js';
import { Refusal, checkDuplicateFields, checkShape, type RawEntry } from './entryShape.js';
import { allowedSecretNames, ENV_NAME_RE } from './secrets.js';
import { TRANSPORTS, type EntryContext, type EntryScope, type Refuse } from './transports.js';
import { layerLabel, type ServerEntry } from './types.js';

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
export function resolveEntry(name: string, node: ObjectNode, ctx: EntryContext): ServerEntry {
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
