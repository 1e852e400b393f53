/**
 * Installs the pinned Temporal CLI (see `installTemporalCli`): into `.tools/temporal/<version>/`
 * in a checkout, into the user's cache for an installed package. Idempotent: returns at once when
 * the binary is already there.
 *
 *   node dist/dev/setupTemporal.js [--if-missing | --require]
 *
 * With --if-missing (the npm `prepare` hook) it does nothing when any temporal binary is found,
 * and a failure is a warning, not an error, so `npm install` never fails on it. With --require
 * (CI) any binary found is enough, and a failure is an error.
 */
import { findTemporalCli, installTemporalCli, temporalCliVersion } from './temporalCli.js';

async function main(): Promise<void> {
  const ifMissing = process.argv.includes('--if-missing');
  const anyWillDo = ifMissing || process.argv.includes('--require');
  const started = Date.now();
  const found = await findTemporalCli().catch(() => undefined);
  if (found && (anyWillDo || found.source === 'installed')) {
    process.stderr.write(`Temporal CLI: ${found.path} (${found.source}), ${await temporalCliVersion(found.path)}\n`);
    return;
  }
  try {
    const path = await installTemporalCli();
    process.stderr.write(
      `Temporal CLI installed: ${path} (${await temporalCliVersion(path)}) in ${((Date.now() - started) / 1000).toFixed(1)}s\n`,
    );
  } catch (err) {
    const message = `Could not install the Temporal CLI: ${(err as Error).message}. See docs/cli.md "Getting the Temporal CLI".`;
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
