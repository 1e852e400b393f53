/**
 * A model turn as its transcript shows it: the steps between the calls, rendered for a terminal
 * (table-driven, transcripts built by hand), read from hand-made history events, and counted by
 * the worker's metrics per model.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import {
  ActivityName,
  FailureType,
  type CallOutcome,
  type CallToolInput,
  type ModelStepInput,
  type ModelStepResult,
  type TurnResult,
} from '../../contract/index.js';
import { buildTranscript, type Transcript, type TranscriptModelStep } from '../../client/transcript.js';
import { modelStepLines, renderTranscript, usageText } from '../../client/transcriptText.js';
import { createWorkerMetrics } from '../../worker/metrics.js';

const outcome = (text: string): CallOutcome => ({
  status: 'ok',
  isError: false,
  content: [{ type: 'text', text }],
  startedAt: '2026-01-01T00:00:00.000Z',
  durationMs: 3,
  attempts: 1,
});

const step = (over: Partial<TranscriptModelStep>): TranscriptModelStep => ({
  step: 1,
  model: 'scripted',
  callsBefore: 0,
  attempts: 1,
  failures: [],
  text: '',
  toolCalls: [],
  finishReason: 'stop',
  usage: { inputTokens: 84, outputTokens: 12, totalTokens: 96 },
  ...over,
});

const turn = (over: Partial<Transcript>): Transcript => ({
  turnId: 's/turn-1',
  sessionId: 's',
  tools: [],
  calls: [],
  state: 'completed',
  endedBy: 'answer',
  ...over,
});

const echo = (id: string, text: string) => ({
  id,
  name: 'mcp__echo__echo',
  arguments: { text },
  failures: [],
  outcome: outcome(text),
});

/** The lines of the transcript from its calls' heading on: where the steps go. */
const body = (t: Transcript) => {
  const lines = renderTranscript(t).split('\n');
  return lines.slice(lines.findIndex((l) => l.startsWith('Calls ('))).join('\n');
};

const rows: [name: string, transcript: Transcript, expected: string][] = [
  [
    'a step asks for a call, the call runs, the next step answers',
    turn({
      calls: [echo('call_1', 'hi')],
      modelSteps: [
        step({ toolCalls: [{ id: 'call_1', name: 'mcp__echo__echo' }], finishReason: 'tool-calls' }),
        step({ step: 2, callsBefore: 1, text: 'The tool said hi.', usage: { inputTokens: 120, outputTokens: 7 } }),
      ],
      answer: 'The tool said hi.',
    }),
    [
      'Calls (1) and model steps (2):',
      '  Model step 1 (scripted, 84 in / 12 out tokens, tool-calls)',
      '    asks: mcp__echo__echo [call_1]',
      '  [call_1] mcp__echo__echo {"text":"hi"} 3 ms',
      '    hi',
      '  Model step 2 (scripted, 120 in / 7 out tokens, stop): The tool said hi.',
      '',
      'Answer: The tool said hi.',
    ].join('\n'),
  ],
  [
    'two calls of one step, both after it; text with the calls',
    turn({
      calls: [echo('a', 'first'), echo('b', 'second')],
      modelSteps: [
        step({
          text: 'Running both.',
          toolCalls: [
            { id: 'a', name: 'mcp__echo__echo' },
            { id: 'b', name: 'mcp__echo__echo' },
          ],
          finishReason: 'tool-calls',
        }),
        step({ step: 2, callsBefore: 2, text: 'Both ran.' }),
      ],
      answer: 'Both ran.',
    }),
    [
      'Calls (2) and model steps (2):',
      '  Model step 1 (scripted, 84 in / 12 out tokens, tool-calls): Running both.',
      '    asks: mcp__echo__echo [a], mcp__echo__echo [b]',
      '  [a] mcp__echo__echo {"text":"first"} 3 ms',
      '    first',
      '  [b] mcp__echo__echo {"text":"second"} 3 ms',
      '    second',
      '  Model step 2 (scripted, 84 in / 12 out tokens, stop): Both ran.',
      '',
      'Answer: Both ran.',
    ].join('\n'),
  ],
  [
    'a step retried after a 429 shows its attempts and the failure history kept',
    turn({
      modelSteps: [step({ attempts: 3, failures: ['model scripted: 500 oops'], text: 'made it' })],
      answer: 'made it',
    }),
    [
      'Calls (0) and model steps (1):',
      '  Model step 1 (scripted, 84 in / 12 out tokens, stop, 3 attempts): made it',
      '    attempt failed: model scripted: 500 oops',
      '',
      'Answer: made it',
    ].join('\n'),
  ],
  [
    'a step that failed for good, in a failed turn: no answer',
    turn({
      state: 'failed',
      endedBy: undefined,
      failure: 'model scripted, step 1: 400 context length exceeded',
      modelSteps: [
        {
          step: 1,
          model: 'scripted',
          callsBefore: 0,
          attempts: 1,
          failures: ['400 context length exceeded'],
        },
      ],
    }),
    [
      'Calls (0) and model steps (1):',
      '  Model step 1 (scripted) (no answer)',
      '    attempt failed: 400 context length exceeded',
    ].join('\n'),
  ],
  [
    'a step still running, with a call made from outside meanwhile',
    turn({
      state: 'running',
      endedBy: undefined,
      calls: [echo('outside', 'x')],
      modelSteps: [{ step: 1, model: 'scripted', callsBefore: 0, attempts: 1, failures: [] }],
    }),
    [
      'Calls (1) and model steps (1):',
      '  Model step 1 (scripted) (no answer yet)',
      '  [outside] mcp__echo__echo {"text":"x"} 3 ms',
      '    x',
    ].join('\n'),
  ],
  [
    "multi-line text stays under its step; the model's escape sequences are stripped",
    turn({
      modelSteps: [step({ text: 'line one\n\u001b]0;pwned\u0007line \u001b[31mtwo\u001b[0m' })],
      answer: 'line one\n\u001b[2Jline two',
    }),
    [
      'Calls (0) and model steps (1):',
      '  Model step 1 (scripted, 84 in / 12 out tokens, stop): line one',
      '    line two',
      '',
      'Answer: line one',
      '  line two',
    ].join('\n'),
  ],
  [
    'a turn that is not a model turn renders as before',
    turn({ calls: [echo('c1', 'hi')], endedBy: 'endTurn' }),
    ['Calls (1):', '  [c1] mcp__echo__echo {"text":"hi"} 3 ms', '    hi'].join('\n'),
  ],
];
for (const [name, transcript, expected] of rows) {
  void test(`model transcript text: ${name}`, () => assert.equal(body(transcript), expected));
}

