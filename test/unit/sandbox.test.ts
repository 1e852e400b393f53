import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import type { ServerEntry } from '../../config/types.js';
import {
  INSTALL_ROOT,
  SANDBOX_HOME,
  StdioSandbox,
  UntrustedStdioRefused,
  existingHiddenPaths,
  runtimeFolders,
  sandboxArgs,
  sandboxEnvironment,
  operatorFolders,
  sandboxPathsFor,
  workspaceFromSource,
  type HiddenPaths,
  type SandboxPaths,
} from '../../mcp/sandbox.js';

const BASE = [
  '--unshare-pid',
  '--unshare-ipc',
  '--die-with-parent',
  '--cap-drop',
  'ALL',
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '--tmpfs',
  '/tmp',
  '--dir',
  SANDBOX_HOME,
];
const run = { command: 'node', args: ['server.js', '--flag'] };
const NONE: HiddenPaths = { folders: [], files: [] };
const tail = (cwd: string) => ['--chdir', cwd, '--', 'node', 'server.js', '--flag'];

const cases: { name: string; paths: SandboxPaths; mounts: string[] }[] = [
  {
    name: 'workspace writable, data and config dirs covered after it',
    paths: { workspace: '/w', cwd: '/w', readable: ['/w'], hidden: ['/srv/data', '/home/u/.config/durable-mcp'] },
    mounts: ['--bind', '/w', '/w', '--tmpfs', '/srv/data', '--tmpfs', '/home/u/.config/durable-mcp'],
  },
  {
    name: 'a hidden folder inside the workspace stays hidden (covered after the workspace)',
    paths: { workspace: '/w', cwd: '/w', readable: [], hidden: ['/w/.data'] },
    mounts: ['--bind', '/w', '/w', '--tmpfs', '/w/.data'],
  },
  {
    name: 'a hidden folder above the workspace is covered first, so the workspace shows through',
    paths: { workspace: '/srv/data/ws', cwd: '/srv/data/ws', readable: [], hidden: ['/srv/data'] },
    mounts: ['--tmpfs', '/srv/data', '--bind', '/srv/data/ws', '/srv/data/ws'],
  },
  {
    name: 'a hidden folder equal to the workspace wins',
    paths: { workspace: '/w', cwd: '/w', readable: [], hidden: ['/w'] },
    mounts: ['--bind', '/w', '/w', '--tmpfs', '/w'],
  },
  {
    name: 'a prefix that is not a parent folder is not "above"',
    paths: { workspace: '/srv/data-ws', cwd: '/srv/data-ws', readable: [], hidden: ['/srv/data'] },
    mounts: ['--bind', '/srv/data-ws', '/srv/data-ws', '--tmpfs', '/srv/data'],
  },
  {
    name: 'readable folders go outer first, and before a writable one as deep',
    paths: { workspace: '/tmp/ws', cwd: '/tmp/plugin/bin', readable: ['/tmp/plugin/bin', '/tmp/plugin'], hidden: [] },
    mounts: [
      '--ro-bind',
      '/tmp/plugin',
      '/tmp/plugin',
      '--bind',
      '/tmp/ws',
      '/tmp/ws',
      '--ro-bind',
      '/tmp/plugin/bin',
      '/tmp/plugin/bin',
    ],
  },
  {
    name: 'no workspace: nothing of the host is writable',
    paths: { cwd: '/opt/plugin', readable: ['/opt/plugin'], hidden: ['/data'] },
    mounts: ['--tmpfs', '/data', '--ro-bind', '/opt/plugin', '/opt/plugin'],
  },
  {
    name: 'the home is covered before the workspace inside it, and files the settings name are covered last, also inside the workspace',
    paths: {
      workspace: '/home/u/proj',
      cwd: '/home/u/proj',
      readable: [],
      hidden: ['/home/u', '/srv/data'],
      hiddenFiles: ['/home/u/proj/api-tokens', '/etc/temporal/client.key'],
    },
    mounts: [
      '--tmpfs',
      '/home/u',
      '--tmpfs',
      '/srv/data',
      '--bind',
      '/home/u/proj',
      '/home/u/proj',
      '--ro-bind',
      '/dev/null',
      '/home/u/proj/api-tokens',
      '--ro-bind',
      '/dev/null',
      '/etc/temporal/client.key',
    ],
  },
  {
    name: 'a hidden file gets no mount where a hidden folder or the private /tmp already covers it, and one where a shown folder shows it',
    paths: {
      workspace: '/tmp/ws',
      cwd: '/tmp/ws',
      readable: ['/tmp/plugin'],
      hidden: ['/srv/data'],
      hiddenFiles: ['/srv/data/turn.key', '/tmp/other/tls.key', '/tmp/ws/api-tokens', '/tmp/plugin/key.pem'],
    },
    mounts: [
      '--ro-bind',
      '/tmp/plugin',
      '/tmp/plugin',
      '--bind',
      '/tmp/ws',
      '/tmp/ws',
      '--tmpfs',
      '/srv/data',
      '--ro-bind',
      '/dev/null',
      '/tmp/ws/api-tokens',
      '--ro-bind',
      '/dev/null',
      '/tmp/plugin/key.pem',
    ],
  },
  {
    name: 'a plugin folder in the home shows through it; the config dir beside it stays hidden',
    paths: {
      workspace: '/home/u/proj',
      cwd: '/home/u/proj',
      readable: ['/home/u/plugins/kit'],
      hidden: ['/home/u/.config/durable-mcp', '/home/u'],
    },
    mounts: [
      '--tmpfs',
      '/home/u',
      '--bind',
      '/home/u/proj',
      '/home/u/proj',
      '--ro-bind',
      '/home/u/plugins/kit',
      '/home/u/plugins/kit',
      '--tmpfs',
      '/home/u/.config/durable-mcp',
    ],
  },
  {
    name: 'a hidden file in a hidden folder inside the workspace needs no mount of its own',
    paths: { workspace: '/w', cwd: '/w', readable: [], hidden: ['/w/.data'], hiddenFiles: ['/w/.data/api.token'] },
    mounts: ['--bind', '/w', '/w', '--tmpfs', '/w/.data'],
  },
];

