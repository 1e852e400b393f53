/**
 * `durable-mcp dev` under Ctrl-C, as a terminal sends it: SIGINT to the whole foreground process
 * group. The first one stops in order (the running call finishes, servers stop, the dev server
 * last) and exits 130; a second one stops at once and still leaves no server process behind.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { TurnClient } from '../../client/turnClient.js';
import { isAlive, killGroups, readLines, startDevProcess, waitUntil, type DevProcess } from '../support/harness.js';

interface Dev extends DevProcess {
  log: string;
  doneLog: string;
}

async function startDev(): Promise<Dev> {
  const logs = (dataDir: string) => ({
    FIXTURE_LOG: join(dataDir, 'calls.log'),
    FIXTURE_DONE_LOG: join(dataDir, 'done.log'),
  });
  const dev = await startDevProcess('dmcp-dev-', logs, (child) => started.push(child.pid!));
  const { FIXTURE_LOG: log, FIXTURE_DONE_LOG: doneLog } = logs(dev.dataDir);
  return { ...dev, log, doneLog };
}

async function slowCallRunning(
  dev: Dev,
  ms: number,
): Promise<{ serverPid: number; devServerPid: number; call: Promise<unknown> }> {
  const client = await TurnClient.connect({ address: dev.address, dataDir: dev.dataDir });
  const turn = await client.startTurn({ sessionId: `shutdown-${Date.now()}`, workspace: dev.dataDir });
  const call = turn
    .callTool({ id: 'slow-1', name: 'mcp__fixture__slow', arguments: { ms, tag: 'in-flight' } })
    .catch((err: unknown) => err);
  await waitUntil('the call to start', async () => (await readLines(dev.log)).some((l) => l.includes('in-flight')));
  const serverPid = (JSON.parse((await readLines(dev.log))[0]!) as { pid: number }).pid;
  started.push(serverPid);
  const devServerPid = (JSON.parse(await readFile(join(dev.dataDir, 'dev.json'), 'utf8')) as { serverPid: number })
    .serverPid;
  started.push(devServerPid);
  void call.finally(() => client.close().catch(() => undefined));
  return { serverPid, devServerPid, call };
}

const started: number[] = [];
after(() => killGroups(started));

describe('durable-mcp dev and Ctrl-C', { timeout: 180_000 }, () => {
  test('dev serves the HTTP API on its worker, and Ctrl-C stops it with the rest', async () => {
    const dev = await startDev();
    const stdout = dev.stdout();
    const url = /HTTP API:\s+(http:\/\/\S+)/.exec(stdout)?.[1];
    assert.ok(url, stdout);
    const session = `dev-api-${Date.now()}`;
    // dev's API needs the token it wrote into its data dir.
    const auth = { authorization: `Bearer ${(await readFile(join(dev.dataDir, 'api.token'), 'utf8')).trim()}` };
    const started = await fetch(`${url}/api/v1/sessions/${session}/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: '{}',
    });
    assert.equal(started.status, 201, await started.clone().text());
    const turn = (await started.json()) as { turn: number; tools: { name: string }[] };
    assert.ok(
      turn.tools.some((t) => t.name === 'mcp__fixture__echo'),
      JSON.stringify(turn.tools),
    );
    const call = await fetch(`${url}/api/v1/sessions/${session}/turns/${turn.turn}/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ id: 'c1', name: 'mcp__fixture__echo', arguments: { text: 'through dev' } }),
    });
    assert.equal(call.status, 200, await call.clone().text());
    assert.match(JSON.stringify(await call.json()), /through dev/);
    process.kill(-dev.child.pid!, 'SIGINT');
    assert.equal(await dev.exit, 130);
    await assert.rejects(fetch(`${url}/healthz`), 'the API stopped with dev');
  });

  test('one Ctrl-C: the running call finishes, then servers and the dev server stop; exit 130', async () => {
    const dev = await startDev();
    const { serverPid, devServerPid } = await slowCallRunning(dev, 3000);
    process.kill(-dev.child.pid!, 'SIGINT');
    const code = await dev.exit;
    assert.equal(code, 130);
    assert.deepEqual(
      (await readLines(dev.doneLog)).map((l) => (JSON.parse(l) as { tag: string }).tag),
      ['in-flight'],
      'the call in flight ran to its end before the servers stopped',
    );
    assert.ok(!(await readLines(dev.log)).some((l) => l.includes('"cancelled"')), 'the call was not cancelled');
    await waitUntil(
      'no MCP server and no dev server left',
      async () => !isAlive(serverPid) && !isAlive(devServerPid),
      10_000,
    );
  });

  test('a second Ctrl-C stops at once and still kills every server process group', async () => {
    const dev = await startDev();
    const { serverPid, devServerPid } = await slowCallRunning(dev, 60_000);
    const started = Date.now();
    process.kill(-dev.child.pid!, 'SIGINT');
    await new Promise((r) => setTimeout(r, 300));
    process.kill(-dev.child.pid!, 'SIGINT');
    const code = await dev.exit;
    assert.equal(code, 130);
    assert.ok(Date.now() - started < 20_000, 'it did not wait for the 60 s call');
    await waitUntil(
      'no MCP server and no dev server left',
      async () => !isAlive(serverPid) && !isAlive(devServerPid),
      10_000,
    );
  });
});
