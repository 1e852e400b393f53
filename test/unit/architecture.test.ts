/**
 * The rooms of docs/architecture.md, checked on the source: every relative import between rooms
 * follows the table, so no room imports from a room that imports it. Runs on the TypeScript
 * sources next to the compiled tests (the checkout), not on dist/.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));

/** Which rooms each room may import at run time (type-only imports are checked separately). */
const allowed: Record<string, string[]> = {
  contract: [],
  text: [],
  shaping: ['contract', 'text'],
  settings: ['shaping', 'contract'],
  config: ['contract', 'text', 'settings'],
  mcp: ['contract', 'config', 'text'],
  payloads: ['settings', 'text'],
  connection: ['settings'],
  governance: ['contract', 'text', 'settings', 'config'],
  plane: ['contract', 'text', 'settings', 'config', 'workflows'],
  models: ['contract', 'config', 'shaping', 'payloads', 'settings'],
  activities: ['contract', 'config', 'mcp', 'shaping', 'governance', 'models'],
  workflows: ['contract'],
  worker: [
    'contract',
    'settings',
    'config',
    'mcp',
    'shaping',
    'payloads',
    'activities',
    'workflows',
    'governance',
    'connection',
    'plane',
    'models',
  ],
  client: ['contract', 'payloads', 'shaping', 'text'],
  adapters: ['contract', 'client', 'shaping', 'text'],
  api: ['contract', 'settings', 'payloads', 'client', 'shaping', 'text', 'connection', 'plane', 'config'],
  dev: ['contract', 'text'],
  cli: [
    'contract',
    'settings',
    'config',
    'payloads',
    'worker',
    'client',
    'dev',
    'shaping',
    'text',
    'api',
    'connection',
    'governance',
    'plane',
    'mcp',
  ],
};
/** Type-only imports may also reach these rooms (the workflow names the activities' types). */
const typeOnlyExtra: Record<string, string[]> = {
  workflows: ['activities'],
  payloads: ['settings'],
  // A login's credentials are what the pool asks of them (mcp/login.ts).
  plane: ['mcp'],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

interface Edge {
  from: string;
  to: string;
  file: string;
  typeOnly: boolean;
}

/** A dynamic `import(...)` in a room's source: its specifier as written, and the line. */
interface DynamicImport {
  room: string;
  file: string;
  line: number;
  /** The string literal's value, or undefined when the specifier is not a plain string literal. */
  specifier: string | undefined;
  written: string;
}

function dynamicImports(): DynamicImport[] {
  const found: DynamicImport[] = [];
  for (const room of Object.keys(allowed)) {
    if (!existsSync(join(root, room))) continue;
    for (const file of sources(join(root, room))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((text, i) => {
          if (/^\s*(\/\/|\*|\/\*)/.test(text)) return;
          for (const m of text.matchAll(/(?<![\w.$])import\s*\(([^)]*)\)/g)) {
            const arg = m[1]!.trim();
            const literal = /^'([^'\\]+)'$/.exec(arg);
            found.push({ room, file: relative(root, file), line: i + 1, specifier: literal?.[1], written: arg });
          }
        });
    }
  }
  return found;
}

/**
 * Packages a room may load lazily, by file: each is large or native and needed only by some
 * commands (image shaping, S3 payload storage), so the others start without loading it. Any other
 * dynamic import is of the project's own modules, by a literal relative path, for the same reason.
 */
const lazyPackages: Record<string, string[]> = {
  'shaping/images.ts': ['sharp'],
  'payloads/s3Storage.ts': ['@aws-sdk/client-s3'],
  // Optional peer dependencies, needed only by a worker that runs model turns.
  'models/providers.ts': ['ai', '@ai-sdk/openai', '@ai-sdk/anthropic', '@ai-sdk/openai-compatible'],
};

function roomEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const room of Object.keys(allowed)) {
    if (!existsSync(join(root, room))) continue;
    for (const file of sources(join(root, room))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^(import|export)\s+(type\s+)?[^'";]*?from\s+'(\.[^']+)'/gm)) {
        const target = relative(root, resolve(dirname(file), m[3]!)).split(/[\\/]/)[0]!;
        if (target !== room)
          edges.push({ from: room, to: target, file: relative(root, file), typeOnly: Boolean(m[2]) });
      }
    }
  }
  // A lazily loaded module of another room is a run-time import like any other.
  for (const d of dynamicImports()) {
    if (d.specifier === undefined || !d.specifier.startsWith('.')) continue;
    const target = relative(root, resolve(dirname(join(root, d.file)), d.specifier)).split(/[\\/]/)[0]!;
    if (target !== d.room) edges.push({ from: d.room, to: target, file: d.file, typeOnly: false });
  }
  return edges;
}