const usages: [name: string, usage: TranscriptModelStep['usage'], expected: string | undefined][] = [
  ['input and output', { inputTokens: 84, outputTokens: 12 }, '84 in / 12 out tokens'],
  ['output missing', { inputTokens: 84 }, '84 in / ? out tokens'],
  ['only a total', { totalTokens: 9 }, '9 tokens'],
  ['none reported', {}, undefined],
  ['no usage', undefined, undefined],
];
for (const [name, usage, expected] of usages) {
  void test(`model step tokens: ${name}`, () => assert.equal(usageText(usage), expected));
}

void test('a step line names its step, model and tokens', () => {
  assert.deepEqual(modelStepLines(step({ step: 4, model: 'local.qwen', text: 'ok' })), [
    '  Model step 4 (local.qwen, 84 in / 12 out tokens, stop): ok',
  ]);
});

/** A model turn's history as Temporal records it: activities scheduled, started and completed, then the result. */
function modelTurnHistory() {
  const payload = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
  const events: object[] = [];
  let id = 0;
  const activity = (type: string, input: unknown, result: unknown, started?: { attempt: number; failure: string }) => {
    const scheduled = ++id;
    events.push({
      eventId: scheduled,
      activityTaskScheduledEventAttributes: { activityType: { name: type }, input: payload(input) },
    });
    events.push({
      eventId: ++id,
      activityTaskStartedEventAttributes: {
        scheduledEventId: scheduled,
        attempt: started?.attempt ?? 1,
        ...(started ? { lastFailure: { message: started.failure } } : {}),
      },
    });
    events.push({
      eventId: ++id,
      activityTaskCompletedEventAttributes: { scheduledEventId: scheduled, result: payload(result) },
    });
  };
  const stepInput = (step: number): ModelStepInput => ({ sessionId: 's', model: 'scripted', step, prompt: 'p' });
  const stepResult = (text: string, toolCalls: ModelStepResult['toolCalls']): ModelStepResult => ({
    head: 'h',
    contextRef: 'c',
    text,
    toolCalls,
    finishReason: toolCalls.length ? 'tool-calls' : 'stop',
    usage: { inputTokens: 10, outputTokens: 2 },
    modelId: 'scripted-1',
  });
  const callInput = (callId: string, text: string): CallToolInput => ({
    sessionId: 's',
    firstRunId: 'r1',
    callId,
    name: 'mcp__echo__echo',
    server: 'echo',
    tool: 'echo',
    arguments: { text },
    requestTimeoutMs: 1000,
  });
  events.push({ eventId: ++id, workflowExecutionStartedEventAttributes: { input: payload({ sessionId: 's' }) } });
  const asks = (text: string) => [{ id: 'call_0', name: 'mcp__echo__echo', arguments: { text } }];
  activity(ActivityName.modelStep, stepInput(1), stepResult('', asks('one')), { attempt: 2, failure: '429 slow down' });
  activity(ActivityName.callTool, callInput('call_0', 'one'), outcome('one'));
  // The model reuses its tool-call ID: the turn calls it call_0#2.
  activity(ActivityName.modelStep, stepInput(2), stepResult('again', asks('two')));
  activity(ActivityName.callTool, callInput('call_0#2', 'two'), outcome('two'));
  // The step limit: the last step's call never runs.
  activity(ActivityName.modelStep, stepInput(3), stepResult('and again', asks('three')));
  const result: TurnResult = {
    turnId: 's/turn-1',
    sessionId: 's',
    workerQueue: 'q',
    endedBy: 'maxSteps',
    calls: [
      { id: 'call_0', name: 'mcp__echo__echo', arguments: { text: 'one' }, outcome: outcome('one') },
      { id: 'call_0#2', name: 'mcp__echo__echo', arguments: { text: 'two' }, outcome: outcome('two') },
    ],
    model: 'scripted',
    answer: 'and again',
  };
  events.push({ eventId: ++id, workflowExecutionCompletedEventAttributes: { result: payload(result) } });
  return { events };
}

