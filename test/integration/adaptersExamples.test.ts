import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { loadSettings } from '../../settings/index.js';
import { startHarness, tempDir, temporalAddress, type Harness } from '../support/harness.js';

const example = (name: string) => fileURLToPath(new URL(`../../examples/${name}.js`, import.meta.url));

/** Runs an example as its own process; resolves with its exit code and output. */
function runExample(
  name: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [example(name)], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_NO_USER_CONFIG: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** What every example prints for its two calls and its turn. */
function checkOutput(
  name: string,
  out: { code: number | null; stdout: string; stderr: string },
  imageTool: string,
): string {
  assert.equal(out.code, 0, `${name} exited with ${out.code}\n${out.stdout}\n${out.stderr}`);
  assert.match(out.stdout, /- everything: connected, \d+ tools, named mcp__everything__\*/);
  assert.match(out.stdout, /call_echo mcp__everything__echo: <toolOutput> Echo: hello durable <\/toolOutput>/);
  assert.match(
    out.stdout,
    new RegExp(
      `call_image ${imageTool}: <toolOutput> .*1 image \\(content\\[\\d\\]\\) follows this output.* \\+ image \\(image/png, \\d+ bytes\\)`,
    ),
  );
  assert.match(out.stdout, /Model: The server echoed "hello durable" and sent a tiny PNG\./);
  const turnId = /Turn (\S+) ended \(endTurn\), 2 calls recorded/.exec(out.stdout)?.[1];
  assert.ok(turnId, `the turn line (${out.stdout})`);
  return turnId;
}

describe('the examples, each driving a real turn against server-everything with a scripted model', () => {
  let h: Harness;
  let dataDir: string;
  before(async () => {
    dataDir = await tempDir();
    // The examples' client uses the project's data converter (compression, payload store), as workers do.
    const env = { DMCP_DATA_DIR: dataDir };
    h = await startHarness('examples', env, { dataConverter: dataConverterFor(loadSettings(env)) });
  });
  after(async () => {
    await h?.stop();
  });

  for (const [name, imageTool] of [
    ['openaiAgents', 'mcp__everything__get_tiny_image'],
    ['langchain', 'mcp__everything__get-tiny-image'],
  ] as const) {
    test(`examples/${name}: against a worker on TEMPORAL_ADDRESS`, async () => {
      const out = await runExample(name, {
        TEMPORAL_ADDRESS: temporalAddress(),
        DMCP_TASK_QUEUE: h.taskQueue,
        DMCP_DATA_DIR: dataDir,
      });
      const turnId = checkOutput(name, out, imageTool);
      const transcript = await h.client.transcript(turnId);
      // The two calls run in parallel: history has them in the order they finished.
      assert.deepEqual(transcript.calls.map((c) => [c.id, c.outcome?.status]).sort(), [
        ['call_echo', 'ok'],
        ['call_image', 'ok'],
      ]);
    });
  }

  test('examples/aiSdk: from nothing, as on a clean clone (its own embedded dev server and worker)', async () => {
    const out = await runExample('aiSdk', { DMCP_DATA_DIR: await tempDir() });
    checkOutput('aiSdk', out, 'mcp__everything__get-tiny-image');
  });
});
