/**
 * A model turn as an operator sees it afterwards: its transcript rebuilt from history shows each
 * model step between the calls, and the worker's metrics count the steps and tokens per model.
 * A real worker with metrics on, the scripted model server and the echo fixture server.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { renderTranscript } from '../../client/transcriptText.js';
import { fixtureServer, killGroups, startHarness, tempDir, writeConfigDir, type Harness } from '../support/harness.js';
import { startModelServer, writeModelsJson } from '../support/models.js';

const SCRIPT = {
  prompts: {
    'echo hello': [
      { toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'hello from the tool' } }] },
      { text: 'The tool said: hello from the tool.' },
    ],
    'fail once': [{ fail: [{ status: 500, message: 'the model server hiccuped' }], text: 'made it' }],
  },
  steps: [{ text: 'default answer' }],
};

/** One sample of a Prometheus text exposition: `name{labels} value`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('a model turn seen in its transcript and in the metrics', () => {
  const started = new Set<number>();
  let h: Harness;
  let metricsUrl: string;
  const servers = { inlineSpecs: [`echo:${process.execPath} ${fixtureServer}`] };
  const session = (name: string) => `seen-${name}-${randomBytes(4).toString('hex')}`;
  const scrape = async () => (await fetch(metricsUrl)).text();

  before(async () => {
    const dir = await tempDir();
    const model = await startModelServer(dir, 'model', SCRIPT, started);
    const configDir = `${dir}/config`;
    const env = await writeConfigDir(configDir, {});
    const scripted = { provider: 'openai-compatible', model: 'scripted-1', baseURL: model.baseURL };
    // Two names for one endpoint: each test counts its own model's steps.
    await writeModelsJson(configDir, { scripted, 'scripted.retry': { ...scripted, model: 'scripted-2' } });
    h = await startHarness('model-turn-seen', { ...env, DMCP_METRICS_PORT: '0' });
    assert.ok(h.worker.metrics, 'the worker serves metrics');
    metricsUrl = h.worker.metrics.url;
  });
  after(async () => {
    await h?.stop();
    killGroups(started);
  });

  test('the transcript shows both steps around the call, and the answer; the metrics count them', async (t) => {
    const result = await h.client.runModelTurn({
      sessionId: session('echo'),
      servers,
      model: { name: 'scripted', prompt: 'please echo hello' },
    });
    assert.equal(result.answer, 'The tool said: hello from the tool.');
    const callId = result.calls[0]!.id;

    const transcript = await h.client.transcript(result.turnId);
    assert.equal(transcript.answer, 'The tool said: hello from the tool.');
    assert.deepEqual(
      transcript.calls.map((c) => [c.id, c.name]),
      [[callId, 'mcp__echo__echo']],
    );
    const steps = transcript.modelSteps ?? [];
    assert.deepEqual(
      steps.map((s) => [s.step, s.model, s.callsBefore, s.attempts, s.toolCalls]),
      [
        [1, 'scripted', 0, 1, [{ id: callId, name: 'mcp__echo__echo' }]],
        [2, 'scripted', 1, 1, []],
      ],
      'step 1 before the call it asked for, step 2 after it',
    );
    assert.equal(steps[1]!.text, 'The tool said: hello from the tool.');
    assert.equal(steps[0]!.finishReason, 'tool-calls');
    assert.equal(steps[1]!.finishReason, 'stop');
    for (const s of steps) {
      assert.ok(
        s.usage!.inputTokens! > 0 && s.usage!.outputTokens! > 0,
        `step ${s.step}: tokens ${JSON.stringify(s.usage)}`,
      );
      assert.deepEqual(s.failures, []);
    }

    const text = renderTranscript(transcript);
    t.diagnostic(text);
    const lines = text.split('\n');
    const at = (pattern: RegExp) => {
      const i = lines.findIndex((l) => pattern.test(l));
      assert.ok(i >= 0, `no line ${pattern} in\n${text}`);
      return i;
    };
    const step1 = at(/^ {2}Model step 1 \(scripted, \d+ in \/ \d+ out tokens, tool-calls\)$/);
    const asks = at(new RegExp(`^ {4}asks: mcp__echo__echo \\[${callId}\\]$`));
    const call = at(new RegExp(`^ {2}\\[${callId}\\] mcp__echo__echo \\{"text":"hello from the tool"\\}`));
    const step2 = at(
      /^ {2}Model step 2 \(scripted, \d+ in \/ \d+ out tokens, stop\): The tool said: hello from the tool\.$/,
    );
    const answer = at(/^Answer: The tool said: hello from the tool\.$/);
    assert.deepEqual([step1 < asks, asks < call, call < step2, step2 < answer], [true, true, true, true], text);

    const metrics = await scrape();
    assert.equal(sample(metrics, 'dmcp_model_steps_total', { model: 'scripted', outcome: 'ok' }), 2);
    assert.equal(sample(metrics, 'dmcp_model_steps_total', { model: 'scripted', outcome: 'error' }), undefined);
    assert.equal(sample(metrics, 'dmcp_model_step_duration_seconds_count', { model: 'scripted' }), 2);
    const input = sample(metrics, 'dmcp_model_tokens_total', { model: 'scripted', kind: 'input' });
    const output = sample(metrics, 'dmcp_model_tokens_total', { model: 'scripted', kind: 'output' });
    assert.ok(input! > 0 && output! > 0, `tokens: ${input} in, ${output} out`);
    assert.equal(
      input,
      steps.reduce((sum, s) => sum + s.usage!.inputTokens!, 0),
      'the counter adds what the steps reported',
    );
    assert.equal(sample(metrics, 'dmcp_tool_calls_total', { server: 'echo', tool: 'echo', outcome: 'ok' }), 1);
    assert.doesNotMatch(metrics, /echo hello|hello from the tool/, 'no prompt, argument or answer in the metrics');
  });

  test('a step retried after a model server error shows its attempts and failure; the metrics count the failed attempt', async (t) => {
    const result = await h.client.runModelTurn({
      sessionId: session('retry'),
      servers,
      model: { name: 'scripted.retry', prompt: 'fail once' },
    });
    assert.equal(result.answer, 'made it');
    const transcript = await h.client.transcript(result.turnId);
    const [step] = transcript.modelSteps ?? [];
    assert.equal(step?.attempts, 2);
    assert.equal(step?.failures.length, 1);
    assert.match(step!.failures[0]!, /hiccuped/);
    t.diagnostic(renderTranscript(transcript).split('\n').slice(-5).join('\n'));
    assert.match(
      renderTranscript(transcript),
      /^ {2}Model step 1 \(scripted\.retry, .*, 2 attempts\): made it\n {4}attempt failed: .*hiccuped/m,
    );

    const metrics = await scrape();
    assert.equal(sample(metrics, 'dmcp_model_steps_total', { model: 'scripted.retry', outcome: 'error' }), 1);
    assert.equal(sample(metrics, 'dmcp_model_steps_total', { model: 'scripted.retry', outcome: 'ok' }), 1);
    assert.equal(sample(metrics, 'dmcp_model_steps_total', { model: 'scripted', outcome: 'ok' }), 2, 'per model');
  });
});
