/**
 * The cluster's parts as processes on this machine, each in its own process group, on loopback and
 * free ports: versitygw (S3), a private PostgreSQL, the multi-service Temporal server on it. Used
 * by the cluster test, the mTLS test and the S3 integration test. Settings come from the `.env`
 * docker-compose.yml reads (see `clusterSettings`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { chmod, chown, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { clusterToolPaths, findPostgresBin, readDotEnv, required } from '../../dev/clusterTools.js';
import { projectRoot } from '../../dev/temporalCli.js';

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Everything it wrote (stdout and stderr), in a file for a failed run. */
  logFile: string;
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL to the whole group after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL to the whole group at once. */
  kill(): void;
}

/** Processes started by this file, killed when the test process exits whatever happened. */
const started = new Set<Proc>();
process.once('exit', () => {
  for (const p of started) p.kill();
});

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Gone already.
  }
}

/** Spawns `command` in its own process group, output to `<logDir>/<name>.log`. */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  options: { logDir: string; env?: NodeJS.ProcessEnv; cwd?: string },
): Proc {
  const logFile = join(options.logDir, `${name}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  if (child.pid === undefined) throw new Error(`${name}: ${command} did not start`);
  const pid = child.pid;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  const proc: Proc = {
    name,
    pid,
    child,
    logFile,
    exited,
    kill: () => killGroup(pid, 'SIGKILL'),
    async stop(graceMs = 10_000) {
      killGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      killGroup(pid, 'SIGKILL');
      started.delete(proc);
    },
  };
  void exited.then(() => log.end());
  started.add(proc);
  return proc;
}

/** A port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A port free on 127.0.0.1 below 32768: Temporal keeps membership ports in a PostgreSQL smallint,
 * and the kernel's ephemeral range (what port 0 gives) starts above it.
 */
export async function freeLowPort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found in 20000-32000');
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port; rejects with the process's log when it exits first. */
export async function waitForPort(port: number, proc: Proc, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = tcpConnect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (exited || Date.now() > deadline) {
      const tail = (await readFile(proc.logFile, 'utf8').catch(() => '')).split('\n').slice(-30).join('\n');
      throw new Error(
        `${proc.name} ${exited ? 'exited' : `did not listen on ${port} within ${timeoutMs} ms`}; log tail:\n${tail}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The cluster's settings from `.env`, the file docker-compose.yml reads. */
export async function clusterSettings() {
  const env = await readDotEnv();
  return {
    env,
    tools: clusterToolPaths(env),
    postgres: {
      user: required(env, 'POSTGRES_USER'),
      password: required(env, 'POSTGRES_PASSWORD'),
      db: required(env, 'TEMPORAL_DB'),
      visibilityDb: required(env, 'TEMPORAL_VISIBILITY_DB'),
    },
    numHistoryShards: Number(required(env, 'NUM_HISTORY_SHARDS')),
    namespace: required(env, 'TEMPORAL_NAMESPACE'),
    retention: required(env, 'TEMPORAL_RETENTION'),
    s3: {
      access: required(env, 'S3_ACCESS_KEY'),
      secret: required(env, 'S3_SECRET_KEY'),
      bucket: required(env, 'DMCP_S3_BUCKET'),
    },
  };
}

/**
 * The worker's and client's environment for the cluster, from `.env` alone: the variables the
 * compose file's worker service receives (test/unit/compose.test.ts holds the two to the same
 * values). Addresses are filled in by whoever runs it: service names in compose, loopback ports here.
 */
export function dmcpEnvFromDotEnv(env: Record<string, string>): Record<string, string> {
  return {
    TEMPORAL_NAMESPACE: required(env, 'TEMPORAL_NAMESPACE'),
    DMCP_TASK_QUEUE: required(env, 'DMCP_TASK_QUEUE'),
    DMCP_PAYLOAD_STORE: 's3',
    DMCP_S3_BUCKET: required(env, 'DMCP_S3_BUCKET'),
    DMCP_S3_PREFIX: required(env, 'DMCP_S3_PREFIX'),
    DMCP_S3_REGION: required(env, 'DMCP_S3_REGION'),
    DMCP_S3_FORCE_PATH_STYLE: required(env, 'DMCP_S3_FORCE_PATH_STYLE'),
    AWS_ACCESS_KEY_ID: required(env, 'S3_ACCESS_KEY'),
    AWS_SECRET_ACCESS_KEY: required(env, 'S3_SECRET_KEY'),
  };
}

export interface Versity {
  proc: Proc;
  endpoint: string;
  root: string;
  access: string;
  secret: string;
}

/** versitygw with a posix backend under `dir` (each bucket a folder), on a free loopback port. */
export async function startVersity(options: {
  dir: string;
  logDir: string;
  access: string;
  secret: string;
  buckets: string[];
}): Promise<Versity> {
  const { tools } = await clusterSettings();
  const root = join(options.dir, 'objects');
  await mkdir(root, { recursive: true });
  for (const b of options.buckets) await mkdir(join(root, b), { recursive: true });
  const port = await freePort();
  const proc = startProcess('versitygw', tools.versitygw, ['--port', `127.0.0.1:${port}`, 'posix', root], {
    logDir: options.logDir,
    // Credentials through the environment, not the command line (visible in ps).
    env: { PATH: process.env.PATH, ROOT_ACCESS_KEY_ID: options.access, ROOT_SECRET_ACCESS_KEY: options.secret },
  });
  await waitForPort(port, proc, 30_000);
  return { proc, endpoint: `http://127.0.0.1:${port}`, root, access: options.access, secret: options.secret };
}

export interface Postgres {
  proc: Proc;
  port: number;
  data: string;
}

/** The account PostgreSQL runs as when this process is root (it refuses to run as root). */
const POSTGRES_ACCOUNT = 'postgres';

function uidGid(user: string): { uid: number; gid: number } {
  const r = spawnSync('id', ['-u', user], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', user], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0)
    throw new Error(`no "${user}" account: install Debian's postgresql package (node dist/dev/setupCluster.js)`);
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/**
 * A private PostgreSQL cluster (`initdb`) under `dir`, listening on 127.0.0.1 and a socket in `dir`
 * only. As root it runs as the `postgres` account (runuser), which owns only `dir/pg`.
 */
export async function startPostgres(options: {
  dir: string;
  logDir: string;
  user: string;
  password: string;
}): Promise<Postgres> {
  const bin = await findPostgresBin();
  if (!bin)
    throw new Error(
      'PostgreSQL is not installed: run node dist/dev/setupCluster.js (Debian: apt-get install postgresql)',
    );
  const asRoot = process.getuid?.() === 0;
  const home = join(options.dir, 'pg');
  const data = join(home, 'data');
  await mkdir(home, { recursive: true });
  const pwfile = join(home, 'pwfile');
  await writeFile(pwfile, `${options.password}\n`, { mode: 0o600 });
  if (asRoot) {
    const { uid, gid } = uidGid(POSTGRES_ACCOUNT);
    // The temp dir above is root's (0700): the account must be able to reach its own folder.
    await chmod(options.dir, 0o711);
    await chown(home, uid, gid);
    await chown(pwfile, uid, gid);
  }
  const wrap = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', POSTGRES_ACCOUNT, '--', cmd, ...args]] : [cmd, args];
  const [initCmd, initArgs] = wrap(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    options.user,
    `--pwfile=${pwfile}`,
    '--auth-host=scram-sha-256',
    '--auth-local=peer',
    '-E',
    'UTF8',
    '--no-instructions',
  ]);
  const init = spawnSync(initCmd, initArgs, { encoding: 'utf8', cwd: home });
  if (init.status !== 0) throw new Error(`initdb failed (exit ${init.status}): ${init.stderr || init.stdout}`);
  const port = await freePort();
  const [cmd, args] = wrap(join(bin, 'postgres'), [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    home,
    '-c',
    'listen_addresses=127.0.0.1',
    // A throwaway cluster: durability is not what the test measures.
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=300',
  ]);
  const proc = startProcess('postgres', cmd, args, { logDir: options.logDir, cwd: home });
  await waitForPort(port, proc, 30_000);
  return { proc, port, data };
}

export interface TlsFiles {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

export interface TemporalCluster {
  proc: Proc;
  address: string;
  configDir: string;
}

/**
 * Creates the two databases and their schemas with Temporal's SQL tool, as Temporal's compose
 * setup does (create, setup-schema, update-schema to the newest version).
 */
export async function setupSchema(options: {
  port: number;
  user: string;
  password: string;
  db: string;
  visibilityDb: string;
  logDir: string;
}): Promise<void> {
  const { tools } = await clusterSettings();
  const base = ['--plugin', 'postgres12', '--ep', '127.0.0.1', '-p', String(options.port), '-u', options.user];
  const env = { PATH: process.env.PATH, SQL_PASSWORD: options.password };
  const steps: [string, string[]][] = [];
  for (const [db, schema] of [
    [options.db, 'temporal'],
    [options.visibilityDb, 'visibility'],
  ] as const) {
    steps.push([db, ['--db', db, 'create']]);
    steps.push([db, ['--db', db, 'setup-schema', '-v', '0.0']]);
    steps.push([db, ['--db', db, 'update-schema', '-d', `${await schemaDir()}/postgresql/v12/${schema}/versioned`]]);
  }
  for (const [db, args] of steps) {
    const r = spawnSync(tools.temporalSql, [...base, ...args], { encoding: 'utf8', env });
    await writeFile(join(options.logDir, 'sql-tool.log'), `$ sql ${args.join(' ')}\n${r.stdout}${r.stderr}\n`, {
      flag: 'a',
    });
    if (r.status !== 0)
      throw new Error(
        `temporal sql tool ${args.join(' ')} on ${db} failed (exit ${r.status}): ${(r.stderr || r.stdout).slice(-2000)}`,
      );
  }
}

/** The server module's schema folder: the Go module cache holds it once the server is built. */
async function schemaDir(): Promise<string> {
  const { tools } = await clusterSettings();
  const r = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' });
  const dir = join(r.stdout.trim(), `go.temporal.io/server@v${tools.serverVersion}`, 'schema');
  try {
    await readFile(join(dir, 'postgresql', 'v12', 'temporal', 'schema.sql'));
  } catch {
    // Downloads only the module source (no build) when the cache was cleaned since the build.
    spawnSync('go', ['mod', 'download', `go.temporal.io/server@v${tools.serverVersion}`], { stdio: 'ignore' });
  }
  return dir;
}

/**
 * The multi-service Temporal server (frontend, history, matching, worker in one process, as the
 * `temporalio/server` image runs them) on PostgreSQL, from a config file written here. With `tls`,
 * the frontend requires client certificates signed by the CA (mutual TLS), and the services talk
 * to each other over TLS too.
 */
export async function startTemporalServer(options: {
  dir: string;
  logDir: string;
  postgresPort: number;
  tls?: TlsFiles;
}): Promise<TemporalCluster> {
  const s = await clusterSettings();
  const configDir = join(options.dir, 'temporal-config');
  await mkdir(configDir, { recursive: true });
  const ports: number[] = [];
  while (ports.length < 9) {
    const port = await freeLowPort();
    if (!ports.includes(port)) ports.push(port);
  }
  const [
    frontend,
    frontendMembership,
    frontendHttp,
    history,
    historyMembership,
    matching,
    matchingMembership,
    worker,
    workerMembership,
  ] = ports as [number, number, number, number, number, number, number, number, number];
  const store = (db: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName: db,
      connectAddr: `127.0.0.1:${options.postgresPort}`,
      connectProtocol: 'tcp',
      user: s.postgres.user,
      password: s.postgres.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const tlsGroup = (t: TlsFiles) => ({
    server: { certFile: t.serverCert, keyFile: t.serverKey, requireClientAuth: true, clientCaFiles: [t.ca] },
    client: { serverName: 'localhost', rootCaFiles: [t.ca] },
  });
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: s.numHistoryShards,
      datastores: {
        'postgres-default': store(s.postgres.db, 20),
        'postgres-visibility': store(s.postgres.visibilityDb, 4),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      pprof: { port: 0 },
      ...(options.tls ? { tls: { internode: tlsGroup(options.tls), frontend: tlsGroup(options.tls) } } : {}),
    },
    services: {
      frontend: {
        rpc: { grpcPort: frontend, membershipPort: frontendMembership, httpPort: frontendHttp, bindOnLocalHost: true },
      },
      history: { rpc: { grpcPort: history, membershipPort: historyMembership, bindOnLocalHost: true } },
      matching: { rpc: { grpcPort: matching, membershipPort: matchingMembership, bindOnLocalHost: true } },
      worker: { rpc: { grpcPort: worker, membershipPort: workerMembership, bindOnLocalHost: true } },
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `localhost:${frontend}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
  // JSON is YAML: the server's loader reads it as is.
  await writeFile(join(configDir, 'cluster.yaml'), `${JSON.stringify(config, null, 2)}\n`);
  const proc = startProcess(
    'temporal-server',
    s.tools.temporalServer,
    ['--root', options.dir, '--config', 'temporal-config', '--env', 'cluster', '--allow-no-auth', 'start'],
    {
      logDir: options.logDir,
      env: { PATH: process.env.PATH },
    },
  );
  await waitForPort(frontend, proc, 60_000);
  const address = `127.0.0.1:${frontend}`;
  await waitForTemporal(address, proc, options.tls);
  return { proc, address, configDir };
}

/** Resolves once the frontend answers a health check (the port opens before the services have joined). */
export async function waitForTemporal(address: string, proc: Proc, tls?: TlsFiles, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (!exited && Date.now() < deadline) {
    try {
      const connection = await Connection.connect({
        address,
        connectTimeout: 2000,
        ...(tls ? { tls: await clientTls(tls) } : {}),
      });
      try {
        await connection.workflowService.getSystemInfo({});
        await connection.healthService.check({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const tail = (await readFile(proc.logFile, 'utf8').catch(() => '')).split('\n').slice(-30).join('\n');
  throw new Error(
    `Temporal at ${address} ${exited ? 'exited' : 'is not healthy'}: ${(last as Error)?.message}; log tail:\n${tail}`,
  );
}

/** The client side of {@link TlsFiles} as the SDK takes it. */
export async function clientTls(t: TlsFiles) {
  return {
    serverRootCACertificate: await readFile(t.ca),
    clientCertPair: { crt: await readFile(t.clientCert), key: await readFile(t.clientKey) },
  };
}

/** The dynamic config compose mounts into the server (deploy/temporal/dynamicconfig/cluster.yaml). */
export const dynamicConfigFile = join(projectRoot, 'deploy', 'temporal', 'dynamicconfig', 'cluster.yaml');

/** A CA, a server certificate for 127.0.0.1/localhost and a client certificate, made with openssl. */
export async function makeTlsFiles(dir: string): Promise<TlsFiles> {
  await mkdir(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  const sh = (args: string[]) => {
    const r = spawnSync('openssl', args, { encoding: 'utf8', cwd: dir });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
  };
  sh([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=dmcp-test-ca',
  ]);
  for (const [name, cn, ext] of [
    ['server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n'],
    ['client', 'dmcp-worker', 'extendedKeyUsage=clientAuth\n'],
  ] as const) {
    await writeFile(f(`${name}.ext`), ext);
    sh([
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.csr`),
      '-subj',
      `/CN=${cn}`,
    ]);
    sh([
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f(`${name}.pem`),
      '-days',
      '2',
      '-extfile',
      f(`${name}.ext`),
    ]);
  }
  // The SDK's TLS stack wants PKCS#8 keys.
  for (const name of ['server', 'client'])
    sh(['pkcs8', '-topk8', '-nocrypt', '-in', f(`${name}.key`), '-out', f(`${name}.pk8.key`)]);
  return {
    ca: f('ca.pem'),
    serverCert: f('server.pem'),
    serverKey: f('server.pk8.key'),
    clientCert: f('client.pem'),
    clientKey: f('client.pk8.key'),
  };
}
