/**
 * Installs what the MCP conformance run needs, at pinned versions, from the npm registry:
 * Node 22 (the `node-<platform>-<arch>` package) and both lines of `@modelcontextprotocol/conformance`,
 * each in its own prefix under `.tools/conformance/`. Idempotent: a version already there is kept.
 *
 *   node dist/dev/setupConformance.js
 *
 * `npm run test:conformance` runs it before the suite.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { installConformanceTools } from './conformanceTools.js';

async function main(): Promise<void> {
  const started = Date.now();
  const say = (m: string) => process.stderr.write(`${m}\n`);
  const tools = await installConformanceTools(say);
  // A binary that does not run here (another libc, a truncated download) should fail now, not mid-run.
  const { stdout } = await promisify(execFile)(tools.node, ['--version'], { timeout: 10_000 });
  say(
    `Conformance tools ready in ${((Date.now() - started) / 1000).toFixed(1)}s (node ${stdout.trim()}: ${tools.node})`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`Could not set up the conformance suite: ${(err as Error).message}\n`);
  process.exit(1);
});
