/**
 * docker-compose.yml: Debian's `docker-compose config` accepts it, every image is pinned, and its
 * services take the same settings from `.env` as the cluster test's processes (test/cluster/), so
 * the tested topology is the documented one. Needs `docker-compose` (node dist/dev/setupCluster.js
 * installs it).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { projectRoot } from '../../dev/temporalCli.js';
import {
  clusterToolPaths,
  commandExists,
  ensureDebianPackages,
  parseDotEnv,
  readDotEnv,
} from '../../dev/clusterTools.js';
import { clusterSettings, dmcpEnvFromDotEnv, dynamicConfigFile } from '../cluster/processes.js';

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  ports?: (string | { published?: string | number; host_ip?: string })[];
  volumes?: (string | { source?: string; target?: string })[];
  healthcheck?: { test?: string[]; disable?: boolean };
}

let services: Record<string, Service>;
let dotenv: Record<string, string>;

/** `docker-compose config` with only PATH set, so the shell's variables cannot stand in for `.env`. */
function composeConfig(): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('docker-compose', ['config'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH },
    encoding: 'utf8',
  });
  if (r.error)
    throw new Error(
      `docker-compose is not installed (${r.error.message}): run node dist/dev/setupCluster.js (Debian: apt-get install docker-compose)`,
    );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

before(async () => {
  // On the project's CI machines (Debian, root) a missing docker-compose is installed, as `npm test` does for Chromium.
  if (!commandExists('docker-compose')) ensureDebianPackages(['docker-compose'], (m) => process.stderr.write(`${m}\n`));
  dotenv = await readDotEnv();
  const r = composeConfig();
  assert.equal(r.status, 0, `docker-compose config refused docker-compose.yml:\n${r.stderr}`);
  // Debian's docker-compose (v1) prints YAML only; its own YAML library turns it into JSON.
  const json = spawnSync(
    'python3',
    ['-c', 'import sys, json, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)'],
    { input: r.stdout, encoding: 'utf8' },
  );
  assert.equal(json.status, 0, json.stderr);
  services = (JSON.parse(json.stdout) as { services: Record<string, Service> }).services;
});

test('docker-compose config accepts the file and warns about nothing unset', () => {
  const r = composeConfig();
  assert.equal(r.status, 0);
  assert.doesNotMatch(r.stderr, /variable is not set/i, r.stderr);
});

test('the services of the documented topology are all there', () => {
  assert.deepEqual(Object.keys(services).sort(), [
    'api',
    'codec',
    'dmcp-setup',
    'postgresql',
    's3',
    'temporal',
    'temporal-schema',
    'temporal-ui',
    'worker',
  ]);
});

test('every image is pinned to a version from .env (no latest, no bare major)', () => {
  for (const [name, s] of Object.entries(services)) {
    assert.ok(s.image, `${name} has an image`);
    if (s.build !== undefined) {
      assert.equal(s.image, 'durable-mcp:local', `${name} is built from the Dockerfile`);
      continue;
    }
    const tag = s.image.split(':')[1] ?? '';
    assert.match(tag, /^v?\d+\.\d+(\.\d+)?([.-][\w.-]+)?$/, `${name}: ${s.image} is not pinned to a version`);
    assert.ok(Object.values(dotenv).includes(tag), `${name}: tag ${tag} comes from .env`);
  }
  const dockerfile = spawnSync('grep', ['-E', '^ARG NODE_IMAGE=', join(projectRoot, 'Dockerfile')], {
    encoding: 'utf8',
  }).stdout.trim();
  assert.equal(
    dockerfile,
    `ARG NODE_IMAGE=${dotenv.NODE_IMAGE}`,
    'the Dockerfile defaults to the Node image .env pins',
  );
});

test('the Temporal server version is the one the pinned CLI embeds and the cluster test builds', async () => {
  const paths = clusterToolPaths(dotenv);
  assert.equal(services.temporal!.image, `temporalio/server:${paths.serverVersion}`);
  assert.ok(
    services['temporal-schema']!.image!.startsWith(`temporalio/admin-tools:${paths.serverVersion}`),
    'schema tool of the same server version',
  );
  assert.equal(services.s3!.image, `versity/versitygw:v${paths.versityVersion}`);
  const cliMod = spawnSync('go', ['mod', 'download', '-json', 'github.com/temporalio/cli@v1.5.1'], {
    encoding: 'utf8',
  });
  if (cliMod.status === 0) {
    const mod = JSON.parse(cliMod.stdout) as { GoMod: string };
    const server = /go\.temporal\.io\/server v([\d.]+)/.exec(await readFile(mod.GoMod, 'utf8'))?.[1];
    assert.equal(server, paths.serverVersion, 'TEMPORAL_VERSION in .env is the server of Temporal CLI 1.5.1');
  }
});

