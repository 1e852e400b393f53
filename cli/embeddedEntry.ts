/**
 * The `durable-mcp/embedded` entry point: what user code needs to run turns the way `durable-mcp
 * run` does (TEMPORAL_ADDRESS, else a running `durable-mcp dev`, else an embedded Temporal dev
 * server with an in-process worker), and the logger it takes.
 */
export { connect, secretsOf, stopOnSignals, type Session } from './embedded.js';
export { createLogger } from '../worker/logger.js';
