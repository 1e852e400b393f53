import assert from 'node:assert/strict';
import { mkdir, realpath, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { admitRoot, rootProblem, rootsKey, rootsOf, type RootRules } from '../../mcp/roots.js';
import { tempDir } from '../support/harness.js';

const guarded: RootRules = { protected: ['/srv/dmcp/.data', '/home/op/.config/durable-mcp'] };
const cases: { workspace: string; rules: RootRules; problem?: RegExp }[] = [
  { workspace: '/home/op/project', rules: guarded },
  { workspace: '/', rules: guarded, problem: /root of the file system/ },
  { workspace: 'project', rules: guarded, problem: /not an absolute path/ },
  { workspace: '/srv/dmcp/.data', rules: guarded, problem: /lies in \/srv\/dmcp\/\.data/ },
  { workspace: '/srv/dmcp/.data/payloads', rules: guarded, problem: /data or config dir/ },
  { workspace: '/home/op/.config/durable-mcp/x', rules: guarded, problem: /data or config dir/ },
  // A folder that merely starts with the same letters is not inside.
  { workspace: '/srv/dmcp/.data-other', rules: guarded },
  // Without DMCP_WORKSPACE_ROOTS, containing a protected folder is allowed (a project keeps its .data inside).
  { workspace: '/srv/dmcp', rules: guarded },
  { workspace: '/srv/a/b', rules: { ...guarded, within: ['/srv/a'] } },
  { workspace: '/srv/a', rules: { ...guarded, within: ['/srv/a'] } },
  {
    workspace: '/srv/ab',
    rules: { ...guarded, within: ['/srv/a'] },
    problem: /outside DMCP_WORKSPACE_ROOTS \(\/srv\/a\)/,
  },
  { workspace: '/srv/a', rules: { ...guarded, within: [] }, problem: /offers none/ },
  // Where the operator limits workspaces, one that holds the data dir is refused too.
  { workspace: '/srv', rules: { ...guarded, within: ['/srv'] }, problem: /contains \/srv\/dmcp\/\.data/ },
  { workspace: '/srv/dmcp', rules: { ...guarded, within: ['/'] }, problem: /contains \/srv\/dmcp\/\.data/ },
];
for (const c of cases) {
  void test(`root ${c.workspace} within ${JSON.stringify(c.rules.within)}: ${c.problem ? 'refused' : 'offered'}`, () => {
    const problem = rootProblem(c.workspace, c.rules);
    if (c.problem) assert.match(problem ?? '', c.problem);
    else assert.equal(problem, undefined);
  });
}

void test('roots are file:// URIs named after the folder; none without a folder', () => {
  assert.deepEqual(rootsOf('/home/op/my project'), [{ uri: 'file:///home/op/my%20project', name: 'my project' }]);
  assert.deepEqual(rootsOf(undefined), []);
  assert.equal(rootsKey(rootsOf('/a')), rootsKey(rootsOf('/a')));
  assert.notEqual(rootsKey(rootsOf('/a')), rootsKey(rootsOf('/b')));
  assert.notEqual(rootsKey(rootsOf('/a')), rootsKey([]));
});

void test('admitRoot resolves symlinks before it compares: a link into a protected folder is refused', async () => {
  const dir = await realpath(await tempDir());
  const data = join(dir, 'data');
  await mkdir(join(data, 'inner'), { recursive: true });
  await symlink(join(data, 'inner'), join(dir, 'innocent'));
  const refused = await admitRoot(join(dir, 'innocent'), { protected: [data] });
  assert.equal(refused.root, undefined);
  assert.match(refused.problem ?? '', /data or config dir/);
  await mkdir(join(dir, 'ws'));
  assert.deepEqual(await admitRoot(join(dir, 'ws'), { protected: [data], within: [dir] }), { root: join(dir, 'ws') });
  assert.match((await admitRoot(undefined, { protected: [] })).problem ?? '', /no workspace/);
});
