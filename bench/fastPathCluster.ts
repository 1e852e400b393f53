/**
 * bench/fastPath.ts on the multi-service cluster of `npm run test:cluster` instead of the embedded
 * dev server: a private PostgreSQL and the multi-service Temporal server on it, started as the
 * cluster test starts them (test/cluster/processes.ts; no S3, no TLS: the bench's payloads are
 * small), the `default` namespace set up as `durable-mcp setup` does, then the same bench pointed
 * at it (TEMPORAL_ADDRESS), into its own file, bench/results/fastPathCluster.md.
 *
 * Run on demand: `npm run build:bench && node dist/dev/setupCluster.js && node dist/bench/fastPathCluster.js`
 * (DMCP_CLUSTER_TOOLS_DIR for tools built elsewhere than `.tools/`; BENCH_FAST_* knobs pass through).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runSetup } from '../cli/setup.js';
import { findPostgresBin } from '../dev/clusterTools.js';
import { tempDir } from '../test/support/harness.js';
import { clusterSettings, setupSchema, startPostgres, startTemporalServer } from '../test/cluster/processes.js';
import { runBench } from './procs.js';

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const postgresMajor = () => /postgresql\/(\d+)\//.exec(pgBin ?? '')?.[1] ?? '';
let pgBin: string | undefined;

async function main(): Promise<void> {
  const dir = await tempDir('dmcp-bench-cluster-');
  const s = await clusterSettings();
  pgBin = await findPostgresBin();
  const postgres = await startPostgres({ dir, logDir: dir, user: s.postgres.user, password: s.postgres.password });
  try {
    await setupSchema({ port: postgres.port, ...s.postgres, logDir: dir });
    const temporal = await startTemporalServer({ dir, logDir: dir, postgresPort: postgres.port });
    try {
      log(
        `multi-service Temporal server ${s.tools.serverVersion} on PostgreSQL at ${temporal.address} (logs in ${dir})`,
      );
      await runSetup({
        target: {
          address: temporal.address,
          namespace: 'default',
          namespaceExplicit: true,
          options: {},
          summary: 'cluster',
        },
        print: log,
      });
      const script = fileURLToPath(new URL('./fastPath.js', import.meta.url));
      const env = {
        ...process.env,
        TEMPORAL_ADDRESS: temporal.address,
        BENCH_FAST_TARGET: 'the multi-service cluster',
        BENCH_FAST_SERVER: `the multi-service cluster of \`npm run test:cluster\` (Temporal server ${s.tools.serverVersion}, its four services in one process, on a private PostgreSQL ${postgresMajor()}, started as the cluster test starts them)`,
        BENCH_FAST_COMMAND: 'node dist/bench/fastPathCluster.js',
      };
      const code = await new Promise<number | null>((resolve, reject) => {
        const child = spawn(process.execPath, [script], { env, stdio: 'inherit' });
        child.once('error', reject);
        child.once('exit', resolve);
      });
      if (code !== 0) throw new Error(`the bench exited with ${code}`);
    } finally {
      await temporal.proc.stop();
    }
  } finally {
    await postgres.proc.stop();
  }
}

runBench(main);
