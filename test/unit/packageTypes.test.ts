/**
 * The package as its users import it: every `exports` entry names its `.d.ts` next to its `.js`,
 * both files are in the build, and a small consumer that imports each entry by the package's name
 * typechecks under `strict` with NodeNext resolution (the way a TypeScript project on Node 20 would
 * resolve `durable-mcp/client`). Runs after `npm run build`, on dist/ and package.json.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  types?: string;
  exports: Record<string, unknown>;
};

/** The library entries: every `exports` key but `./package.json`. */
const entries = Object.entries(pkg.exports).filter(([key]) => key !== './package.json');

test('every exports entry names a types file and a code file, and both are built', () => {
  assert.ok(entries.length > 0);
  for (const [key, target] of entries) {
    assert.equal(
      typeof target,
      'object',
      `exports["${key}"] is a bare path: it must be { "types": ..., "default": ... }`,
    );
    const { types, default: code } = target as { types?: unknown; default?: unknown };
    assert.equal(typeof types, 'string', `exports["${key}"] has no "types"`);
    assert.equal(typeof code, 'string', `exports["${key}"] has no "default"`);
    // "types" must come first: conditions are matched in the order they are written.
    assert.equal(Object.keys(target as object)[0], 'types', `exports["${key}"]: "types" must be the first condition`);
    assert.equal(
      types,
      (code as string).replace(/\.js$/, '.d.ts'),
      `exports["${key}"]: the types file sits next to the code`,
    );
    assert.ok(existsSync(join(root, types as string)), `exports["${key}"]: ${types as string} is not built`);
    assert.ok(existsSync(join(root, code as string)), `exports["${key}"]: ${code as string} is not built`);
  }
});

/** A consumer of each entry: real uses of the typed surface, and misuses that must be errors. */
const consumer = `
import { TurnClient, Turn, type ConnectOptions, type StartTurnOptions } from '${pkg.name}/client';
import { toolSet } from '${pkg.name}/ai-sdk';
import { functionTools } from '${pkg.name}/openai-agents';
import { structuredTools } from '${pkg.name}/langchain';
import { dataConverterFor } from '${pkg.name}/payloads';
import { loadSettings, type Settings } from '${pkg.name}/settings';

const settings: Settings = loadSettings(process.env);
const options: ConnectOptions = { address: '127.0.0.1:7233', namespace: 'default', turnIdleMs: 60_000, dataConverter: dataConverterFor(settings) };
const start: StartTurnOptions = { sessionId: 'chat-42', servers: { inlineSpecs: ['everything:npx -y @modelcontextprotocol/server-everything'] } };

export async function drive(): Promise<string[]> {
  const client: TurnClient = await TurnClient.connect(options);
  const turn: Turn = await client.startTurn(start);
  const names: string[] = turn.tools.map((t) => t.name);
  const outcome = await turn.callTool({ id: 'toolu_01', name: 'mcp__everything__echo', arguments: { message: 'hi' } });
  const status: string = outcome.status;
  void toolSet(turn);
  void functionTools(turn);
  void structuredTools(turn);
  await turn.end();
  return [...names, status];
}

// Misuses: each line must be a type error, so an entry typed as \`any\` fails here.
// @ts-expect-error an option that does not exist
export const misspelt: ConnectOptions = { adress: '127.0.0.1:7233' };
// @ts-expect-error turnIdleMs is a number of milliseconds
export const wrongType: ConnectOptions = { turnIdleMs: '30m' };
// @ts-expect-error a turn needs its session
export const noSession: StartTurnOptions = {};
`;

const scratch = mkdtempSync(join(tmpdir(), 'dmcp-types-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('a consumer importing each exports entry by the package name typechecks', () => {
  // The package as installed: node_modules/<name> is the checkout (a symlink, as npm link makes).
  mkdirSync(join(scratch, 'node_modules'));
  symlinkSync(root, join(scratch, 'node_modules', pkg.name), 'dir');
  const file = join(scratch, 'consumer.ts');
  writeFileSync(file, consumer);
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    typeRoots: [join(root, 'node_modules', '@types')],
  };
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  const program = ts.createProgram([file], options);
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const text = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => scratch,
    getNewLine: () => '\n',
  });
  assert.equal(diagnostics.length, 0, text);
  // Every entry resolved to the package's own declarations, not to some other file.
  for (const [key, target] of entries) {
    const resolved = ts.resolveModuleName(
      `${pkg.name}${key.slice(1)}`,
      file,
      options,
      ts.sys,
      undefined,
      undefined,
      ts.ModuleKind.ESNext,
    );
    const dts = resolved.resolvedModule?.resolvedFileName;
    assert.equal(
      dts,
      join(root, (target as { types: string }).types),
      `${pkg.name}${key.slice(1)} resolves to ${String(dts)}`,
    );
  }
});
