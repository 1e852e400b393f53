/**
 * Mutual TLS, through the envconfig path only: the multi-service Temporal server on PostgreSQL
 * requires client certificates signed by a CA made here with openssl; a `durable-mcp worker`
 * process and `durable-mcp run` reach it with TEMPORAL_TLS_* variables (the worker) and a TOML
 * profile (the client), and run a turn. Without a client certificate the server refuses.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { Connection } from '@temporalio/client';
import { tempDir } from '../support/harness.js';
import {
  clusterSettings,
  makeTlsFiles,
  setupSchema,
  startPostgres,
  startProcess,
  startTemporalServer,
  type Postgres,
  type Proc,
  type TemporalCluster,
  type TlsFiles,
} from './processes.js';

const cli = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const echoServer = fileURLToPath(new URL('../fixtures/echoServer.js', import.meta.url));

let dir: string;
let tls: TlsFiles;
let postgres: Postgres;
let temporal: TemporalCluster;
let worker: Proc | undefined;
let base: Record<string, string>;

async function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cli, ...args], { env, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

before(async () => {
  dir = await tempDir('dmcp-mtls-');
  tls = await makeTlsFiles(join(dir, 'pki'));
  const s = await clusterSettings();
  postgres = await startPostgres({ dir, logDir: dir, user: s.postgres.user, password: s.postgres.password });
  await setupSchema({ port: postgres.port, ...s.postgres, logDir: dir });
  temporal = await startTemporalServer({ dir, logDir: dir, postgresPort: postgres.port, tls });
  base = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    DMCP_DATA_DIR: join(dir, 'data'),
    DMCP_NO_USER_CONFIG: '1',
    DMCP_TASK_QUEUE: `mtls-${randomBytes(3).toString('hex')}`,
  };
});

after(async () => {
  await worker?.stop();
  await temporal?.proc.stop();
  await postgres?.proc.stop();
});

test('without a client certificate the server refuses the connection', async () => {
  const r = await runCli(['setup'], {
    ...base,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: tls.ca,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });
  assert.notEqual(r.code, 0, r.stdout);
  assert.match(r.stderr, /^error: .+/m, 'the failure is said in one line');
  // Plaintext to a TLS port fails as well.
  await assert.rejects(
    (async () => {
      const c = await Connection.connect({ address: temporal.address, connectTimeout: 3000 });
      await c.workflowService.getSystemInfo({});
    })(),
  );
});

test('a worker (TEMPORAL_TLS_* variables) and run (a TOML profile) reach the server over mTLS and run a turn', async () => {
  const mtlsEnv = {
    ...base,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TLS_CLIENT_CERT_PATH: tls.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: tls.clientKey,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: tls.ca,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  };
  const setup = await runCli(['setup'], mtlsEnv);
  assert.equal(setup.code, 0, setup.stderr);
  assert.match(setup.stdout, /^Temporal: 127\.0\.0\.1:\d+, mTLS$/m);
  assert.match(setup.stdout, /search attribute DmcpSessionId \(keyword\): (added|registered)/);

  worker = startProcess('mtls-worker', process.execPath, [cli, 'worker'], {
    logDir: dir,
    env: { ...mtlsEnv, DMCP_ALLOW_INLINE: 'true' },
  });
  const log = () => readFile(worker!.logFile, 'utf8').catch(() => '');
  const deadline = Date.now() + 90_000;
  while (!/worker started/.test(await log())) {
    assert.ok(Date.now() < deadline, `worker did not start:\n${await log()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.match(await log(), /"temporal":"127\.0\.0\.1:\d+, mTLS"/);

  // The client side through a profile file alone: no TEMPORAL_* variable but the file and profile.
  const toml = join(dir, 'temporal.toml');
  await writeFile(
    toml,
    [
      '[profile.secure]',
      `address = "${temporal.address}"`,
      '[profile.secure.tls]',
      `client_cert_path = "${tls.clientCert}"`,
      `client_key_path = "${tls.clientKey}"`,
      `server_ca_cert_path = "${tls.ca}"`,
      'server_name = "localhost"',
      '',
    ].join('\n'),
  );
  const ran = await runCli(
    ['run', '--mcp', `e:${process.execPath} ${echoServer}`, '--call', 'mcp__e__echo {"text":"over mTLS"}', '--json'],
    { ...base, TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'secure' },
  );
  assert.equal(ran.code, 0, ran.stderr);
  const out = JSON.parse(ran.stdout) as { turnId: string; calls: { outcome: { content: { text?: string }[] } }[] };
  assert.equal(out.calls[0]!.outcome.content[0]?.text, 'over mTLS');
  const shown = await runCli(['transcript', out.turnId], {
    ...base,
    TEMPORAL_CONFIG_FILE: toml,
    TEMPORAL_PROFILE: 'secure',
  });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /over mTLS/);
});
