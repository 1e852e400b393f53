/**
 * settings/variables.ts is the one list of environment variables: every DMCP_* variable production
 * code reads is in it, everything in it is read, and docs/configuration.md shows it as rendered now.
 * Scans the TypeScript sources of the checkout (next to the compiled tests), not dist/.
 */
import assert from 'node:assert/strict';
import { lstatSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { VARIABLES, VARIABLE_GROUPS, renderVariables, variablesBlock } from '../../settings/variables.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));

/** Top-level folders that are not production rooms: tests, benchmarks, examples, deployment, build output. */
const notRooms = new Set(['test', 'bench', 'examples', 'deploy', 'docs', 'dist', 'node_modules']);

/** Every production room: each real top-level folder holding TypeScript, so a new room is scanned too. */
function rooms(): string[] {
  return readdirSync(root).filter((name) => {
    if (name.startsWith('.') || notRooms.has(name)) return false;
    const path = join(root, name);
    return !lstatSync(path).isSymbolicLink() && statSync(path).isDirectory() && sources(path).length > 0;
  });
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const NAME = '((?:DMCP|TEMPORAL)_[A-Z0-9_]*[A-Z0-9])';
/** `env.X`, `e.X`, `process.env.X`, `env?.X`: a property read of the variable. */
const propertyRead = new RegExp(`[\\w$\\])]\\??\\.${NAME}\\b`, 'g');
/** `env['X']`, `env["X"]`. */
const bracketRead = new RegExp(`[\\w$\\])]\\??\\.?\\[\\s*['"]${NAME}['"]\\s*\\]`, 'g');
/** In settings/ only: a key of the parsing schema (`X: flag(...)`), or a name handed to a reader (`get('X')`, `integer('X', ...)`). */
const schemaKey = new RegExp(`^\\s*${NAME}\\s*:`, 'g');
const readerArgument = new RegExp(`\\b(?:get|integer)\\(\\s*'${NAME}'`, 'g');

/** The variables production code reads, each with the first place it is read. */
function readVariables(): Map<string, string> {
  const found = new Map<string, string>();
  for (const room of rooms()) {
    for (const file of sources(join(root, room))) {
      const rel = relative(root, file);
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((text, i) => {
          if (/^\s*(\/\/|\*|\/\*)/.test(text)) return;
          const patterns =
            room === 'settings' ? [propertyRead, bracketRead, schemaKey, readerArgument] : [propertyRead, bracketRead];
          for (const pattern of patterns) {
            for (const m of text.matchAll(pattern)) if (!found.has(m[1]!)) found.set(m[1]!, `${rel}:${i + 1}`);
          }
        });
    }
  }
  return found;
}

test('the scan finds the rooms and the reads it is meant to find', () => {
  const found = rooms();
  for (const room of ['settings', 'config', 'cli', 'dev', 'connection'])
    assert.ok(found.includes(room), `expected room ${room} in ${found.join(', ')}`);
  const read = readVariables();
  // One of each kind: a schema key, a shaping reader's argument, a configSettings read, a setup tool's read.
  for (const name of [
    'DMCP_TASK_QUEUE',
    'DMCP_MAX_IMAGE_BYTES',
    'DMCP_NO_USER_CONFIG',
    'DMCP_TEMPORAL_CLI',
    'DMCP_CLUSTER_TOOLS_DIR',
  ]) {
    assert.ok(read.has(name), `the scan should find ${name} read`);
  }
});

test('every DMCP_* variable production code reads is in settings/variables.ts', () => {
  const listed = new Set(VARIABLES.map((v) => v.name));
  const missing = [...readVariables()]
    .filter(([name]) => name.startsWith('DMCP_') && !listed.has(name))
    .map(([name, where]) => `${name} (read at ${where})`);
  assert.deepEqual(missing, [], 'add each to VARIABLES in settings/variables.ts, then run `npm run docs:settings`');
});

test('settings/variables.ts names no variable that no code reads, and each once', () => {
  const read = readVariables();
  const unread = VARIABLES.filter((v) => !read.has(v.name)).map((v) => v.name);
  assert.deepEqual(unread, [], 'remove each from VARIABLES in settings/variables.ts, then run `npm run docs:settings`');
  const names = VARIABLES.map((v) => v.name);
  assert.deepEqual(
    names.filter((n, i) => names.indexOf(n) !== i),
    [],
    'a variable is listed twice',
  );
});

test('each variable has a group, a default and a one-line meaning', () => {
  const bad = VARIABLES.filter(
    (v) =>
      !(v.group in VARIABLE_GROUPS) ||
      v.default.trim() === '' ||
      v.meaning.trim() === '' ||
      /\n/.test(v.default + v.meaning),
  ).map((v) => v.name);
  assert.deepEqual(bad, []);
});

test("docs/configuration.md's variables tables are what settings/variables.ts renders now", () => {
  const doc = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
  const block = variablesBlock(doc);
  assert.ok(
    block !== undefined,
    'docs/configuration.md lost its <!-- variables:begin --> / <!-- variables:end --> markers',
  );
  const rendered = renderVariables();
  if (block === rendered) return;
  const have = block.split('\n');
  const want = rendered.split('\n');
  const at = want.findIndex((line, i) => have[i] !== line);
  const line = at < 0 ? have.length : at;
  assert.fail(
    `docs/configuration.md is stale: run \`npm run docs:settings\`. First difference at line ${line + 1} of the block:\n` +
      `  docs:      ${have[line] ?? '(end)'}\n  rendered:  ${want[line] ?? '(end)'}`,
  );
});
