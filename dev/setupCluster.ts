/**
 * Installs what the cluster path needs and is idempotent (CI runs it on every build; `npm run
 * test:cluster` runs it first):
 *
 *   node dist/dev/setupCluster.js
 *
 * - the Temporal server and SQL schema tool, and versitygw, built into `.tools/` at the versions in
 *   `.env` (go install through the Go module proxy; CI caches `.tools/`);
 * - Debian's `postgresql` (the cluster test's database) and `docker-compose` (to check the compose
 *   file), with apt-get when running as root on Debian; elsewhere it says what to install.
 */
import {
  commandExists,
  ensureDebianPackages,
  findPostgresBin,
  installClusterTools,
  readDotEnv,
} from './clusterTools.js';

async function main(): Promise<void> {
  const started = Date.now();
  const say = (m: string) => process.stderr.write(`${m}\n`);
  const wanted: string[] = [];
  if (!(await findPostgresBin())) wanted.push('postgresql');
  if (!commandExists('docker-compose')) wanted.push('docker-compose');
  if (!commandExists('openssl')) wanted.push('openssl');
  ensureDebianPackages(wanted, say);
  const report = await installClusterTools(await readDotEnv(), say);
  const built = (s: number) => (s > 0 ? `built in ${s.toFixed(0)}s` : 'already built');
  say(
    `Temporal server ${report.paths.serverVersion}: ${report.paths.temporalServer} (${built(report.serverBuildSeconds)})`,
  );
  say(`versitygw ${report.paths.versityVersion}: ${report.paths.versitygw} (${built(report.versityBuildSeconds)})`);
  say(`PostgreSQL: ${await findPostgresBin()}; cluster tools ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
