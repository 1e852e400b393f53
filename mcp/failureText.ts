/**
 * Why a server failed, in words for its status and for call errors. The caller removes secrets
 * before the text leaves the worker; what is cut here (stderr lines, an error body) must reach it
 * already scrubbed, since a secret across a cut would no longer be found whole.
 */
import type { Transport } from '@modelcontextprotocol/client';
import type { TailBuffer } from '../text/tailBuffer.js';
import { describeRemoteError, type WireFailure } from './httpTransport.js';
import { ProcessGroupStdioTransport } from './stdioTransport.js';

/** Stderr lines quoted in a failure: the last words of a dying server, not its whole log. */
const STDERR_LINES = 5;

/** `10s`, `2.5s`. */
export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}

/** A start that ran out of time names the phase it was stuck in (spawn, handshake, tool listing). */
export function startTimeoutText(timeoutMs: number, phase: string): string {
  return `timed out after ${formatSeconds(timeoutMs)} during ${phase}`;
}

export function unansweredPingsText(pings: number, timeoutMs: number): string {
  return `no answer to ${pings} pings of ${formatSeconds(timeoutMs)}`;
}

/** A remote server has no process to exit, so its loss is named as such. */
export function lostText(remote: boolean, cause: string): string {
  return remote ? `connection lost: ${cause}` : cause;
}

function exitedProcess(transport: Transport | undefined): ProcessGroupStdioTransport | undefined {
  return transport instanceof ProcessGroupStdioTransport &&
    (transport.exitCode !== null || transport.exitSignal !== null)
    ? transport
    : undefined;
}

function withStderr(text: string, stderr: TailBuffer): string {
  const tail = stderr.lastLines(STDERR_LINES);
  return tail ? `${text}; stderr: ${tail}` : text;
}

/** A server that was running is gone: how its process ended (else `fallback`) and its last stderr lines. */
export function describeExit(transport: Transport | undefined, stderr: TailBuffer, fallback: string): string {
  const exited = exitedProcess(transport);
  const text = !exited
    ? fallback
    : exited.exitSignal
      ? `exited on ${exited.exitSignal}`
      : `exited with code ${exited.exitCode}`;
  return withStderr(text, stderr);
}

/** What is known about a server whose start failed. */
export interface StartFailure {
  remote: boolean;
  transport?: Transport;
  stderr: TailBuffer;
  /** The last HTTP status or network error a remote server's requests met. */
  lastWire?: WireFailure;
  junkLines: number;
  firstJunkLine?: string;
  /** Scrubs what is cut here (a remote error body) before the cut. */
  scrub?: (text: string) => string;
}

/**
 * Why a server did not start. Remote: what the server or network answered (an HTTP status says
 * more than the SDK's message). Stdio: how the process ended if it did, else the error, plus any
 * non-protocol stdout (the usual cause of a handshake that never completes) and stderr.
 */
export function describeStartFailure(err: unknown, failure: StartFailure): string {
  if (failure.remote) return describeRemoteError(err, failure.lastWire, failure.scrub);
  const message = err instanceof Error ? err.message : String(err);
  if (exitedProcess(failure.transport)) return describeExit(failure.transport, failure.stderr, message);
  const junk =
    failure.junkLines > 0
      ? ` (wrote ${failure.junkLines} non-protocol line(s) to stdout, first: ${JSON.stringify(failure.firstJunkLine)})`
      : '';
  return withStderr(`${message}${junk}`, failure.stderr);
}
