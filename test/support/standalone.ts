/**
 * For a worker that runs as its own process (tests, benchmarks): on SIGTERM run `stop`, then exit 0,
 * or 1 saying why the shutdown failed. The parent decides when the process stops.
 */
export function stopOnSigterm(stop: () => Promise<unknown>): void {
  process.once('SIGTERM', () => {
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  });
}
