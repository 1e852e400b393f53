/**
 * `npm test`: starts a Temporal dev server (in memory, 127.0.0.1, free ports) unless
 * TEMPORAL_ADDRESS points at one, runs every unit and integration test against it with node's
 * test runner, then stops the server. Extra arguments go to `node --test` (e.g. a file).
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevServer, type DevServer } from '../dev/devServer.js';

const here = fileURLToPath(new URL('.', import.meta.url));

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return testFiles(path);
      return name.endsWith('.test.js') ? [path] : [];
    })
    .sort();
}

async function main(): Promise<number> {
  const requested = process.argv.slice(2);
  const files = requested.length > 0 ? requested : [...testFiles(join(here, 'unit')), ...testFiles(join(here, 'integration'))];
  let server: DevServer | undefined;
  const env = { ...process.env };
  if (!env.TEMPORAL_ADDRESS) {
    server = await startDevServer({ headless: true });
    env.TEMPORAL_ADDRESS = server.address;
    process.stderr.write(`Temporal dev server for tests: ${server.address} (${server.binary})\n`);
  }
  try {
    return await new Promise<number>((resolve, reject) => {
      const child = spawn(process.execPath, ['--test', '--test-reporter=spec', ...files], { stdio: 'inherit', env });
      child.once('error', reject);
      child.once('close', (code) => resolve(code ?? 1));
    });
  } finally {
    await server?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