for (const c of cases) {
  test(`sandboxArgs: ${c.name}`, () => {
    assert.deepEqual(sandboxArgs(run, c.paths), [...BASE, ...c.mounts, ...tail(c.paths.cwd)]);
  });
}

test("sandboxEnvironment: PATH, HOME and LANG only, then the entry's own env", () => {
  assert.deepEqual(sandboxEnvironment({ env: {} }, { path: '/bin', lang: undefined }), {
    PATH: '/bin',
    HOME: SANDBOX_HOME,
    LANG: 'C.UTF-8',
  });
  assert.deepEqual(
    sandboxEnvironment({ env: { A: '1', LANG: 'de_DE.UTF-8' } }, { path: '/bin', lang: 'en_US.UTF-8' }),
    {
      PATH: '/bin',
      HOME: SANDBOX_HOME,
      LANG: 'de_DE.UTF-8',
      A: '1',
    },
  );
});

test('workspaceFromSource: the folder above .agents for workspace entries only', () => {
  assert.equal(workspaceFromSource({ layer: 'workspace', source: '/home/u/proj/.agents/mcp.json:4' }), '/home/u/proj');
  assert.equal(workspaceFromSource({ layer: 'plugin', source: '/p/kit/.mcp.json:2' }), undefined);
  assert.equal(workspaceFromSource({ layer: 'inline', source: '--mcp #1' }), undefined);
});

function entry(trusted: boolean): ServerEntry {
  return {
    name: 'x',
    layer: trusted ? 'configDir' : 'workspace',
    source: trusted ? '/c/mcp.json:1' : '/w/.agents/mcp.json:1',
    trusted,
    type: 'stdio',
    command: 'node',
    args: ['s.js'],
    env: { A: '1' },
    envFrom: {},
    headers: {},
    enabled: true,
    cwd: '/w',
  };
}
const workerEnv = () => ({ PATH: '/bin', SECRET_SAUCE: 'x' });