test('compose services and the cluster test take the same settings from .env', async () => {
  const cluster = await clusterSettings();
  // PostgreSQL and Temporal's persistence.
  assert.deepEqual(
    {
      user: services.postgresql!.environment!.POSTGRES_USER,
      password: services.postgresql!.environment!.POSTGRES_PASSWORD,
    },
    { user: cluster.postgres.user, password: cluster.postgres.password },
  );
  const t = services.temporal!.environment!;
  assert.deepEqual(
    {
      user: t.POSTGRES_USER,
      password: t.POSTGRES_PWD,
      db: t.DBNAME,
      visibilityDb: t.VISIBILITY_DBNAME,
      shards: Number(t.NUM_HISTORY_SHARDS),
    },
    { ...cluster.postgres, shards: cluster.numHistoryShards },
  );
  const schema = services['temporal-schema']!.environment!;
  assert.deepEqual(
    [schema.DBNAME, schema.VISIBILITY_DBNAME, schema.SQL_PASSWORD],
    [cluster.postgres.db, cluster.postgres.visibilityDb, cluster.postgres.password],
  );
  // The S3 store's root credentials are what the workers present.
  assert.deepEqual(
    [services.s3!.environment!.ROOT_ACCESS_KEY_ID, services.s3!.environment!.ROOT_SECRET_ACCESS_KEY],
    [cluster.s3.access, cluster.s3.secret],
  );
  // Every durable-mcp service receives exactly the variables the cluster test gives its workers and client.
  const shared = dmcpEnvFromDotEnv(dotenv);
  for (const name of ['worker', 'api', 'codec', 'dmcp-setup']) {
    const env = services[name]!.environment!;
    for (const [key, value] of Object.entries(shared)) assert.equal(env[key], value, `${name}: ${key}`);
  }
  assert.deepEqual(services['dmcp-setup']!.healthcheck?.test, ['NONE'], 'a one-shot job has no health check');
  assert.ok(
    (services['dmcp-setup'] as { command?: string[] }).command
      ?.join(' ')
      .includes(`setup --retention ${cluster.retention}`),
  );
  // The dynamic config compose mounts is the file the cluster test's server reads.
  const mounted = services.temporal!.volumes!.map((v) => (typeof v === 'string' ? v.split(':')[0] : v.source));
  assert.ok(mounted.includes(join(projectRoot, 'deploy', 'temporal', 'dynamicconfig')), JSON.stringify(mounted));
  assert.equal(dynamicConfigFile, join(projectRoot, 'deploy', 'temporal', 'dynamicconfig', 'cluster.yaml'));
});

test('secrets are not written in docker-compose.yml: every credential is a variable', async () => {
  const text = await readFile(join(projectRoot, 'docker-compose.yml'), 'utf8');
  for (const name of ['POSTGRES_PASSWORD', 'S3_SECRET_KEY', 'S3_ACCESS_KEY']) {
    assert.equal(text.includes(dotenv[name]!), false, `the value of ${name} appears in docker-compose.yml`);
  }
  for (const line of text
    .split('\n')
    .filter((l) => /(PASSWORD|PWD|SECRET|KEY|TOKEN)[A-Z_]*:/.test(l) && !l.trim().startsWith('#'))) {
    assert.match(line, /:\s*\$\{[A-Z0-9_]+(:-)?\}\s*$/, `credential not from a variable: ${line.trim()}`);
  }
});

test('ports are published on the host loopback only', () => {
  for (const [name, s] of Object.entries(services)) {
    for (const p of s.ports ?? []) {
      const hostIp = typeof p === 'string' ? p.split(':')[0] : p.host_ip;
      assert.equal(hostIp, '127.0.0.1', `${name} publishes ${JSON.stringify(p)}`);
    }
  }
});

test('every long-running service waits for what it needs to be healthy or done', () => {
  const waits = (name: string) =>
    Object.fromEntries(Object.entries(services[name]!.depends_on ?? {}).map(([k, v]) => [k, v.condition]));
  assert.deepEqual(waits('temporal-schema'), { postgresql: 'service_healthy' });
  assert.deepEqual(waits('temporal'), { 'temporal-schema': 'service_completed_successfully' });
  assert.deepEqual(waits('dmcp-setup'), { temporal: 'service_healthy' });
  assert.deepEqual(waits('worker'), { 'dmcp-setup': 'service_completed_successfully', s3: 'service_healthy' });
  assert.deepEqual(waits('api'), { 'dmcp-setup': 'service_completed_successfully', s3: 'service_healthy' });
});

test('parseDotEnv reads NAME=value lines and names the line it cannot read', () => {
  assert.deepEqual(parseDotEnv('# c\nA=1\n\nB="two words"\nC=\n'), { A: '1', B: 'two words', C: '' });
  assert.throws(
    () => parseDotEnv('A=1\nnot a pair\n', 'x.env'),
    /^Error: x\.env:2: expected NAME=value, got "not a pair"$/,
  );
});