test('every import between rooms follows docs/architecture.md', () => {
  const edges = roomEdges();
  assert.ok(edges.length > 20, `expected to find the rooms' imports, found ${edges.length}`);
  const wrong = edges.filter(
    (e) => !(allowed[e.from] ?? []).includes(e.to) && !(e.typeOnly && (typeOnlyExtra[e.from] ?? []).includes(e.to)),
  );
  assert.deepEqual(
    wrong.map((e) => `${e.file} imports ${e.typeOnly ? 'types from ' : ''}${e.to}/`),
    [],
  );
});

test('no room imports from a room that imports it (directly or through others)', () => {
  const graph = new Map<string, Set<string>>();
  for (const e of roomEdges()) {
    if (!graph.has(e.from)) graph.set(e.from, new Set());
    graph.get(e.from)!.add(e.to);
  }
  const reaches = (from: string, to: string, seen = new Set<string>()): boolean => {
    for (const next of graph.get(from) ?? []) {
      if (next === to) return true;
      if (!seen.has(next) && (seen.add(next), reaches(next, to, seen))) return true;
    }
    return false;
  };
  const cycles = [...graph.keys()].filter((room) => reaches(room, room));
  assert.deepEqual(cycles, []);
});

/**
 * Run-time imports between production files (type-only ones are erased): a cycle among files of one
 * room is as real as one among rooms, and loads a module before the one it needs is evaluated.
 */
