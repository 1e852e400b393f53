/**
 * Connections the Temporal way, end to end on the test run's Temporal server: `durable-mcp setup`
 * creates a namespace and registers the search attribute (and says so again without changing
 * anything), then a `durable-mcp worker` process and `durable-mcp run` reach that namespace through
 * a TOML profile alone (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE, no TEMPORAL_ADDRESS). Over mutual
 * TLS, the same path is in test/cluster/mtls.test.ts.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Connection } from '@temporalio/client';
import { SESSION_ID_SEARCH_ATTRIBUTE } from '../../contract/index.js';
import {
  cliScript as cli,
  fixtureServer,
  killGroups,
  runCli,
  tempDir,
  temporalAddress,
  waitUntil,
} from '../support/harness.js';

describe('durable-mcp setup, worker and run through a Temporal TOML profile', () => {
  const namespace = `dmcp-conn-${randomBytes(4).toString('hex')}`;
  let dir: string;
  let base: NodeJS.ProcessEnv;
  let worker: ChildProcess | undefined;

  before(async () => {
    dir = await tempDir('dmcp-conn-');
    const toml = join(dir, 'temporal.toml');
    // The profile is the only place the address and namespace are written.
    await writeFile(
      toml,
      [`[profile.agents]`, `address = "${temporalAddress()}"`, `namespace = "${namespace}"`, ''].join('\n'),
    );
    base = {
      PATH: process.env.PATH,
      HOME: dir,
      TEMPORAL_CONFIG_FILE: toml,
      TEMPORAL_PROFILE: 'agents',
      DMCP_DATA_DIR: join(dir, 'data'),
      DMCP_NO_USER_CONFIG: '1',
      DMCP_TASK_QUEUE: `conn-${randomBytes(3).toString('hex')}`,
    };
  });

  after(() => {
    if (worker?.pid) killGroups([worker.pid]);
  });

  test('setup creates the namespace and registers DmcpSessionId; a second run changes nothing', async () => {
    const first = await runCli(['setup', '--retention', '24h'], base);
    assert.equal(first.code, 0, first.stderr);
    assert.match(
      first.stdout,
      new RegExp(
        `^Temporal: ${temporalAddress().replace(/\./g, '\\.')}, plaintext, from profile "agents" in .*temporal\\.toml$`,
        'm',
      ),
    );
    assert.match(first.stdout, new RegExp(`^namespace ${namespace}: created \\(retention 24h\\)$`, 'm'));
    assert.match(
      first.stdout,
      new RegExp(`^search attribute ${SESSION_ID_SEARCH_ATTRIBUTE} \\(keyword\\): added$`, 'm'),
    );

    // What the server holds now, asked directly.
    const connection = await Connection.connect({ address: temporalAddress() });
    try {
      const ns = await connection.workflowService.describeNamespace({ namespace });
      assert.equal(Number(ns.config?.workflowExecutionRetentionTtl?.seconds), 24 * 3600);
      const sa = await connection.operatorService.listSearchAttributes({ namespace });
      assert.ok(sa.customAttributes?.[SESSION_ID_SEARCH_ATTRIBUTE] !== undefined);
    } finally {
      await connection.close();
    }

    const second = await runCli(['setup'], base);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, new RegExp(`^namespace ${namespace}: exists$`, 'm'));
    assert.match(
      second.stdout,
      new RegExp(`^search attribute ${SESSION_ID_SEARCH_ATTRIBUTE} \\(keyword\\): registered$`, 'm'),
    );
  });

  test('setup --no-create-namespace refuses a missing namespace, saying how to create it', async () => {
    const missing = `dmcp-missing-${randomBytes(3).toString('hex')}`;
    const r = await runCli(['setup', '--no-create-namespace'], { ...base, TEMPORAL_NAMESPACE: missing });
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      new RegExp(
        `namespace "${missing}" does not exist on .*temporal operator namespace create --namespace ${missing}`,
      ),
    );
  });

  test("a worker process and `run` reach the profile's namespace with no TEMPORAL_ADDRESS", async () => {
    const env = { ...base, DMCP_ALLOW_INLINE: 'true', DMCP_LOG_LEVEL: 'info' };
    worker = spawn(process.execPath, [cli, 'worker'], { env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    worker.stderr?.on('data', (c: Buffer) => (log += c.toString()));
    await waitUntil('the worker to start', async () => /worker started/.test(log), 60_000);
    assert.match(
      log,
      /"temporal":"[^"]+, plaintext, from profile \\"agents\\"/,
      'the worker logs where it connected, from the profile',
    );
    const ran = await runCli(
      [
        'run',
        '--mcp',
        `e:${process.execPath} ${fixtureServer}`,
        '--call',
        'mcp__e__echo {"text":"via profile"}',
        '--json',
      ],
      env,
    );
    assert.equal(ran.code, 0, ran.stderr);
    const out = JSON.parse(ran.stdout) as { turnId: string; calls: { outcome: { content: { text?: string }[] } }[] };
    assert.equal(out.calls[0]!.outcome.content[0]?.text, 'via profile');
    // The turn is in the profile's namespace, found by its search attribute.
    const connection = await Connection.connect({ address: temporalAddress() });
    try {
      const sessionId = out.turnId.split('/')[0]!;
      await waitUntil('the turn in visibility', async () => {
        const r = await connection.workflowService.countWorkflowExecutions({
          namespace,
          query: `${SESSION_ID_SEARCH_ATTRIBUTE} = '${sessionId}'`,
        });
        return Number(r.count) === 1;
      });
    } finally {
      await connection.close();
    }
  });

  test('a profile that does not exist stops the command with exit code 2, naming it', async () => {
    const r = await runCli(
      ['run', '--mcp', `e:${process.execPath} ${fixtureServer}`, '--call', 'mcp__e__echo {"text":"x"}'],
      { ...base, TEMPORAL_PROFILE: 'nope' },
    );
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: TEMPORAL_PROFILE=nope: no such profile in .*temporal\.toml$/m);
  });

  test('a missing client key stops the worker with exit code 2, naming the variable', async () => {
    const r = await runCli(['worker'], { ...base, TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'client.pem') });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /a TLS client certificate is set \(TEMPORAL_TLS_CLIENT_CERT_PATH\) without its key/);
  });
});