test('StdioSandbox: trusted entries, and every entry under allow, run as written with the worker environment', async () => {
  for (const [mode, e] of [
    ['sandbox', entry(true)],
    ['refuse', entry(true)],
    ['allow', entry(false)],
  ] as const) {
    const launch = await new StdioSandbox({ mode, hiddenPaths: [], bwrap: '/nonexistent/bwrap' }).launch(e, workerEnv);
    assert.deepEqual(launch, { command: 'node', args: ['s.js'], cwd: '/w', env: workerEnv() }, mode);
  }
});

test('StdioSandbox: refuse, and sandbox without a working bwrap, refuse untrusted entries saying how to allow them', async () => {
  await assert.rejects(
    new StdioSandbox({ mode: 'refuse', hiddenPaths: [] }).launch(entry(false), workerEnv),
    (err: Error) =>
      err instanceof UntrustedStdioRefused &&
      /DMCP_UNTRUSTED_STDIO=refuse/.test(err.message) &&
      /DMCP_UNTRUSTED_STDIO=allow/.test(err.message),
  );
  await assert.rejects(
    new StdioSandbox({ mode: 'sandbox', hiddenPaths: [], bwrap: '/nonexistent/bwrap' }).launch(entry(false), workerEnv),
    (err: Error) =>
      err instanceof UntrustedStdioRefused &&
      /\/nonexistent\/bwrap not found/.test(err.message) &&
      /DMCP_UNTRUSTED_STDIO=allow/.test(err.message),
  );
  // A binary that runs but is not bwrap fails the probe the same way, with what it said.
  await assert.rejects(
    new StdioSandbox({ mode: 'sandbox', hiddenPaths: [], bwrap: '/bin/false' }).launch(entry(false), workerEnv),
    (err: Error) => err instanceof UntrustedStdioRefused && /failed its test run/.test(err.message),
  );
});

/**
 * The host folders a bwrap argument vector shows (the second word of every bind), but for
 * durable-mcp's own folder, which a checkout under /tmp adds to every sandbox.
 */
function boundFolders(args: string[]): string[] {
  const bound: string[] = [];
  const end = args.indexOf('--');
  for (let i = 0; i < end; i++) if (args[i] === '--bind' || args[i] === '--ro-bind') bound.push(args[i + 1]!);
  return bound.filter((f) => f !== INSTALL_ROOT);
}

function untrusted(layer: 'workspace' | 'plugin', fields: Partial<ServerEntry>): ServerEntry {
  const source = layer === 'workspace' ? '/home/u/proj/.agents/mcp.json:3' : '/opt/plugins/kit/.mcp.json:2';
  return {
    name: 'x',
    layer,
    source,
    trusted: false,
    type: 'stdio',
    command: '/usr/bin/node',
    args: ['server.js'],
    env: {},
    envFrom: {},
    headers: {},
    enabled: true,
    cwd: layer === 'workspace' ? '/home/u/proj' : '/opt/plugins/kit',
    ...fields,
  };
}

test('sandboxPathsFor: /tmp folders an untrusted command line names stay hidden behind the private /tmp', () => {
  for (const layer of ['workspace', 'plugin'] as const) {
    const e = untrusted(layer, {
      command: '/tmp/secret-dir/bin/server',
      args: ['/tmp/secret-dir/server.js', '--data=/tmp/other', '/tmp/other/x'],
    });
    const args = sandboxArgs({ command: e.command!, args: e.args }, sandboxPathsFor(e, '/home/u/proj', NONE));
    const bound = boundFolders(args);
    assert.ok(
      !bound.some((f) => f === '/tmp/secret-dir' || f === '/tmp/other' || f.startsWith('/tmp/')),
      `${layer}: ${JSON.stringify(bound)}`,
    );
    assert.deepEqual(
      bound,
      layer === 'workspace' ? ['/', '/home/u/proj'] : ['/', '/opt/plugins/kit', '/home/u/proj'],
      layer,
    );
  }
});

