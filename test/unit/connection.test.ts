/**
 * Where a worker, client or command connects: TOML profiles and TEMPORAL_* variables read through
 * `@temporalio/envconfig`, and a clear error naming the variable or the file and field for each
 * value that cannot be used. No secret appears in the summary that is logged.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  ConnectionConfigError,
  configFilePath,
  describeTarget,
  permissionDenied,
  resolveTemporalTarget,
  type TemporalTarget,
} from '../../connection/index.js';

let dir = '';
let toml = '';
const files: Record<string, string> = {};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dmcp-conn-'));
  for (const name of ['ca.pem', 'client.pem', 'client.key']) {
    files[name] = join(dir, name);
    await writeFile(files[name], `-----BEGIN ${name}-----\n`);
  }
  toml = join(dir, 'temporal.toml');
  await writeFile(
    toml,
    [
      '[profile.default]',
      'address = "profile-host:7233"',
      'namespace = "from-profile"',
      '',
      '[profile.cloud]',
      'address = "ns.acct.tmprl.cloud:7233"',
      'namespace = "ns.acct"',
      'api_key = "profile-api-key-value"',
      '',
      '[profile.mtls]',
      'address = "cluster:7233"',
      '[profile.mtls.tls]',
      `client_cert_path = "${files['client.pem']}"`,
      `client_key_path = "${files['client.key']}"`,
      `server_ca_cert_path = "${files['ca.pem']}"`,
      'server_name = "temporal.internal"',
      '',
      '[profile.halfpair.tls]',
      `client_cert_path = "${files['client.pem']}"`,
      '',
      '[profile.gone]',
      'address = "x:1"',
      '[profile.gone.tls]',
      `server_ca_cert_path = "${join(dir, 'missing-ca.pem')}"`,
    ].join('\n'),
  );
});

after(() => rm(dir, { recursive: true, force: true }));

/** No file unless the row names one: HOME points at an empty folder. */
const resolve = (env: Record<string, string>) => resolveTemporalTarget({ HOME: dir, ...env });

