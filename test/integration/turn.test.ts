import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixtureServer, readLines, startHarness, tempDir, type Harness } from '../support/harness.js';

describe('a durable turn against the fixture echo server', () => {
  let h: Harness;
  let dir: string;
  let execLog: string;
  let spec: string;

  before(async () => {
    dir = await tempDir();
    execLog = join(dir, 'executions.log');
    h = await startHarness('turn', { FIXTURE_LOG: execLog });
    spec = `fixture:${process.execPath} ${fixtureServer}`;
  });
  after(async () => {
    await h?.stop();
  });

  test('batch turn: outcome holds the text and history records the callTool activity with its summary', async () => {
    const result = await h.client.runBatch({
      sessionId: `batch-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [spec] },
      calls: [[{ id: 'call-1', name: 'mcp__fixture__echo', arguments: { text: 'extension check' } }]],
    });
    assert.equal(result.endedBy, 'batch');
    assert.equal(result.calls.length, 1);
    const outcome = result.calls[0]!.outcome;
    assert.equal(outcome.status, 'ok');
    assert.deepEqual(outcome.content, [{ type: 'text', text: 'extension check' }]);

    const history = await h.client.client.workflow.getHandle(result.turnId).fetchHistory();
    const scheduled = history.events!.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callTool',
    );
    assert.equal(scheduled.length, 1);
    const converter = h.client.client.options.loadedDataConverter.payloadConverter;
    assert.equal(converter.fromPayload(scheduled[0]!.userMetadata!.summary!), 'mcp__fixture__echo');
    const completed = history.events!.find(
      (e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled[0]!.eventId),
    );
    assert.ok(completed, 'the callTool activity completed');
    const recorded = converter.fromPayload<{ content: unknown[] }>(
      completed.activityTaskCompletedEventAttributes!.result!.payloads![0]!,
    );
    assert.deepEqual(recorded.content, [{ type: 'text', text: 'extension check' }]);

    const transcript = await h.client.transcript(result.turnId);
    assert.equal(transcript.calls[0]!.summary, 'mcp__fixture__echo');
    assert.ok(transcript.tools.some((t) => t.name === 'mcp__fixture__echo'));
    assert.equal(transcript.status?.servers[0]?.state, 'ready');
  });

  test('interactive turn: the same update ID twice executes the tool once', async () => {
    const sessionId = `interactive-${Date.now()}`;
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { inlineSpecs: [spec] } });
    assert.equal(turn.turnId, `${sessionId}/turn-1`);
    assert.ok(turn.tools.some((t) => t.name === 'mcp__fixture__echo'));
    assert.match(turn.serversParagraph, /fixture/);
    const before = (await readLines(execLog)).length;
    const request = { id: 'toolu_once', name: 'mcp__fixture__echo', arguments: { text: 'only once' } };
    const first = await turn.callTool(request);
    const second = await turn.callTool(request);
    assert.deepEqual(second, first);
    const executions = (await readLines(execLog)).slice(before).filter((l) => l.includes('only once'));
    assert.equal(executions.length, 1, 'the tool ran exactly once');
    const result = await turn.end();
    assert.equal(result.endedBy, 'endTurn');
    assert.equal(result.calls.length, 1);
  });
});
