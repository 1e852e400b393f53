import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServerEntry } from '../../config/types.js';
import { SANDBOX_HOME, StdioSandbox, UntrustedStdioRefused, sandboxArgs, sandboxEnvironment, tmpFoldersNamedBy, workspaceFromSource, type SandboxPaths } from '../../mcp/sandbox.js';

const BASE = ['--unshare-pid', '--unshare-ipc', '--die-with-parent', '--cap-drop', 'ALL', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--dir', SANDBOX_HOME];
const run = { command: 'node', args: ['server.js', '--flag'] };
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
    name: 'a cwd and plugin folder outside the workspace are shown read-only, before the workspace',
    paths: { workspace: '/tmp/ws', cwd: '/tmp/plugin/bin', readable: ['/tmp/plugin/bin', '/tmp/plugin'], hidden: [] },
    mounts: ['--ro-bind', '/tmp/plugin/bin', '/tmp/plugin/bin', '--ro-bind', '/tmp/plugin', '/tmp/plugin', '--bind', '/tmp/ws', '/tmp/ws'],
  },
  {
    name: 'no workspace: nothing of the host is writable',
    paths: { cwd: '/opt/plugin', readable: ['/opt/plugin'], hidden: ['/data'] },
    mounts: ['--ro-bind', '/opt/plugin', '/opt/plugin', '--tmpfs', '/data'],
  },
];

for (const c of cases) {
  test(`sandboxArgs: ${c.name}`, () => {
    assert.deepEqual(sandboxArgs(run, c.paths), [...BASE, ...c.mounts, ...tail(c.paths.cwd)]);
  });
}

test('sandboxEnvironment: PATH, HOME and LANG only, then the entry\'s own env', () => {
  assert.deepEqual(sandboxEnvironment({ env: {} }, { path: '/bin', lang: undefined }), { PATH: '/bin', HOME: SANDBOX_HOME, LANG: 'C.UTF-8' });
  assert.deepEqual(sandboxEnvironment({ env: { A: '1', LANG: 'de_DE.UTF-8' } }, { path: '/bin', lang: 'en_US.UTF-8' }), {
    PATH: '/bin', HOME: SANDBOX_HOME, LANG: 'de_DE.UTF-8', A: '1',
  });
});

test('workspaceFromSource: the folder above .agents for workspace entries only', () => {
  assert.equal(workspaceFromSource({ layer: 'workspace', source: '/home/u/proj/.agents/mcp.json:4' }), '/home/u/proj');
  assert.equal(workspaceFromSource({ layer: 'plugin', source: '/p/kit/.mcp.json:2' }), undefined);
  assert.equal(workspaceFromSource({ layer: 'inline', source: '--mcp #1' }), undefined);
});

function entry(trusted: boolean): ServerEntry {
  return {
    name: 'x', layer: trusted ? 'configDir' : 'workspace', source: trusted ? '/c/mcp.json:1' : '/w/.agents/mcp.json:1', trusted,
    type: 'stdio', command: 'node', args: ['s.js'], env: { A: '1' }, envFrom: {}, headers: {}, enabled: true, cwd: '/w',
  };
}
const workerEnv = () => ({ PATH: '/bin', SECRET_SAUCE: 'x' });

test('StdioSandbox: trusted entries, and every entry under allow, run as written with the worker environment', async () => {
  for (const [mode, e] of [['sandbox', entry(true)], ['refuse', entry(true)], ['allow', entry(false)]] as const) {
    const launch = await new StdioSandbox({ mode, hiddenPaths: [], bwrap: '/nonexistent/bwrap' }).launch(e, workerEnv);
    assert.deepEqual(launch, { command: 'node', args: ['s.js'], cwd: '/w', env: workerEnv() }, mode);
  }
});

test('StdioSandbox: refuse, and sandbox without a working bwrap, refuse untrusted entries saying how to allow them', async () => {
  await assert.rejects(new StdioSandbox({ mode: 'refuse', hiddenPaths: [] }).launch(entry(false), workerEnv), (err: Error) =>
    err instanceof UntrustedStdioRefused && /DMCP_UNTRUSTED_STDIO=refuse/.test(err.message) && /DMCP_UNTRUSTED_STDIO=allow/.test(err.message));
  await assert.rejects(new StdioSandbox({ mode: 'sandbox', hiddenPaths: [], bwrap: '/nonexistent/bwrap' }).launch(entry(false), workerEnv), (err: Error) =>
    err instanceof UntrustedStdioRefused && /\/nonexistent\/bwrap not found/.test(err.message) && /DMCP_UNTRUSTED_STDIO=allow/.test(err.message));
  // A binary that runs but is not bwrap fails the probe the same way, with what it said.
  await assert.rejects(new StdioSandbox({ mode: 'sandbox', hiddenPaths: [], bwrap: '/bin/false' }).launch(entry(false), workerEnv), (err: Error) =>
    err instanceof UntrustedStdioRefused && /failed its test run/.test(err.message));
});

test('a server whose code lives under the host /tmp can still run: the top-level /tmp folders its command line names stay readable', () => {
  const cases: [command: string, args: string[], expected: string[]][] = [
    ['/usr/bin/node', ['/tmp/ci/c/dist/server.js', '--flag'], ['/tmp/ci']],
    ['/tmp/tools/bin/server', ['/tmp/tools/data', '/tmp/other/x'], ['/tmp/tools', '/tmp/other']],
    ['node', ['server.js', '/srv/app/x.js', '/tmpfoo/y'], []],
    ['/usr/bin/python3', ['-m', 'pkg'], []],
    ['/usr/bin/node', ['/tmp/../etc/passwd', '/tmp'], []],
  ];
  for (const [command, args, expected] of cases) assert.deepEqual(tmpFoldersNamedBy({ command, args }), expected, `${command} ${args.join(' ')}`);
});