test('sandboxPathsFor: an untrusted cwd outside the workspace (or its plugin folder) is refused, naming the field and the file', () => {
  const refused: [layer: 'workspace' | 'plugin', cwd: string][] = [
    ['workspace', '/tmp/secret-dir'],
    ['workspace', '/home/u'],
    ['workspace', '/home/u/proj-other'],
    ['workspace', '/opt/plugins/kit'],
    ['plugin', '/tmp/secret-dir'],
    ['plugin', '/opt/plugins'],
    ['plugin', '/opt/plugins/kit-other'],
  ];
  for (const [layer, cwd] of refused) {
    const e = untrusted(layer, { cwd });
    assert.throws(
      () => sandboxPathsFor(e, '/home/u/proj', NONE),
      (err: Error) => {
        assert.ok(err instanceof UntrustedStdioRefused, String(err));
        assert.ok(err.message.includes(`"cwd" ${JSON.stringify(cwd)} in ${e.source} lies outside`), err.message);
        assert.match(
          err.message,
          layer === 'plugin'
            ? /outside the workspace \/home\/u\/proj and the plugin folder \/opt\/plugins\/kit/
            : /outside the workspace \/home\/u\/proj/,
        );
        return true;
      },
      `${layer} ${cwd}`,
    );
  }
  // A plugin entry without a workspace: only its plugin folder.
  assert.throws(
    () => sandboxPathsFor(untrusted('plugin', { cwd: '/home/u/proj' }), undefined, NONE),
    /"cwd" "\/home\/u\/proj" in \/opt\/plugins\/kit\/\.mcp\.json:2 lies outside the plugin folder \/opt\/plugins\/kit/,
  );
});

test('sandboxPathsFor: a cwd inside the workspace or the plugin folder runs, and is not bound on its own', () => {
  const allowed: [layer: 'workspace' | 'plugin', cwd: string, bound: string[]][] = [
    ['workspace', '/home/u/proj', ['/', '/home/u/proj']],
    ['workspace', '/home/u/proj/tools/srv', ['/', '/home/u/proj']],
    ['plugin', '/opt/plugins/kit', ['/', '/opt/plugins/kit', '/home/u/proj']],
    ['plugin', '/opt/plugins/kit/bin', ['/', '/opt/plugins/kit', '/home/u/proj']],
    ['plugin', '/home/u/proj/sub', ['/', '/opt/plugins/kit', '/home/u/proj']],
  ];
  for (const [layer, cwd, bound] of allowed) {
    const e = untrusted(layer, { cwd });
    const args = sandboxArgs({ command: e.command!, args: e.args }, sandboxPathsFor(e, '/home/u/proj', NONE));
    assert.deepEqual(boundFolders(args), bound, `${layer} ${cwd}`);
    assert.deepEqual(args.slice(args.indexOf('--chdir'), args.indexOf('--chdir') + 2), ['--chdir', cwd]);
  }
});

test('sandboxPathsFor: a plugin installed under the host /tmp still sees its own folder', () => {
  const e = {
    ...untrusted('plugin', { cwd: '/tmp/ci/plugins/kit', args: ['/tmp/ci/plugins/kit/server.js'] }),
    source: '/tmp/ci/plugins/kit/.mcp.json:1',
  };
  const args = sandboxArgs({ command: e.command!, args: e.args }, sandboxPathsFor(e, '/home/u/proj', NONE));
  assert.deepEqual(boundFolders(args), ['/', '/home/u/proj', '/tmp/ci/plugins/kit']);
});

test('sandboxPathsFor: under a hidden home the workspace and the folders the worker runs from show through; nothing inside another hidden folder does', () => {
  const hidden: HiddenPaths = {
    folders: ['/home/u', '/home/u/.config/durable-mcp', '/opt/secret'],
    files: ['/etc/temporal/client.key'],
    home: '/home/u',
  };
  const runtime = [
    '/home/u/.nvm/versions/node/v20.19.5',
    '/usr',
    '/home/u',
    '/home/u/.config/durable-mcp/bin',
    '/home/u/.local/bin',
    '/opt/secret/bin',
  ];
  const paths = sandboxPathsFor(untrusted('workspace', {}), '/home/u/proj', hidden, runtime);
  assert.deepEqual(paths, {
    workspace: '/home/u/proj',
    cwd: '/home/u/proj',
    // durable-mcp's own folder comes first when it lies under /tmp (a checkout there), wherever this runs.
    readable: [...operatorFolders(undefined), '/home/u/.nvm/versions/node/v20.19.5', '/home/u/.local/bin'],
    hidden: hidden.folders,
    hiddenFiles: hidden.files,
  });
  // Without a home nothing is shown again: an operator's own hidden folder wins over PATH.
  assert.deepEqual(
    sandboxPathsFor(untrusted('workspace', {}), '/home/u/proj', { folders: ['/opt/secret'], files: [] }, runtime)
      .readable,
    operatorFolders(undefined),
  );
});

