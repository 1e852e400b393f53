// The worker decides what runs on it. Turns here are started straight through the Temporal client,
// as anyone who can reach the queue could, and through the CLI, as the operator does.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { readTurnKey, refsProof, turnKeyFile } from '../../config/load.js';
import type { ConfigRefs, TurnInput } from '../../contract/index.js';
import { fixtureServer, startHarness, tempDir, writeConfigDir, type Harness } from '../support/harness.js';
import { textOf } from '../support/content.js';

const cwdServer = fileURLToPath(new URL('../fixtures/cwdServer.js', import.meta.url));
const cli = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

describe('the trust boundary: a turn only chooses among what the worker allows', () => {
  let h: Harness;
  let root: string;
  let allowed: string;
  let n = 0;
  const marker = (name: string) => join(root, `${name}.marker`);

  /** Starts agentTurn directly (no TurnClient) and returns the status its history recorded. */
  async function startDirect(refs: object, sessionId = `direct-${++n}`) {
    const workflowId = `${sessionId}/turn-1`;
    const input = {
      sessionId,
      refs,
      batch: [[{ id: 'c1', name: 'mcp__base__echo', arguments: { text: 'still here' } }]],
    };
    const handle = await h.client.client.workflow.start('agentTurn', {
      taskQueue: h.taskQueue,
      workflowId,
      args: [input as unknown as TurnInput],
      workflowExecutionTimeout: '60s',
    });
    const result = (await handle.result()) as { calls: { outcome: { content?: { type: string; text?: string }[] } }[] };
    const t = await h.client.transcript(workflowId);
    return { status: t.status!, echoed: textOf(result.calls[0]?.outcome.content?.[0] as never) };
  }

  before(async () => {
    root = await realpath(await tempDir('dmcp-boundary-'));
    allowed = join(root, 'allowed');
    await mkdir(allowed, { recursive: true });
    const config = await writeConfigDir(join(root, 'config'), {
      base: { command: process.execPath, args: [fixtureServer] },
    });
    h = await startHarness('boundary', { ...config, DMCP_ALLOWED_CONFIG_DIRS: allowed });
  });
  after(async () => {
    await h?.stop();
  });

  test("inline specs in a workflow started without the operator's proof never run; the status says why", async () => {
    const { status, echoed } = await startDirect({
      workspace: root,
      mcpConfigFiles: [],
      inlineSpecs: [`p:touch ${marker('inline')}`],
    });
    assert.equal(echoed, 'still here', "the worker's own servers still serve the turn");
    const p = status.servers.find((s) => s.name === 'p');
    assert.equal(p?.state, 'failed');
    assert.match(
      p?.error ?? '',
      /--mcp #1: not used: the turn carries no valid proof that the worker's operator chose it/,
    );
    assert.equal(existsSync(marker('inline')), false);
  });

  test('a --mcp-config file outside DMCP_ALLOWED_CONFIG_DIRS is not read, even with a valid proof', async () => {
    const file = join(root, 'evil.json');
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: { evil: { command: process.execPath, args: [fixtureServer, `$(touch ${marker('explicit')})`] } },
      }),
    );
    const refs: ConfigRefs = { workspace: root, mcpConfigFiles: [file], inlineSpecs: [] };
    const sessionId = 'direct-signed-file';
    const key = await readTurnKey(turnKeyFile(resolve('.data')));
    const { status } = await startDirect({ ...refs, proof: refsProof(key, sessionId, refs) }, sessionId);
    assert.ok(
      status.warnings.some(
        (w) => w.includes(`--mcp-config ${file}: not used`) && w.includes('DMCP_ALLOWED_CONFIG_DIRS'),
      ),
      status.warnings.join('\n'),
    );
    assert.equal(
      status.servers.some((s) => s.name === 'evil'),
      false,
    );
    assert.equal(existsSync(marker('explicit')), false);
    // Unsigned, the same file is refused for want of a proof before its folder is even considered.
    const unsigned = await startDirect(refs);
    assert.ok(
      unsigned.status.warnings.some((w) => w.includes(`--mcp-config ${file}: not used`) && /no valid proof/.test(w)),
    );
    assert.equal(existsSync(marker('explicit')), false);
  });

  test("a configDir in the turn input is ignored: only the worker's settings name the config dir", async () => {
    const dir = join(root, 'attacker-config');
    await mkdir(dir);
    await writeFile(
      join(dir, 'mcp.json'),
      JSON.stringify({
        mcpServers: {
          base: { command: 'touch', args: [marker('configdir')] },
          extra: { command: 'touch', args: [`$(touch ${marker('configdir-cmd')})`] },
        },
      }),
    );
    const { status, echoed } = await startDirect({
      workspace: root,
      mcpConfigFiles: [],
      inlineSpecs: [],
      configDir: dir,
    });
    assert.equal(echoed, 'still here');
    assert.deepEqual(
      status.servers.map((s) => `${s.name}:${s.state}`),
      ['base:ready'],
    );
    assert.equal(existsSync(marker('configdir')), false);
    assert.equal(existsSync(marker('configdir-cmd')), false);
  });

  test('a signed turn works, and its trusted servers start in their own folders, not in the workspace', async () => {
    const workspace = join(root, 'ws');
    await mkdir(workspace);
    await writeFile(
      join(allowed, 'cwd.json'),
      JSON.stringify({ mcpServers: { filecwd: { command: process.execPath, args: [cwdServer] } } }),
    );
    const result = await h.client.runBatch({
      sessionId: 'signed-cwd',
      workspace,
      servers: {
        mcpConfigFiles: [join(allowed, 'cwd.json')],
        inlineSpecs: [`inlinecwd:${process.execPath} ${cwdServer}`],
      },
      calls: [
        [
          { id: 'a', name: 'mcp__filecwd__cwd' },
          { id: 'b', name: 'mcp__inlinecwd__cwd' },
          { id: 'c', name: 'mcp__base__echo', arguments: { text: 'ok' } },
        ],
      ],
    });
    const byId = new Map(
      result.calls.map((c) => [
        c.id,
        c.outcome.status === 'ok' ? textOf(c.outcome.content[0]) : c.outcome.errorMessage,
      ]),
    );
    const texts = ['a', 'b', 'c'].map((id) => byId.get(id));
    assert.deepEqual(texts, [allowed, process.cwd(), 'ok']);
    assert.ok(!texts.includes(workspace));
  });
});