const good: { name: string; env: () => Record<string, string>; check: (t: TemporalTarget) => void }[] = [
  {
    name: 'nothing set: no address (the embedded default applies), namespace default, plaintext',
    env: () => ({}),
    check: (t) =>
      assert.deepEqual(t, {
        address: undefined,
        namespace: 'default',
        namespaceExplicit: false,
        options: {},
        summary: '(no address), plaintext',
      }),
  },
  {
    name: 'TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE alone',
    env: () => ({ TEMPORAL_ADDRESS: '127.0.0.1:7233', TEMPORAL_NAMESPACE: 'agents' }),
    check: (t) =>
      assert.deepEqual(
        [t.address, t.namespace, t.namespaceExplicit, t.options],
        ['127.0.0.1:7233', 'agents', true, {}],
      ),
  },
  {
    name: 'the default profile of TEMPORAL_CONFIG_FILE',
    env: () => ({ TEMPORAL_CONFIG_FILE: toml }),
    check: (t) => {
      assert.deepEqual([t.address, t.namespace], ['profile-host:7233', 'from-profile']);
      assert.match(t.summary, /from profile "default" in .*temporal\.toml/);
    },
  },
  {
    name: 'variables override the profile',
    env: () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_ADDRESS: 'env-host:7233', TEMPORAL_NAMESPACE: 'env-ns' }),
    check: (t) => assert.deepEqual([t.address, t.namespace], ['env-host:7233', 'env-ns']),
  },
  {
    name: 'an API key (profile) means TLS with the system roots',
    env: () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'cloud' }),
    check: (t) => {
      assert.deepEqual(t.options, { tls: true, apiKey: 'profile-api-key-value' });
      assert.equal(t.summary.includes('profile-api-key-value'), false, 'the key is never in the summary');
      assert.match(t.summary, /TLS, API key/);
    },
  },
  {
    name: 'TEMPORAL_API_KEY alone',
    env: () => ({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'env-key-value' }),
    check: (t) => assert.deepEqual(t.options, { tls: true, apiKey: 'env-key-value' }),
  },
  {
    name: 'mTLS from a profile: files read, server name kept',
    env: () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'mtls' }),
    check: (t) => {
      const tls = t.options.tls as {
        serverNameOverride?: string;
        serverRootCACertificate?: Buffer;
        clientCertPair?: { crt: Buffer; key: Buffer };
      };
      assert.equal(tls.serverNameOverride, 'temporal.internal');
      assert.equal(tls.serverRootCACertificate?.toString(), '-----BEGIN ca.pem-----\n');
      assert.equal(tls.clientCertPair?.crt.toString(), '-----BEGIN client.pem-----\n');
      assert.equal(tls.clientCertPair?.key.toString(), '-----BEGIN client.key-----\n');
      assert.match(t.summary, /^cluster:7233, mTLS/);
    },
  },
  {
    name: 'mTLS from variables',
    env: () => ({
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: files['client.pem']!,
      TEMPORAL_TLS_CLIENT_KEY_PATH: files['client.key']!,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: files['ca.pem']!,
    }),
    check: (t) =>
      assert.deepEqual(Object.keys(t.options.tls as object).sort(), ['clientCertPair', 'serverRootCACertificate']),
  },
  {
    name: 'certificate data in variables (no files)',
    env: () => ({
      TEMPORAL_ADDRESS: 'h:1',
      TEMPORAL_TLS_CLIENT_CERT_DATA: 'CERT',
      TEMPORAL_TLS_CLIENT_KEY_DATA: 'KEY',
    }),
    check: (t) =>
      assert.deepEqual((t.options.tls as { clientCertPair: unknown }).clientCertPair, {
        crt: Buffer.from('CERT'),
        key: Buffer.from('KEY'),
      }),
  },
  {
    name: 'TEMPORAL_TLS=true: TLS with no client certificate',
    env: () => ({ TEMPORAL_ADDRESS: 'h:1', TEMPORAL_TLS: 'true' }),
    check: (t) => assert.deepEqual(t.options, { tls: {} }),
  },
  {
    name: "TEMPORAL_TLS=false turns a profile's TLS off",
    env: () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'mtls', TEMPORAL_TLS: 'false' }),
    check: (t) => assert.deepEqual(t.options, { tls: false }),
  },
  {
    name: 'TEMPORAL_GRPC_META_* become metadata',
    env: () => ({ TEMPORAL_ADDRESS: 'h:1', TEMPORAL_GRPC_META_X_TENANT: 'blue' }),
    check: (t) => assert.deepEqual(t.options, { metadata: { 'x-tenant': 'blue' } }),
  },
];
for (const row of good) {
  void test(`connection: ${row.name}`, () => row.check(resolve(row.env())));
}

