/**
 * One turn's stream: a real worker runs a model turn against the scripted model server (streamed
 * chunks), and the stream is read live, read again after the turn ended, and resumed after every
 * one of its events, through TurnClient and over the API's SSE. A step whose stream is cut is tried
 * again, and the stream says so with a reset before the new attempt's text.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RunningApi } from '../../api/server.js';
import { TurnClient } from '../../client/turnClient.js';
import { placeOf, type TurnEvent } from '../../client/turnEvents.js';
import { fixtureServer, killGroups, startHarness, tempDir, writeConfigDir, type Harness } from '../support/harness.js';
import { startModelServer, writeModelsJson } from '../support/models.js';
import { startTestApi } from '../support/api.js';

const TOKEN = `turn-stream-${randomBytes(16).toString('hex')}`;
const ANSWER = 'The echo server said hello back, so the tool works and this is the whole answer.';
const SCRIPT = {
  prompts: {
    'stream please': [
      { text: 'Let me ask the echo tool.', toolCalls: [{ name: 'mcp__echo__echo', arguments: { text: 'hello' } }] },
      { text: ANSWER, chunkDelayMs: 40 },
    ],
    'cut please': [
      { text: 'This answer is cut on the first try and whole on the second.', chunkDelayMs: 40, cutFirstAfter: 3 },
    ],
  },
  steps: [{ text: 'default answer' }],
};

describe("a turn's stream", () => {
  const started = new Set<number>();
  let h: Harness;
  let client: TurnClient;
  let api: RunningApi;
  let dir: string;
  const session = (name: string) => `stream-${name}-${randomBytes(4).toString('hex')}`;

  before(async () => {
    dir = await tempDir('dmcp-turn-stream-');
    const model = await startModelServer(dir, 'model', SCRIPT, started);
    const configDir = join(dir, 'config');
    const env = await writeConfigDir(configDir, {});
    await writeModelsJson(configDir, {
      scripted: { provider: 'openai-compatible', model: 'scripted-1', baseURL: model.baseURL },
    });
    const dataDir = join(dir, 'data');
    h = await startHarness('turn-stream', { ...env, DMCP_DATA_DIR: dataDir });
    // A client of the workers' data dir, where their steps log text as it is produced.
    client = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, dataDir });
    api = await startTestApi(client, TOKEN, dir);
  });
  after(async () => {
    await api?.close();
    await h?.stop();
    killGroups(started);
  });

  const startTurn = (sessionId: string, prompt: string) =>
    client.startModelTurn({
      sessionId,
      workspace: dir,
      servers: { inlineSpecs: [`echo:${process.execPath} ${fixtureServer}`] },
      model: { name: 'scripted', prompt },
    });

  const readAll = async (turnId: string, afterId?: string) => {
    const out: TurnEvent[] = [];
    for await (const e of client.events(turnId, afterId === undefined ? {} : { after: afterId })) out.push(e);
    return out;
  };

  test('read live, read again, and resumed after every event: the same events in the same order', async () => {
    const run = await startTurn(session('resume'), 'stream please');
    const { turnId } = run;
    // Live: read until the answer's text is coming in, stop, and resume from the last ID read.
    const live: TurnEvent[] = [];
    for await (const e of client.events(turnId)) {
      live.push(e);
      if (e.event === 'model.text' && e.data.step === 2) break;
    }
    for await (const e of client.events(turnId, { after: live.at(-1)!.id })) live.push(e);
    const result = await run.result();
    assert.equal(result.answer, ANSWER);

    const names: string[] = live.map((e) => e.event);
    assert.equal(names[0], 'mcp.status');
    assert.equal(names.at(-1), 'turn.ended');
    const places = live.map((e) => placeOf(e.id, turnId));
    for (let i = 1; i < places.length; i++)
      assert.ok(compare(places[i - 1]!, places[i]!) < 0, `event ${i} (${live[i]!.id}) comes after ${live[i - 1]!.id}`);
    // Each step's text as produced, before the step itself; the pieces make its whole text.
    for (const step of [1, 2]) {
      const texts = live.filter((e) => e.event === 'model.text' && e.data.step === step);
      const whole = live.find((e) => e.event === 'model.step' && e.data.step === step)!;
      assert.equal(texts.map((e) => e.data.text).join(''), whole.data.text, `step ${step}'s pieces`);
      assert.ok(live.indexOf(texts.at(-1)!) < live.indexOf(whole));
    }
    assert.ok(
      live.filter((e) => e.event === 'model.text' && e.data.step === 2).length >= 3,
      'the answer came in pieces as it was produced (40 ms a chunk, written every 50 ms)',
    );
    const at = (event: string) => names.indexOf(event);
    assert.ok(at('call.started') < at('call.finished') && at('call.finished') < names.lastIndexOf('model.text'));

    // Read again once the turn has ended: the same IDs and data.
    assert.deepEqual(await readAll(turnId), live);
    // Resumed after each event: exactly the rest.
    for (const [i, e] of live.entries())
      assert.deepEqual(
        (await readAll(turnId, e.id)).map((x) => x.id),
        live.slice(i + 1).map((x) => x.id),
        `resumed after ${e.id}`,
      );
  });

  test('a step whose stream was cut is tried again, and the stream resets its text', async () => {
    const run = await startTurn(session('reset'), 'cut please');
    const events = await readAll(run.turnId);
    const result = await run.result();
    const step = events.filter((e) => e.data.step === 1 && e.event.startsWith('model.'));
    const reset = step.findIndex((e) => e.event === 'model.reset');
    assert.ok(reset > 0, `a reset after the first attempt's text: ${step.map((e) => e.event).join(', ')}`);
    assert.deepEqual(step[reset]!.data, { turnId: run.turnId, step: 1, attempt: 2 });
    const first = step.slice(0, reset).filter((e) => e.event === 'model.text');
    assert.ok(first.length > 0 && first.every((e) => e.data.attempt === 1), "the first attempt's text came first");
    const second = step.slice(reset + 1).filter((e) => e.event === 'model.text');
    assert.equal(
      second.map((e) => e.data.text).join(''),
      result.answer,
      "after the reset, the second attempt's whole text",
    );
    assert.equal(step.at(-1)!.event, 'model.step');
  });

  test('over SSE: Last-Event-ID resumes the turn and the session stream; an ID of no event here is 404', async () => {
    const sessionId = session('sse');
    const run = await startTurn(sessionId, 'stream please');
    await run.result();
    const all = await readAll(run.turnId);
    const middle = all[Math.floor(all.length / 2)]!;
    const turnStream = await sse(`/api/v1/sessions/${sessionId}/turns/turn-1/events`, middle.id);
    assert.deepEqual(
      turnStream.map((e) => e.id),
      all.slice(all.indexOf(middle) + 1).map((e) => e.id),
    );
    assert.deepEqual(turnStream.at(-1), { id: all.at(-1)!.id, event: 'turn.ended', data: all.at(-1)!.data });
    // The session stream from the same place: the same events, then it waits for the next turn.
    const rest = all.length - all.indexOf(middle) - 1;
    const sessionStream = await sse(`/api/v1/sessions/${sessionId}/events`, middle.id, rest);
    assert.deepEqual(
      sessionStream.map((e) => e.id),
      all.slice(all.indexOf(middle) + 1).map((e) => e.id),
    );
    for (const [path, id, status] of [
      [`/api/v1/sessions/${sessionId}/turns/turn-1/events`, `${sessionId}/turn-2|0.5.0`, 404],
      [`/api/v1/sessions/${sessionId}/turns/turn-1/events`, `${run.turnId}|x`, 404],
      [`/api/v1/sessions/${sessionId}/events`, `other/turn-1|0.5.0`, 404],
    ] as const) {
      const res = await fetch(`${api.url}${path}`, {
        headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': id },
      });
      assert.equal(res.status, status, `${path} after ${id}`);
      const body = (await res.json()) as { error: { field: string } };
      assert.match(body.error.field, /^header\.last-event-id$/i);
    }
  });

  /** The SSE events of `path` after `lastEventId`, until the stream ends or `count` of them (then it is closed). */
  async function sse(path: string, lastEventId: string, count = Infinity) {
    const stop = new AbortController();
    const res = await fetch(`${api.url}${path}`, {
      headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': lastEventId },
      signal: stop.signal,
    });
    assert.equal(res.status, 200, res.status === 200 ? '' : await res.text());
    const out: { id: string; event: string; data: unknown }[] = [];
    const timer = setTimeout(() => stop.abort(), 20_000);
    let buffer = '';
    try {
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const field = (name: string) =>
            block
              .split('\n')
              .find((l) => l.startsWith(`${name}: `))
              ?.slice(name.length + 2);
          const event = field('event');
          if (event === undefined) continue;
          out.push({ id: field('id')!, event, data: JSON.parse(field('data')!) });
        }
        if (out.length >= count) break;
      }
    } catch (err) {
      if (!stop.signal.aborted) throw err;
    } finally {
      clearTimeout(timer);
      stop.abort();
    }
    return out;
  }
});

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
