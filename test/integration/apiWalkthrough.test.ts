/**
 * docs/api-walkthrough.md, run as written: `durable-mcp dev` started with the walkthrough's
 * settings, then each shell command of its console block run by bash (curl and jq, as a reader
 * would), its output compared with the one the page shows. Only what changes from run to run is
 * masked (request IDs, times, durations); the API's port is the one this dev got.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { killGroups, startDevProcess, tempDir } from '../support/harness.js';

const page = fileURLToPath(new URL('../../../docs/api-walkthrough.md', import.meta.url));

/** One `$ ` command of the page's console block (continuation lines joined) and the output shown after it. */
interface Step {
  command: string;
  output: string;
}

/** The steps of the page's first ```console block. */
export function walkthroughSteps(markdown: string): Step[] {
  const block = /```console\n([\s\S]*?)```/.exec(markdown)?.[1];
  assert.ok(block, 'the page has a console block');
  const steps: Step[] = [];
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith('$ ')) {
      if (line !== '') steps.at(-1)!.output += `${line}\n`;
      continue;
    }
    let command = line.slice(2);
    while (command.endsWith('\\')) command = `${command}\n${lines[++i]!}`;
    steps.push({ command: command.replace(/\s+#[^'"\n]*$/, ''), output: '' });
  }
  return steps;
}

/** What differs from run to run, masked in both the page's output and this run's. */
function masked(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z/g, '<time>')
    .replace(/"durationMs":\d+/g, '"durationMs":<n>')
    .trim();
}

const started: number[] = [];
after(() => killGroups(started));

test('docs/api-walkthrough.md runs as written against durable-mcp dev', { timeout: 240_000 }, async () => {
  const steps = walkthroughSteps(readFileSync(page, 'utf8'));
  const [start, ...requests] = steps;
  assert.match(start!.command, /^DMCP_ALLOW_INLINE=true DMCP_WORKSPACE_ROOTS=\$PWD npx durable-mcp dev$/);
  const workspace = await tempDir('dmcp-walkthrough-');
  const dev = await startDevProcess(
    'dmcp-walkthrough-data-',
    () => ({ DMCP_ALLOW_INLINE: 'true', DMCP_WORKSPACE_ROOTS: workspace, DMCP_NO_USER_CONFIG: '1' }),
    (child) => started.push(child.pid!),
  );
  // The page's `.data` is the data dir of the dev it started in the same folder.
  symlinkSync(dev.dataDir, join(workspace, '.data'));
  const api = /HTTP API:\s+(http:\/\/\S+)/.exec(dev.stdout())?.[1];
  assert.ok(api, dev.stdout());
  const host = api.replace(/^http:\/\//, '');
  let prelude = '';
  for (const { command, output } of requests) {
    const script = `set -o pipefail\n${prelude}${command.replaceAll('localhost:8235', host)}`;
    const run = spawnSync('bash', ['-c', script], {
      cwd: workspace,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PWD: workspace },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, `${command}\nexited with ${run.status}: ${run.stderr}`);
    if (output === '') {
      assert.equal(run.stdout, '', `${command} printed what the page does not show`);
      prelude += `${command}\n`;
      continue;
    }
    assert.equal(masked(run.stdout), masked(output), `the output of:\n${command}`);
  }
});
