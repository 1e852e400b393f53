/**
 * The peer (Temporal's own TypeScript MCP integration, `@temporalio/ai-sdk`) is installed outside
 * the repository, never as a project dependency: `npm install` into BENCH_PEER_DIR (default
 * `$TMPDIR/durable-mcp-peer-bench`), once. The compiled peer worker and workflow are copied there
 * so that they resolve the peer's own `@temporalio/*` versions.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** Pinned: @temporalio/ai-sdk pins its @temporalio/* dependencies to the same version. */
export const PEER_PACKAGES = [
  '@temporalio/ai-sdk@1.23.0',
  '@temporalio/worker@1.23.0',
  '@temporalio/workflow@1.23.0',
  '@temporalio/activity@1.23.0',
  'ai@7',
  '@ai-sdk/mcp@2',
  '@ai-sdk/provider@4',
];

export interface PeerInstall {
  dir: string;
  workerScript: string;
  /** `name@version` of what is installed. */
  versions: string[];
}

const here = fileURLToPath(new URL('./', import.meta.url));

/** Installs the peer if needed; throws with npm's reason when it cannot. */
export async function ensurePeer(log: (line: string) => void): Promise<PeerInstall> {
  const dir = process.env.BENCH_PEER_DIR ?? join(tmpdir(), 'durable-mcp-peer-bench');
  await mkdir(dir, { recursive: true });
  if (!existsSync(join(dir, 'package.json'))) {
    await writeFile(
      join(dir, 'package.json'),
      `${JSON.stringify({ name: 'durable-mcp-peer-bench', private: true, type: 'module' }, null, 2)}\n`,
    );
  }
  if (!existsSync(join(dir, 'node_modules/@temporalio/ai-sdk/package.json'))) {
    log(`installing the peer into ${dir}: ${PEER_PACKAGES.join(' ')}`);
    try {
      await promisify(execFile)('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...PEER_PACKAGES], {
        cwd: dir,
        timeout: 300_000,
        maxBuffer: 16 * 2 ** 20,
      });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(
        `npm install of the peer failed: ${(e.stderr || e.message).trim().split('\n').slice(-5).join(' | ')}`,
      );
    }
  }
  const target = join(dir, 'bench-peer');
  await mkdir(target, { recursive: true });
  for (const file of ['peerWorker.js', 'peerWorkflow.js']) await copyFile(join(here, file), join(target, file));
  const versions: string[] = [];
  for (const name of ['@temporalio/ai-sdk', '@temporalio/worker', 'ai', '@ai-sdk/mcp']) {
    const pkg = JSON.parse(await readFile(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    };
    versions.push(`${name}@${pkg.version}`);
  }
  return { dir, workerScript: join(target, 'peerWorker.js'), versions };
}
