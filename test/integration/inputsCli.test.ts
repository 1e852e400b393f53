/**
 * Input requests from the command line: `run --answer-input` for unattended runs, and a `run` that
 * waits while `durable-mcp answer` lists and answers its questions from another process. Real
 * Temporal, a real 2026-era server over HTTP, the CLI as a user runs it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { cliScript, runCli, tempDir, temporalAddress, uniqueQueue, waitUntil } from '../support/harness.js';
import { killStartedServers, modernHttpServer } from '../support/inputs.js';

describe('input requests from the CLI', { timeout: 120_000 }, () => {
  let env: NodeJS.ProcessEnv;
  let configFile: string;
  let worker: ChildProcess | undefined;
  before(async () => {
    const dir = await tempDir('dmcp-inputs-cli-');
    const url = await modernHttpServer(join(dir, 'server.log'));
    configFile = join(dir, 'mcp.json');
    await writeFile(configFile, JSON.stringify({ mcpServers: { db: { url } } }));
    const taskQueue = uniqueQueue('inputs-cli');
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DMCP_DATA_DIR: join(dir, 'data'),
      DMCP_NO_USER_CONFIG: '1',
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_TASK_QUEUE: taskQueue,
      DMCP_ALLOWED_CONFIG_DIRS: dir,
    };
    // With TEMPORAL_ADDRESS the CLI is only a client: its turns run on a `durable-mcp worker` of the same data dir (its turn key).
    const started = spawnChild(process.execPath, [cliScript, 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    worker = started;
    let out = '';
    started.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
    started.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
    await waitUntil('the worker to start', async () => out.includes('worker started'), 60_000);
  });
  after(() => {
    worker?.kill('SIGKILL');
    killStartedServers();
  });

  /** `durable-mcp answer ARGS` with `input` on its stdin, as `durable-mcp answer ... < answer.json` runs it. */
  function answerCli(args: string[], input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [cliScript, 'answer', ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.stdin.end(input);
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    return new Promise((resolve) =>
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      }),
    );
  }

  test('run --answer-input decline and accept-defaults answer unattended; the server says what that meant', async () => {
    const declined = await runCli(
      ['run', '--mcp-config', configFile, '--call', 'mcp__db__provision {}', '--answer-input', 'decline'],
      env,
    );
    assert.equal(declined.code, 1, declined.stderr);
    assert.match(
      declined.stdout,
      /mcp__db__provision: tool reported an error: provisioning stopped: the name was declined/,
    );
    assert.match(
      declined.stderr,
      /mcp__db__provision asks \(.+:1:name\): Name the new database\n {2}answered: decline/,
    );
    // The name is required and has no default: accept-defaults cannot accept, so it declines.
    const defaults = await runCli(
      ['run', '--mcp-config', configFile, '--call', 'mcp__db__open_page {}', '--answer-input', 'accept-defaults'],
      env,
    );
    assert.equal(defaults.code, 0, defaults.stderr);
    assert.match(defaults.stdout, /mcp__db__open_page: page: decline/);
    assert.match(defaults.stderr, /open this page yourself: https:\/\/example\.invalid\/auth\?session=1/);
    const bad = await runCli(
      ['run', '--mcp-config', configFile, '--call', 'mcp__db__provision {}', '--answer-input', 'maybe'],
      env,
    );
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--answer-input must be one of accept-defaults, decline, cancel/);
  });

  test('a run waits while durable-mcp answer lists and answers its questions from another shell', async () => {
    const child = spawn(
      process.execPath,
      [
        cliScript,
        'run',
        '--session',
        `cli-wait-${Date.now()}`,
        '--mcp-config',
        configFile,
        '--call',
        'mcp__db__provision {}',
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await waitUntil(
        'the hint to answer from another shell',
        async () => /durable-mcp answer \S+ \S+:1:name/.test(stderr),
        60_000,
      );
      const [, turnId, requestId] = /durable-mcp answer (\S+) (\S+:1:name)/.exec(stderr)!;
      const listed = await runCli(['answer', turnId!], env);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(
        listed.stdout,
        /mcp__db__provision asks \(.+:1:name\): Name the new database\n {2}schema: \{"type":"object"/,
      );
      // An answer on the command line would be visible to every local user and kept in shell history.
      const onCommandLine = await runCli(['answer', turnId!, requestId!, '{"name":"cli-db"}'], env);
      assert.equal(onCommandLine.code, 2, onCommandLine.stderr);
      assert.match(onCommandLine.stderr, /the answer is read from stdin, never from the command line/);
      const refused = await answerCli([turnId!, requestId!], '{"name":"x"}');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /error: answer to .+:1:name refused: "name" must be at least 2 characters long/);
      const answered = await answerCli([turnId!, requestId!], '{"name":"cli-db"}\n');
      assert.equal(answered.code, 0, answered.stderr);
      assert.equal(answered.stdout, `${requestId}: accept\n`);
      await waitUntil('the second question', async () => /:2:confirm/.test(stderr), 30_000);
      const confirm = await answerCli(
        [turnId!, requestId!.replace(':1:name', ':2:confirm'), '--json'],
        '{"confirm":true}',
      );
      assert.equal(confirm.code, 0, confirm.stderr);
      assert.deepEqual(JSON.parse(confirm.stdout), {
        requestId: requestId!.replace(':1:name', ':2:confirm'),
        action: 'accept',
      });
      assert.equal(await exited, 0, stderr);
      assert.match(stdout, /mcp__db__provision: Provisioned cli-db/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
