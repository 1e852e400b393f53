import { createRequire } from 'node:module';
import type * as TemporalClient from '@temporalio/client';

/**
 * `@temporalio/client`, loaded with `require`. Imported from an ES module, the package's CommonJS
 * files are first scanned for their export names (cjs-module-lexer), which cost every start of a
 * one-shot command 50-80 ms of CPU (bench/results/runCommand.md, "The one-shot CLI, failover, throughput: before
 * and after"). Its types are imported as usual (`import type`).
 */
export const temporalClient = createRequire(import.meta.url)('@temporalio/client') as typeof TemporalClient;
