import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { INSTALL_ROOT } from '../../mcp/sandbox.js';
import { loadSettings } from '../../settings/index.js';
import { sandboxHiddenPaths, sandboxHome } from '../../worker/sandboxPaths.js';

const sorted = (paths: string[]) => [...paths].sort();

test("sandboxHiddenPaths: every credential or private file and folder the worker's settings name", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dmcp-hidden-settings-'));
  try {
    const profile = join(dir, 'temporal.toml');
    // Every profile's files, not only the one in use; relative paths as envconfig reads them.
    await writeFile(
      profile,
      [
        '[profile.default]',
        'address = "a:7233"',
        '[profile.default.tls]',
        'client_cert_path = "/etc/temporal/default.pem"',
        'client_key_path = "/etc/temporal/default.key"',
        '[profile.cloud]',
        'address = "b:7233"',
        '[profile.cloud.tls]',
        'server_ca_cert_path = "certs/cloud-ca.pem"',
        'client_cert_data = "inline, not a file"',
      ].join('\n'),
    );
    const env = {
      HOME: '/home/op',
      DMCP_DATA_DIR: '/srv/dmcp',
      DMCP_CONFIG_DIR: '/etc/dmcp',
      DMCP_OAUTH_DIR: '/var/lib/dmcp-oauth',
      DMCP_API_TOKENS_FILE: '/etc/dmcp-api/tokens',
      TEMPORAL_CONFIG_FILE: profile,
      TEMPORAL_TLS_CLIENT_KEY_PATH: '/etc/temporal/client.key',
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/etc/temporal/client.pem',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/etc/temporal/ca.pem',
      AWS_SHARED_CREDENTIALS_FILE: '/etc/aws/credentials',
      AWS_CONFIG_FILE: '/etc/aws/config',
      AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/token',
      DMCP_SANDBOX_HIDE: '/opt/secrets:/etc/ssl/private/agent.key',
    };
    assert.deepEqual(
      sorted(sandboxHiddenPaths(loadSettings(env), env)),
      sorted(
        [
          '/srv/dmcp',
          '/var/lib/dmcp-oauth',
          '/etc/dmcp',
          '/etc/dmcp-api/tokens',
          profile,
          '/etc/temporal/client.key',
          '/etc/temporal/client.pem',
          '/etc/temporal/ca.pem',
          '/etc/temporal/default.pem',
          '/etc/temporal/default.key',
          resolve('certs/cloud-ca.pem'),
          '/etc/aws/credentials',
          '/etc/aws/config',
          '/var/run/secrets/token',
          // Other instances' data dirs this worker knows of: the installation's and the working directory's default one.
          join(INSTALL_ROOT, '.data'),
          resolve('.data'),
          '/opt/secrets',
          '/etc/ssl/private/agent.key',
        ].filter((p, i, all) => all.indexOf(p) === i),
      ),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('sandboxHiddenPaths: with defaults, the data dir (with its OAuth dir), the config dir and the default Temporal profile under the home', () => {
  const env = { HOME: '/home/op' };
  assert.deepEqual(
    sorted(sandboxHiddenPaths(loadSettings(env), env)),
    sorted(
      [
        resolve('.data'),
        resolve('.data', 'oauth'),
        '/home/op/.config/durable-mcp',
        '/home/op/.config/temporalio/temporal.toml',
        join(INSTALL_ROOT, '.data'),
      ].filter((p, i, all) => all.indexOf(p) === i),
    ),
  );
});

test("sandboxHome: HOME when absolute, else the user's home from the system", () => {
  assert.equal(sandboxHome({ HOME: '/home/op' }), '/home/op');
  assert.equal(sandboxHome({ HOME: 'relative' }), homedir());
  assert.equal(sandboxHome({}), homedir());
});