test('sandboxPathsFor: a workspace that is itself a hidden folder (the home, the data dir) is refused, naming it', () => {
  const hidden: HiddenPaths = { folders: ['/home/u', '/srv/data'], files: [], home: '/home/u' };
  assert.throws(
    () => sandboxPathsFor(untrusted('workspace', { cwd: undefined }), '/home/u', hidden),
    (err: Error) =>
      err instanceof UntrustedStdioRefused &&
      /the workspace \/home\/u is the worker's home, which the sandbox hides/.test(err.message),
  );
  assert.throws(
    () => sandboxPathsFor(untrusted('workspace', { cwd: undefined }), '/srv/data/', hidden),
    (err: Error) =>
      err instanceof UntrustedStdioRefused &&
      /the workspace \/srv\/data is a folder the sandbox hides/.test(err.message),
  );
  assert.equal(
    sandboxPathsFor(untrusted('workspace', { cwd: undefined }), '/srv/data/ws', hidden).workspace,
    '/srv/data/ws',
  );
});

test('existingHiddenPaths: symlinks resolved, folders and files apart, missing paths skipped, a home of / ignored', async () => {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'dmcp-hidden-')));
  try {
    await mkdir(join(dir, 'data'));
    await mkdir(join(dir, 'home'));
    await writeFile(join(dir, 'client.key'), 'k');
    await symlink(join(dir, 'client.key'), join(dir, 'key-link'));
    const found = await existingHiddenPaths({
      hiddenPaths: [
        join(dir, 'data'),
        join(dir, 'key-link'),
        join(dir, 'missing'),
        join(dir, 'data', '..', 'client.key'),
      ],
      home: join(dir, 'home'),
    });
    assert.deepEqual(found, {
      folders: [join(dir, 'data'), join(dir, 'home')],
      files: [join(dir, 'client.key')],
      home: join(dir, 'home'),
    });
    assert.deepEqual(await existingHiddenPaths({ hiddenPaths: [], home: '/' }), { folders: [], files: [] });
    assert.deepEqual(await existingHiddenPaths({ hiddenPaths: [], home: join(dir, 'missing') }), {
      folders: [],
      files: [],
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("operatorFolders: only the plugin folder, and durable-mcp's own folder when the host /tmp would hide it", () => {
  assert.deepEqual(operatorFolders(undefined, '/usr/lib/node_modules/durable-mcp'), []);
  assert.deepEqual(operatorFolders('/opt/plugins/kit', '/srv/durable-mcp'), ['/opt/plugins/kit']);
  assert.deepEqual(operatorFolders('/tmp/ci/plugins/kit', '/tmp/ci/checkout'), [
    '/tmp/ci/plugins/kit',
    '/tmp/ci/checkout',
  ]);
  assert.deepEqual(operatorFolders(undefined, '/tmp/ci/checkout'), ['/tmp/ci/checkout']);
  assert.deepEqual(operatorFolders(undefined, '/tmpfoo/checkout'), []);
  assert.deepEqual(operatorFolders('/', '/tmp'), []);
});

test("runtimeFolders: durable-mcp's and Node's folders, and the existing absolute folders on PATH", async () => {
  const nodePrefix = await realpath(dirname(dirname(process.execPath)));
  const folders = await runtimeFolders(
    `/nonexistent/bin${delimiter}relative/bin${delimiter}/bin${delimiter}${nodePrefix}`,
  );
  assert.deepEqual(folders, [...new Set([await realpath(INSTALL_ROOT), nodePrefix, await realpath('/bin')])]);
});