const bad: { name: string; env: () => Record<string, string>; error: RegExp }[] = [
  {
    name: 'a config file that does not exist',
    env: () => ({ TEMPORAL_CONFIG_FILE: join(dir, 'nope.toml') }),
    error: /^TEMPORAL_CONFIG_FILE=.*nope\.toml cannot be read: ENOENT/,
  },
  {
    name: 'a profile when there is no config file at all',
    env: () => ({ TEMPORAL_PROFILE: 'x' }),
    error:
      /^TEMPORAL_PROFILE=x: there is no Temporal config file \(looked for .*\/\.config\/temporalio\/temporal\.toml\); set TEMPORAL_CONFIG_FILE$/,
  },
  {
    name: 'a profile that does not exist',
    env: () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'staging' }),
    error: /^TEMPORAL_PROFILE=staging: no such profile in .*temporal\.toml/,
  },
  {
    name: 'a certificate without its key',
    env: () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'halfpair' }),
    error: /client certificate is set \(tls\.client_cert_path of profile "halfpair" in .*\) without its key/,
  },
  {
    name: 'a key variable without a certificate',
    env: () => ({ TEMPORAL_ADDRESS: 'h:1', TEMPORAL_TLS_CLIENT_KEY_PATH: 'k' }),
    error: /client key is set \(TEMPORAL_TLS_CLIENT_KEY_PATH\) without its certificate/,
  },
  {
    name: 'a CA file that is missing (profile)',
    env: () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'gone' }),
    error:
      /TLS server CA certificate .*missing-ca\.pem \(from tls\.server_ca_cert_path of profile "gone" in .*\) cannot be read: ENOENT/,
  },
  {
    name: 'a CA file that is missing (variable)',
    env: () => ({ TEMPORAL_ADDRESS: 'h:1', TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(dir, 'x.pem') }),
    error: /\(from TEMPORAL_TLS_SERVER_CA_CERT_PATH\) cannot be read: ENOENT/,
  },
  {
    name: 'an address that is a URL',
    env: () => ({ TEMPORAL_ADDRESS: 'http://h:7233' }),
    error: /^TEMPORAL_ADDRESS must be host:port, got "http:\/\/h:7233"/,
  },
];
for (const row of bad) {
  void test(`connection refuses ${row.name}`, () => {
    assert.throws(
      () => resolve(row.env()),
      (err: unknown) => {
        assert.ok(err instanceof ConnectionConfigError, String(err));
        assert.match(err.message, row.error);
        return true;
      },
    );
  });
}

test('connection refuses a TOML file with a mistyped key, naming the key and the file', async () => {
  const file = join(dir, 'typo.toml');
  await writeFile(file, '[profile.default]\nadress = "h:1"\n');
  assert.throws(
    () => resolve({ TEMPORAL_CONFIG_FILE: file }),
    /typo\.toml: key\(s\) unrecognized in profile\.default: adress/,
  );
});

test('connection refuses a TOML file that does not parse, with its line', async () => {
  const file = join(dir, 'broken.toml');
  await writeFile(file, '[profile.default]\naddress = "h:1\n');
  assert.throws(
    () => resolve({ TEMPORAL_CONFIG_FILE: file }),
    (err: Error) =>
      err instanceof ConnectionConfigError &&
      /broken\.toml: Invalid TOML/.test(err.message) &&
      /2: +address = "h:1/.test(err.message),
  );
});

test('the default config file is $XDG_CONFIG_HOME/temporalio/temporal.toml, else ~/.config', () => {
  assert.equal(configFilePath({ HOME: '/home/a' }), '/home/a/.config/temporalio/temporal.toml');
  assert.equal(configFilePath({ HOME: '/home/a', XDG_CONFIG_HOME: '/cfg' }), '/cfg/temporalio/temporal.toml');
  assert.equal(configFilePath({ HOME: '/home/a', TEMPORAL_CONFIG_FILE: '/x.toml' }), '/x.toml');
});

test('describeTarget names the kind of security and never a value', () => {
  assert.equal(describeTarget('h:1', {}), 'h:1, plaintext');
  assert.equal(describeTarget('h:1', { tls: true, apiKey: 'secret-value' }), 'h:1, TLS, API key');
  assert.equal(
    describeTarget('h:1', { tls: { clientCertPair: { crt: Buffer.from('c'), key: Buffer.from('k') } } }),
    'h:1, mTLS',
  );
});

test('permissionDenied recognises the gRPC codes a refusing server sends', () => {
  assert.equal(
    permissionDenied(Object.assign(new Error('7 PERMISSION_DENIED: Request unauthorized.'), { code: 7 })),
    true,
  );
  assert.equal(permissionDenied(Object.assign(new Error('16 UNAUTHENTICATED'), { code: 16 })), true);
  assert.equal(
    permissionDenied(Object.assign(new Error('5 NOT_FOUND: Namespace x is not found.'), { code: 5 })),
    false,
  );
  assert.equal(permissionDenied(new Error('connect ECONNREFUSED')), false);
});
