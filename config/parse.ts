/**
 * One config file's text turned into server entries. Pure: the document's layout is checked here,
 * each entry is resolved (`entry.ts`) or refused, naming its file, line and field.
 */
import type { ObjectNode, ValueNode } from '@humanwhocodes/momoa';
import type { TransportKind } from '../contract/index.js';
import { resolveEntry } from './entry.js';
import { Refusal } from './entryShape.js';
import { commandsIn } from './expand.js';
import { jsonTypeOf, keyOf, memberValue, parseJsonDocument, toValue } from './json.js';
import { nameProblem, pluginServerName } from './names.js';
import { scrubSecrets } from './secrets.js';
import type { EntryContext } from './transports.js';
import { isTrustedLayer, layerLabel, type LayerInfo, type ParseResult } from './types.js';

function guessTransport(raw: Record<string, unknown>): TransportKind {
  if (raw.type === 'stdio' || raw.type === 'http' || raw.type === 'sse') return raw.type;
  return raw.url !== undefined && raw.command === undefined ? 'http' : 'stdio';
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