function fileEdges(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const room of Object.keys(allowed)) {
    if (!existsSync(join(root, room))) continue;
    for (const file of sources(join(root, room))) {
      const from = relative(root, file);
      const targets: string[] = [];
      for (const m of readFileSync(file, 'utf8').matchAll(
        /^(import|export)\s+(type\s+)?[^'";]*?from\s+'(\.[^']+)'/gm,
      )) {
        if (m[2]) continue;
        targets.push(relative(root, resolve(dirname(file), m[3]!)).replace(/\.js$/, '.ts'));
      }
      graph.set(from, targets);
    }
  }
  return graph;
}

test('no production file imports, at run time, a file that imports it (directly or through others)', () => {
  const graph = fileEdges();
  assert.ok(graph.size > 100, `expected the production files, found ${graph.size}`);
  const cycles = new Set<string>();
  const visit = (file: string, path: string[], onPath: Set<string>, done: Set<string>): void => {
    if (onPath.has(file)) {
      const cycle = path.slice(path.indexOf(file));
      // Named from its smallest file, so each cycle is reported once.
      const start = cycle.indexOf([...cycle].sort()[0]!);
      cycles.add([...cycle.slice(start), ...cycle.slice(0, start), cycle[start]].join(' -> '));
      return;
    }
    if (done.has(file)) return;
    onPath.add(file);
    path.push(file);
    for (const next of graph.get(file) ?? []) visit(next, path, onPath, done);
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  const done = new Set<string>();
  for (const file of graph.keys()) visit(file, [], new Set(), done);
  assert.deepEqual([...cycles], []);
});

test('durable names are spelled only in contract/', () => {
  const literal =
    /'(reconcileServers|listTools|turnStarted|cancelCall|DmcpSessionId|ServerUnavailable|TransportFailure|ToolTimeout|BadRequest)'/;
  const offenders: string[] = [];
  for (const room of Object.keys(allowed).filter((r) => r !== 'contract' && existsSync(join(root, r)))) {
    for (const file of sources(join(root, room))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (literal.test(line)) offenders.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
        });
    }
  }
  assert.deepEqual(offenders, []);
});

test('dynamic import() only of own modules by a literal relative path, or of a listed package in its file; never in workflows/ or contract/', () => {
  const found = dynamicImports();
  assert.ok(found.length > 10, `expected to find the lazy imports of cli/ and client/, found ${found.length}`);
  const offenders = found.filter((d) => {
    // The workflow bundle is built ahead and runs sandboxed; the contract room imports nothing.
    if (d.room === 'workflows' || d.room === 'contract') return true;
    if (d.specifier === undefined) return true;
    if (d.specifier.startsWith('./') || d.specifier.startsWith('../')) return !d.specifier.endsWith('.js');
    return !(lazyPackages[d.file] ?? []).includes(d.specifier);
  });
  assert.deepEqual(
    offenders.map((d) => `${d.file}:${d.line}: import(${d.written})`),
    [],
  );
  // Every listed package is still loaded where the list says: a stale entry would allow a new one.
  for (const [file, packages] of Object.entries(lazyPackages)) {
    for (const name of packages)
      assert.ok(
        found.some((d) => d.file === file && d.specifier === name),
        `${file} no longer imports ${name} lazily: drop it from the list`,
      );
  }
});

test('no patch before the first release: workflow code calls neither patched() nor deprecatePatch()', () => {
  // Nothing has been released, so no recorded turn needs an old path: a workflow change re-records
  // test/histories/ instead (docs/decisions.md, "Changing workflow code").
  const offenders: string[] = [];
  const files = sources(join(root, 'workflows'));
  assert.ok(files.length > 0, 'workflows/ has sources');
  for (const file of files) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (/\b(patched|deprecatePatch)\s*\(/.test(line) && !/^\s*(\/\/|\*)/.test(line))
          offenders.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(offenders, []);
});

/**
 * Where a variable is read by name outside settings/, and why that room may: each exception is a
 * convention another library owns, or tooling that must run before the rest exists.
 */
const envReadExceptions: Record<string, { names: string[]; why: string }> = {
  'connection/index.ts': {
    names: [
      'TEMPORAL_CONFIG_FILE',
      'TEMPORAL_PROFILE',
      'TEMPORAL_ADDRESS',
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    ],
    why: "Temporal's own env-config conventions, resolved with @temporalio/envconfig",
  },
  'dev/temporalCli.ts': {
    names: ['DMCP_TEMPORAL_CLI'],
    why: 'finding the Temporal CLI is setup tooling, run by npm before anything is configured',
  },
  'dev/clusterTools.ts': {
    names: ['DMCP_CLUSTER_TOOLS_DIR'],
    why: 'where the cluster test and bench find their built servers is setup tooling, like the Temporal CLI',
  },
  'payloads/s3Storage.ts': {
    names: ['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'],
    why: "a write that silences the AWS SDK's own warning",
  },
};

test('the environment is read by name only in settings/ (loadSettings, configSettings), but for the listed conventions', () => {
  const found: string[] = [];
  const used = new Set<string>();
  for (const room of Object.keys(allowed)) {
    if (room === 'settings' || !existsSync(join(root, room))) continue;
    for (const file of sources(join(root, room))) {
      const rel = relative(root, file);
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((text, i) => {
          if (/^\s*(\/\/|\*|\/\*)/.test(text)) return;
          for (const m of text.matchAll(
            /\b(?:process\.env|env)\??\.((?:DMCP|TEMPORAL)_[A-Z0-9_]+)|\bprocess\.env\.([A-Z][A-Z0-9_]*)/g,
          )) {
            const name = (m[1] ?? m[2])!;
            if (envReadExceptions[rel]?.names.includes(name)) used.add(`${rel} ${name}`);
            else found.push(`${rel}:${i + 1} reads ${name}`);
          }
        });
    }
  }
  assert.deepEqual(found, [], 'read it through loadSettings or configSettings, or add a setting for it');
  const stale = Object.entries(envReadExceptions).flatMap(([file, e]) =>
    e.names.filter((n) => !used.has(`${file} ${n}`)).map((n) => `${file} ${n}`),
  );
  assert.deepEqual(stale, [], 'an exception that no longer occurs is removed from the list');
});

/** The longest a production function may be (as Prettier prints it): a reader holds it on a page or two. */
const MAX_FUNCTION_LINES = 100;
/** The longest a production file may be: one job per file. */
const MAX_FILE_LINES = 500;

test(`no production file is longer than ${MAX_FILE_LINES} lines, and no function longer than ${MAX_FUNCTION_LINES}`, async () => {
  const ts = (await import('typescript')).default;
  const long: string[] = [];
  for (const room of Object.keys(allowed)) {
    if (!existsSync(join(root, room))) continue;
    for (const file of sources(join(root, room))) {
      const rel = relative(root, file);
      const text = readFileSync(file, 'utf8');
      if (text.split('\n').length - 1 > MAX_FILE_LINES) long.push(rel);
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
      const visit = (node: import('typescript').Node): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
          const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
          if (end - start + 1 > MAX_FUNCTION_LINES) long.push(`${rel}:${start + 1}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  assert.deepEqual(long, [], 'split it by its job');
});