void test('the transcript reads model steps from history: their place among the calls, attempts and call IDs', () => {
  const t = buildTranscript('s/turn-1', modelTurnHistory());
  assert.deepEqual(
    t.calls.map((c) => c.id),
    ['call_0', 'call_0#2'],
    "the call the last step asked for never ran, and is not the turn's",
  );
  assert.deepEqual(
    t.modelSteps?.map((s) => [s.step, s.callsBefore, s.attempts, s.failures, s.toolCalls?.map((c) => c.id)]),
    [
      [1, 0, 2, ['429 slow down'], ['call_0']],
      [2, 1, 1, [], ['call_0#2']],
      [3, 2, 1, [], ['call_0#3']],
    ],
  );
  assert.deepEqual(t.modelSteps?.[0]?.usage, { inputTokens: 10, outputTokens: 2 });
  assert.equal(t.modelSteps?.[0]?.modelId, 'scripted-1');
  assert.equal(t.answer, 'and again');
  assert.deepEqual(
    body(t)
      .split('\n')
      .filter((l) => /^ {2}\S/.test(l)),
    [
      '  Model step 1 (scripted, 10 in / 2 out tokens, tool-calls, 2 attempts)',
      '  [call_0] mcp__echo__echo {"text":"one"} 3 ms',
      '  Model step 2 (scripted, 10 in / 2 out tokens, tool-calls): again',
      '  [call_0#2] mcp__echo__echo {"text":"two"} 3 ms',
      '  Model step 3 (scripted, 10 in / 2 out tokens, tool-calls): and again',
    ],
  );
});

void test('a turn without model steps has no modelSteps and no answer in its transcript', () => {
  const t = buildTranscript('s/turn-1', { events: [] });
  assert.equal('modelSteps' in t, false);
  assert.equal('answer' in t, false);
});

void test('metrics count model step attempts per model, with their tokens, and never the prompt', async () => {
  const m = createWorkerMetrics({ defaultMetrics: false });
  const ctx = (attempt: number) => ({ info: { activityType: ActivityName.modelStep, attempt } }) as never;
  const input = {
    args: [{ sessionId: 's', model: 'local.qwen', step: 1, prompt: 'secret prompt' } satisfies ModelStepInput],
    headers: {},
  };
  await assert.rejects(
    m.interceptor(ctx(1)).inbound!.execute!(input, async () => {
      throw ApplicationFailure.create({ type: FailureType.ModelUnavailable, message: '429' });
    }),
  );
  await m.interceptor(ctx(2)).inbound!.execute!(input, async () => ({
    text: 'hi',
    toolCalls: [],
    usage: { inputTokens: 84, outputTokens: 12, totalTokens: 96 },
  }));
  await m.interceptor(ctx(1)).inbound!.execute!(input, async () => ({ text: 'no usage', toolCalls: [], usage: {} }));
  const text = await m.registry.metrics();
  assert.match(text, /^dmcp_model_steps_total\{model="local\.qwen",outcome="ok"\} 2$/m);
  assert.match(text, /^dmcp_model_steps_total\{model="local\.qwen",outcome="error"\} 1$/m);
  assert.match(text, /^dmcp_model_step_duration_seconds_count\{model="local\.qwen"\} 3$/m);
  assert.match(text, /^dmcp_model_step_duration_seconds_bucket\{le="300",model="local\.qwen"\} 3$/m);
  assert.match(text, /^dmcp_model_tokens_total\{model="local\.qwen",kind="input"\} 84$/m);
  assert.match(text, /^dmcp_model_tokens_total\{model="local\.qwen",kind="output"\} 12$/m);
  assert.doesNotMatch(text, /secret prompt/);
  assert.doesNotMatch(text, /dmcp_tool_calls_total\{/, 'a model step is not a tool call');
});