describe('run: $(command) in a --mcp-config file runs once, on the worker', () => {
  test('one run appends one line to the counter', async () => {
    const dir = await realpath(await tempDir('dmcp-boundary-cli-'));
    const counter = join(dir, 'counter');
    const file = join(dir, 'count.json');
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: {
          f: { command: process.execPath, args: [fixtureServer], env: { RAN: `$(echo ran >> ${counter})` } },
        },
      }),
    );
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DMCP_DATA_DIR: join(dir, 'data'),
      DMCP_NO_USER_CONFIG: '1',
    };
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [cli, 'run', '--mcp-config', file, '--call', 'mcp__f__echo {"text":"counted"}'],
      { env, timeout: 90_000 },
    );
    assert.match(stdout, /mcp__f__echo: counted/);
    assert.deepEqual((await readFile(counter, 'utf8')).split('\n').filter(Boolean), ['ran']);
  });

  test("a turn holding a secret value of the caller's environment is refused before it starts, naming the variable only", async () => {
    const dir = await tempDir('dmcp-boundary-cli-');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DMCP_DATA_DIR: join(dir, 'data'),
      DMCP_NO_USER_CONFIG: '1',
      GITHUB_TOKEN: 'ghp_boundary_test_value',
    };
    const err = await promisify(execFile)(
      process.execPath,
      [
        cli,
        'run',
        '--mcp',
        `f:${process.execPath} ${fixtureServer} --token ghp_boundary_test_value`,
        '--call',
        'mcp__f__echo {"text":"x"}',
      ],
      { env, timeout: 90_000 },
    ).then(
      () => undefined,
      (e: { code?: number; stderr?: string }) => e,
    );
    assert.equal(err?.code, 2);
    assert.match(err?.stderr ?? '', /--mcp #1 contains the value of the secret variable GITHUB_TOKEN/);
    assert.doesNotMatch(err?.stderr ?? '', /ghp_boundary_test_value/);
  });
});
