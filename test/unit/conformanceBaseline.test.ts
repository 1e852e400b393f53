import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CONFORMANCE_LINES } from '../../dev/conformanceTools.js';
import { BASELINE_ISSUES, readBaseline, verdict } from '../conformance/baseline.js';
import { tempDir } from '../support/harness.js';

const sourceDir = fileURLToPath(new URL('../../../test/conformance/', import.meta.url));

test('each committed conformance baseline parses, and every entry names the issue that removes it', async () => {
  for (const line of CONFORMANCE_LINES) {
    const baseline = await readBaseline(join(sourceDir, `baseline-${line.line}.yml`));
    for (const [scenario, issue] of baseline.entries)
      assert.ok(BASELINE_ISSUES.includes(issue), `${scenario}: ${issue}`);
  }
});

test('a baseline entry without its issue, with an unknown one, or listed twice is refused naming file and line', async () => {
  const dir = await tempDir();
  const cases: [string, RegExp][] = [
    ['client:\n  - tools_call\n', /b\.yml:2: tools_call must name the issue/],
    ['client:\n  - tools_call # someday\n', /b\.yml:2: tools_call must name the issue/],
    ['client:\n  - a # logins\n  - a # logins\n', /b\.yml:3: a is listed twice/],
    ['server:\n  - a # logins\n', /b\.yml:1: expected "client:"/],
  ];
  for (const [text, message] of cases) {
    await writeFile(join(dir, 'b.yml'), text);
    await assert.rejects(readBaseline(join(dir, 'b.yml')), message);
  }
  await writeFile(join(dir, 'b.yml'), '# measured\nclient:\n  # eras\n  - tools_call # protocol eras\n');
  assert.deepEqual([...(await readBaseline(join(dir, 'b.yml'))).entries], [['tools_call', 'protocol eras']]);
});

test('a failure not in the baseline is a regression, and a listed scenario that passes is stale', () => {
  const baseline = { entries: new Map([['auth/basic-cimd', 'logins' as const]]) };
  assert.equal(verdict('tools_call', true, baseline), 'pass');
  assert.equal(verdict('tools_call', false, baseline), 'REGRESSION');
  assert.equal(verdict('auth/basic-cimd', false, baseline), 'expected');
  assert.equal(verdict('auth/basic-cimd', true, baseline), 'STALE');
});
