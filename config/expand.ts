import { describeSecret, isSecretName } from './secrets.js';
import type { CommandOutcome } from './types.js';

/** One piece of a string field: literal text, a variable reference or a `$(command)`. */
export type TemplatePart =
  | { kind: 'text'; text: string }
  | { kind: 'var'; name: string; fallback?: string }
  | { kind: 'command'; command: string };

export type TemplateResult = { ok: true; parts: TemplatePart[] } | { ok: false; problem: string };

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;

function readName(s: string, from: number): number {
  let i = from;
  while (i < s.length && NAME_CHAR.test(s[i])) i++;
  return i;
}

/**
 * Splits a string into literal text, `$NAME`, `${NAME}`, `${NAME:-default}` and `$(command)` parts;
 * `$$` is a literal `$`. Pure. Anything else after a `$` is a problem rather than literal text, so a
 * typo never silently reaches a server.
 */
export function parseTemplate(s: string): TemplateResult {
  const parts: TemplatePart[] = [];
  let text = '';
  let i = 0;
  const flush = (): void => {
    if (text !== '') parts.push({ kind: 'text', text });
    text = '';
  };
  while (i < s.length) {
    const c = s[i];
    if (c !== '$') {
      text += c;
      i++;
      continue;
    }
    const next = s[i + 1];
    if (next === '$') {
      text += '$';
      i += 2;
    } else if (next !== undefined && NAME_START.test(next)) {
      const end = readName(s, i + 1);
      flush();
      parts.push({ kind: 'var', name: s.slice(i + 1, end) });
      i = end;
    } else if (next === '{') {
      const close = s.indexOf('}', i + 2);
      if (close < 0) return { ok: false, problem: `unclosed "\${" at character ${i + 1}` };
      const body = s.slice(i + 2, close);
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s.exec(body);
      if (!m) {
        return {
          ok: false,
          problem: `"\${${body}}" is not a supported expression; write \${NAME} or \${NAME:-default}`,
        };
      }
      flush();
      parts.push(m[2] === undefined ? { kind: 'var', name: m[1] } : { kind: 'var', name: m[1], fallback: m[2] });
      i = close + 1;
    } else if (next === '(') {
      let depth = 0;
      let j = i + 1;
      for (; j < s.length; j++) {
        if (s[j] === '(') depth++;
        else if (s[j] === ')' && --depth === 0) break;
      }
      if (j >= s.length) return { ok: false, problem: `unclosed "$(" at character ${i + 1}` };
      const command = s.slice(i + 2, j).trim();
      if (command === '') return { ok: false, problem: 'empty command expression "$()"' };
      flush();
      parts.push({ kind: 'command', command });
      i = j + 1;
    } else {
      return {
        ok: false,
        problem: `a lone "$" at character ${i + 1}; write "$$" for a literal dollar sign, or $NAME / \${NAME} for a variable`,
      };
    }
  }
  flush();
  return { ok: true, parts };
}

/** How to expand: the worker environment, the layer's trust, and the outputs of commands already run. */
export interface ExpandContext {
  env: NodeJS.ProcessEnv;
  /** Command expressions run only in trusted file layers (config dir, explicit files). */
  allowCommands: boolean;
  /** Layer name for messages, e.g. "workspace". */
  layerLabel: string;
  commands?: ReadonlyMap<string, CommandOutcome>;
  /** Check syntax and trust rules only; leave the text as written (disabled entries). */
  checkOnly?: boolean;
}

export type ExpandResult = { ok: true; value: string } | { ok: false; problem: string };

/**
 * Expands one string field. Pure: command outputs come from `ctx.commands`. Refuses
 * secret variables (naming the variable, never its value), unset variables without a default, and
 * command expressions in untrusted layers.
 */
export function expandString(s: string, ctx: ExpandContext): ExpandResult {
  const parsed = parseTemplate(s);
  if (!parsed.ok) return parsed;
  let out = '';
  for (const part of parsed.parts) {
    if (part.kind === 'text') {
      out += part.text;
    } else if (part.kind === 'var') {
      if (isSecretName(part.name, ctx.env)) {
        return {
          ok: false,
          problem:
            `variable "${part.name}" is secret and cannot be expanded (${describeSecret(part.name, ctx.env)}); ` +
            'give it to a stdio server with "envFrom" or to an HTTP server with "bearerTokenEnv"',
        };
      }
      const value = ctx.env[part.name];
      if (part.fallback !== undefined) out += value === undefined || value === '' ? part.fallback : value;
      else if (value !== undefined) out += value;
      else if (!ctx.checkOnly) {
        return {
          ok: false,
          problem: `variable "${part.name}" is not set; set it on the worker or write \${${part.name}:-default}`,
        };
      }
    } else {
      if (!ctx.allowCommands) {
        return {
          ok: false,
          problem:
            ctx.layerLabel === 'shelf'
              ? 'command expressions "$(...)" are not run for shelf servers; it was not run. Use a ${VAR} the workers have set, or put the entry in the config dir'
              : `command expressions "$(...)" are not allowed in the ${ctx.layerLabel} layer (untrusted); it was not run. ` +
                'Move the entry to the config dir or a --mcp-config file',
        };
      }
      if (ctx.checkOnly) continue;
      const outcome = ctx.commands?.get(part.command);
      if (outcome === undefined) return { ok: false, problem: `command expression "$(${part.command})" was not run` };
      if (!outcome.ok)
        return { ok: false, problem: `command expression "$(${part.command})" failed: ${outcome.error}` };
      out += outcome.stdout;
    }
  }
  return { ok: true, value: ctx.checkOnly ? s : out };
}

/** The `$(command)` texts in a string, in order (none when the string does not parse). */
export function commandsIn(s: string): string[] {
  const parsed = parseTemplate(s);
  if (!parsed.ok) return [];
  return parsed.parts.flatMap((p) => (p.kind === 'command' ? [p.command] : []));
}

/**
 * Splits a command expression into an argument vector when it needs no shell: whitespace separates
 * words, and single or double quotes group them. Returns undefined when the text uses shell syntax
 * (pipes, redirections, globs, variables, backslashes), so the caller falls back to `/bin/sh -c`.
 */
export function splitCommand(command: string): string[] | undefined {
  const argv: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (const c of command) {
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else if (quote === '"' && /[$`\\]/.test(c)) return undefined;
      else word = (word ?? '') + c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (/\s/.test(c)) {
      if (word !== undefined) argv.push(word);
      word = undefined;
    } else if (/[|&;<>()$`\\*?[\]{}!]/.test(c) || (word === undefined && /[~#]/.test(c))) {
      return undefined;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote !== undefined) return undefined;
  if (word !== undefined) argv.push(word);
  // `NAME=value cmd` sets a variable in a shell; only a shell does that right.
  if (argv.length === 0 || argv[0].includes('=')) return undefined;
  return argv;
}
