/**
 * Installs the pinned Temporal CLI into `.tools/temporal/<version>/` from a package registry:
 * `go install github.com/temporalio/cli/cmd/temporal@v<version>` through the Go module proxy.
 * Idempotent: returns at once when the binary is already there.
 *
 *   node dist/dev/setupTemporal.js [--if-missing | --require]
 *
 * With --if-missing (the npm `prepare` hook) it does nothing when any temporal binary is found,
 * and a failure is a warning, not an error, so `npm install` never fails on it. With --require
 * (CI) any binary found is enough, and a failure is an error.
 */
import { spawn } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { TEMPORAL_CLI_VERSION, findTemporalCli, installedCliPath, temporalCliVersion } from './temporalCli.js';

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with code ${code}`)),
    );
  });
}

export async function installTemporalCli(): Promise<string> {
  const dir = dirname(installedCliPath);
  const staging = `${dir}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  process.stderr.write(
    `Building Temporal CLI v${TEMPORAL_CLI_VERSION} with the Go toolchain (several minutes the first time)...\n`,
  );
  await run(
    'go',
    [
      'install',
      '-trimpath',
      `-ldflags=-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`,
      `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`,
    ],
    {
      ...process.env,
      GOBIN: staging,
      GOFLAGS: '-buildvcs=false',
    },
  );
  // Staged then moved, so an interrupted build never leaves a half-written binary behind.
  await rm(dir, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  await rename(staging, dir);
  return installedCliPath;
}

async function main(): Promise<void> {
  const ifMissing = process.argv.includes('--if-missing');
  const anyWillDo = ifMissing || process.argv.includes('--require');
  const started = Date.now();
  const found = await findTemporalCli().catch(() => undefined);
  if (found && (anyWillDo || found.source === 'project')) {
    process.stderr.write(`Temporal CLI: ${found.path} (${found.source}), ${await temporalCliVersion(found.path)}\n`);
    return;
  }
  try {
    const path = await installTemporalCli();
    process.stderr.write(
      `Temporal CLI installed: ${path} (${await temporalCliVersion(path)}) in ${((Date.now() - started) / 1000).toFixed(1)}s\n`,
    );
  } catch (err) {
    const message = `Could not install the Temporal CLI: ${(err as Error).message}. See README "Getting the Temporal CLI".`;
    if (ifMissing) {
      process.stderr.write(`warning: ${message}\n`);
      return;
    }
    throw new Error(message);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
