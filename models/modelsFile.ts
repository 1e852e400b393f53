/**
 * The operator's `models.json`: which models turns may name, through which provider, with the key
 * in which worker variable. Parsed here, pure; every refusal names the file, line and field, and
 * refuses only its own entry.
 */
import { MODEL_NAME_PATTERN, ModelProvider } from '../contract/index.js';
import type { ValueNode } from '@humanwhocodes/momoa';
import { jsonTypeOf, keyOf, parseJsonDocument } from '../config/json.js';

const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ENTRY_FIELDS = ['provider', 'model', 'baseURL', 'apiKeyEnv'] as const;

/** One model the operator named. */
export interface ModelEntry {
  name: string;
  provider: ModelProvider;
  /** The provider's model ID. */
  model: string;
  baseURL?: string;
  /** The worker variable that holds the key; its value is read when a step runs, never stored. */
  apiKeyEnv?: string;
  /** `file:line` of the entry. */
  source: string;
}

export interface ModelsFile {
  models: Map<string, ModelEntry>;
  /** The operator's instructions, first in every model turn's system prompt. */
  instructions?: string;
  /** Refused entries and ignored fields, each naming file and line. */
  problems: string[];
}

/** Parses `text`, read from `file`. A file that is not a JSON object refuses every model. */
export function parseModelsFile(text: string, file: string): ModelsFile {
  const out: ModelsFile = { models: new Map(), problems: [] };
  const doc = parseJsonDocument(text);
  if (!doc.ok) return { ...out, problems: [`${file}:${doc.line}: ${doc.problem}`] };
  const root = doc.root;
  if (root.type !== 'Object') {
    return {
      ...out,
      problems: [`${file}:${root.loc.start.line}: the top level is ${jsonTypeOf(root)}; expected {"models": {...}}`],
    };
  }
  for (const member of root.members) {
    const key = keyOf(member);
    const at = `${file}:${member.name.loc.start.line}`;
    if (key === 'instructions') {
      if (member.value.type === 'String') out.instructions = member.value.value;
      else out.problems.push(`${at}: "instructions" is ${jsonTypeOf(member.value)}; expected a string`);
    } else if (key === 'models') {
      if (member.value.type !== 'Object') {
        out.problems.push(`${at}: "models" is ${jsonTypeOf(member.value)}; expected an object of models by name`);
        continue;
      }
      for (const m of member.value.members) {
        const name = keyOf(m);
        const entry = parseEntry(name, m.value, `${file}:${m.name.loc.start.line}`, file);
        if (typeof entry === 'string') out.problems.push(entry);
        else if (out.models.has(name))
          out.problems.push(`${entry.source}: model ${JSON.stringify(name)} is defined twice; keep one`);
        else out.models.set(name, entry);
      }
    } else out.problems.push(`${at}: unknown top-level field ${JSON.stringify(key)} ignored`);
  }
  return out;
}

/** One entry, or why it is refused. */
function parseEntry(name: string, node: ValueNode, source: string, file: string): ModelEntry | string {
  const refuse = (problem: string, line?: number) =>
    `${line === undefined ? source : `${file}:${line}`}: model ${JSON.stringify(name)} refused: ${problem}`;
  if (!MODEL_NAME_PATTERN.test(name)) {
    return refuse('a model name is 1-64 letters, digits and . _ : -, starting with a letter or digit');
  }
  if (node.type !== 'Object') return refuse(`the entry is ${jsonTypeOf(node)}; expected an object`);
  const fields: Record<string, string> = {};
  for (const m of node.members) {
    const key = keyOf(m);
    const line = m.name.loc.start.line;
    if (key === 'apiKey' || key === 'headers') {
      return refuse(
        `"${key}" would put a secret in the file; name the worker variable that holds the key in "apiKeyEnv"`,
        line,
      );
    }
    if (!(ENTRY_FIELDS as readonly string[]).includes(key)) {
      return refuse(`unknown field ${JSON.stringify(key)} (fields: ${ENTRY_FIELDS.join(', ')})`, line);
    }
    if (m.value.type !== 'String' || m.value.value === '') {
      return refuse(
        `"${key}" is ${m.value.type === 'String' ? 'empty' : jsonTypeOf(m.value)}; expected a non-empty string`,
        line,
      );
    }
    fields[key] = m.value.value;
  }
  const provider = fields.provider;
  if (provider === undefined) return refuse(`"provider" is missing (one of ${ModelProvider.join(', ')})`);
  if (!(ModelProvider as readonly string[]).includes(provider)) {
    return refuse(`"provider" ${JSON.stringify(provider)} is not one of ${ModelProvider.join(', ')}`);
  }
  if (fields.model === undefined) return refuse('"model" (the provider\'s model ID) is missing');
  const baseURL = fields.baseURL;
  if (baseURL !== undefined) {
    const problem = baseUrlProblem(baseURL);
    if (problem) return refuse(`"baseURL" ${problem}`);
  } else if (provider === 'openai-compatible') return refuse('"baseURL" is required for an openai-compatible model');
  if (fields.apiKeyEnv !== undefined && !ENV_NAME_PATTERN.test(fields.apiKeyEnv)) {
    return refuse(`"apiKeyEnv" ${JSON.stringify(fields.apiKeyEnv)} is not a variable name`);
  }
  return {
    name,
    provider: provider as ModelProvider,
    model: fields.model,
    source,
    ...(baseURL !== undefined ? { baseURL } : {}),
    ...(fields.apiKeyEnv !== undefined ? { apiKeyEnv: fields.apiKeyEnv } : {}),
  };
}

/** Why `url` cannot be a model endpoint, or undefined. Credentials in it would be a secret in the file. */
function baseUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return `must be http or https, not ${parsed.protocol}`;
  if (parsed.username !== '' || parsed.password !== '') return 'must not carry credentials; use "apiKeyEnv"';
  return undefined;
}
