import { parse, type MemberNode, type ObjectNode, type ValueNode } from '@humanwhocodes/momoa';

/** Largest config file read (1 MiB): a real mcp.json is a few KB; anything bigger is a mistake. */
export const MAX_CONFIG_BYTES = 1024 * 1024;
/** Deepest nesting accepted; a server entry needs 3 levels, and deeper input could exhaust the stack. */
export const MAX_JSON_DEPTH = 64;

export type JsonDocument = { ok: true; root: ValueNode } | { ok: false; problem: string; line: number };

/** 1-based line of a character offset. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Deepest bracket nesting outside strings, and where it passed the limit. Linear, no recursion. */
function depthProblem(text: string): { line: number } | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (++depth > MAX_JSON_DEPTH) return { line: lineAt(text, i) };
    } else if (c === '}' || c === ']') depth--;
  }
  return undefined;
}

function explainSyntaxError(
  text: string,
  err: { message: string; line?: number; column?: number; offset?: number },
): { problem: string; line: number } {
  const message = err.message.replace(/\s*\(\d+:\d+\)\s*$/, '');
  const offset = err.offset ?? 0;
  if (/end of input/i.test(message)) {
    return {
      problem: 'the JSON ends too early (truncated file, or a missing "}" / "]" / quote)',
      line: lineAt(text, text.length),
    };
  }
  const line = err.line ?? lineAt(text, offset);
  const ch = text[offset];
  if (ch === '\uFEFF') return { problem: 'a byte order mark (U+FEFF) inside the file; save it as plain UTF-8', line };
  if (ch === '/' && (text[offset + 1] === '/' || text[offset + 1] === '*')) {
    return { problem: 'comments are not allowed in JSON; remove the // or /* */ comment', line };
  }
  if (/RBrace|RBracket/.test(message) && /,\s*$/.test(text.slice(0, offset))) {
    return { problem: 'a trailing comma before a closing bracket; remove the comma', line };
  }
  return { problem: `invalid JSON: ${message}`, line };
}

/**
 * Parses JSON text keeping locations (momoa), with guards that keep hostile input cheap: a size cap,
 * a nesting cap checked before parsing, and a leading byte order mark tolerated. Never throws.
 */
export function parseJsonDocument(input: string): JsonDocument {
  const text = input.startsWith('\uFEFF') ? ` ${input.slice(1)}` : input;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_CONFIG_BYTES) {
    return {
      ok: false,
      problem: `the file is ${(bytes / 1048576).toFixed(1)} MiB; config files are limited to 1 MiB`,
      line: 1,
    };
  }
  const deep = depthProblem(text);
  if (deep) return { ok: false, problem: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, line: deep.line };
  let root: ValueNode;
  try {
    root = parse(text, { mode: 'json' }).body;
  } catch (err) {
    const e = err as { message: string; line?: number; column?: number; offset?: number };
    return { ok: false, ...explainSyntaxError(text, e) };
  }
  // momoa accepts raw control characters inside strings; JSON (and every other tool) does not.
  try {
    JSON.parse(text);
  } catch (err) {
    const pos = /position (\d+)/.exec((err as Error).message);
    return {
      ok: false,
      problem: `invalid JSON: ${(err as Error).message}`,
      line: pos ? lineAt(text, Number(pos[1])) : 1,
    };
  }
  return { ok: true, root };
}

/** The JSON type name of a node, as users know it. */
export function jsonTypeOf(node: ValueNode): string {
  switch (node.type) {
    case 'Object':
      return 'an object';
    case 'Array':
      return 'an array';
    case 'String':
      return 'a string';
    case 'Number':
      return 'a number';
    case 'Boolean':
      return 'a boolean';
    case 'Null':
      return 'null';
    default:
      return node.type;
  }
}

/** The key of an object member (momoa types keys as string or identifier nodes). */
export function keyOf(member: MemberNode): string {
  return member.name.type === 'String' ? member.name.value : member.name.name;
}

/** The value node of the last member named `key` (JSON.parse semantics for duplicate keys). */
export function memberValue(obj: ObjectNode, key: string): ValueNode | undefined {
  for (let i = obj.members.length - 1; i >= 0; i--) {
    if (keyOf(obj.members[i]) === key) return obj.members[i].value;
  }
  return undefined;
}

/** Converts a node into a plain value; objects are built with `Object.fromEntries` so `__proto__` stays data. */
export function toValue(node: ValueNode): unknown {
  switch (node.type) {
    case 'Object':
      return Object.fromEntries(node.members.map((m) => [keyOf(m), toValue(m.value)]));
    case 'Array':
      return node.elements.map((e) => toValue(e.value));
    case 'String':
    case 'Number':
    case 'Boolean':
      return node.value;
    case 'Null':
      return null;
    default:
      return undefined;
  }
}

/** The node at `path` under `node` (object keys and array indexes), or the deepest one found. */
export function nodeAt(
  node: ValueNode,
  path: readonly (string | number | symbol)[],
): { node: ValueNode; keyLine?: number } {
  let current = node;
  let keyLine: number | undefined;
  for (const step of path) {
    if (current.type === 'Object' && typeof step === 'string') {
      const member = [...current.members].reverse().find((m) => keyOf(m) === step);
      if (!member) break;
      keyLine = member.name.loc.start.line;
      current = member.value;
    } else if (current.type === 'Array' && typeof step === 'number' && current.elements[step]) {
      current = current.elements[step].value;
      keyLine = current.loc.start.line;
    } else break;
  }
  return { node: current, keyLine };
}
