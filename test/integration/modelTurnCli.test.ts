/**
 * Model turns from the command line on the embedded default (each command starts its own Temporal
 * dev server and worker), against the scripted model server: `run --model --prompt` prints the answer (and, with --json, the result with its answer and
 * calls), and `chat` holds one conversation over the lines it reads.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TurnResult } from '../../contract/index.js';
import { cliScript, fixtureServer, killGroups, runCli, tempDir, writeConfigDir } from '../support/harness.js';
import { startModelServer, writeModelsJson, type ModelServer } from '../support/models.js';

const SCRIPT = {
  prompts: {
    'echo hello': [
      { text: 'Asking the tool.', toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'hello from the cli' } }] },
      { text: 'The tool said hello.' },
    ],
    'first line': [{ text: 'First answer.' }],
    'second line': [{ text: 'Second answer.' }],
  },
  steps: [{ text: 'default' }],
};

describe('model turns from the CLI', () => {
  const started = new Set<number>();
  let env: NodeJS.ProcessEnv;
  let model: ModelServer;

  before(async () => {
    const dir = await tempDir();
    model = await startModelServer(dir, 'cli-model', SCRIPT, started);
    const configDir = join(dir, 'config');
    const config = await writeConfigDir(configDir, {});
    await writeModelsJson(configDir, {
      local: { provider: 'openai-compatible', model: 'scripted-1', baseURL: model.baseURL },
    });
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DMCP_DATA_DIR: join(dir, 'data'),
      ...config,
    };
  });
  after(() => killGroups(started));

  test('run --model --prompt prints the steps and the answer; --json carries answer and calls', async () => {
    const mcp = `echo:${process.execPath} ${fixtureServer}`;
    const plain = await runCli(['run', '--model', 'local', '--prompt', 'please echo hello', '--mcp', mcp], env);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stdout, 'The tool said hello.\n');
    assert.match(plain.stderr, /Asking the tool\.\n {2}→ mcp__echo__echo \(call_[0-9a-f]{6}_0_0\)\n/);
    assert.match(plain.stderr, /turn \S+\/turn-1 ended by answer/);

    const json = await runCli(
      ['run', '--model', 'local', '--prompt', 'please echo hello', '--mcp', mcp, '--json'],
      env,
    );
    assert.equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout) as TurnResult;
    assert.equal(result.answer, 'The tool said hello.');
    assert.equal(result.endedBy, 'answer');
    assert.equal(result.calls[0]?.outcome.status, 'ok');
    assert.equal(result.modelSteps?.length, 2);

    const refused = await runCli(['run', '--model', 'local', '--call', 'mcp__echo__echo {}', '--mcp', mcp], env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /a model turn needs both --model NAME and --prompt TEXT/);
  });

  test('chat: each line a turn of one conversation; an empty line ends it', async () => {
    const child = spawn(process.execPath, [cliScript, 'chat', '--model', 'local'], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.stdin.write('the first line\n');
    const waitFor = async (text: string) => {
      for (let i = 0; i < 600 && !stdout.includes(text); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(stdout.includes(text), `no ${JSON.stringify(text)} within 60 s; stderr: ${stderr}`);
    };
    await waitFor('First answer.');
    child.stdin.write('the second line\n');
    await waitFor('Second answer.');
    child.stdin.end('\n');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, stderr);
    assert.equal(stdout, 'First answer.\nSecond answer.\n');
    const second = (await model.requests()).find((r) => r.key === 'second line');
    assert.equal(
      second?.messages,
      4,
      'the second turn continues the first: system, first prompt, its answer, the new prompt',
    );
  });
});
