/**
 * Runs one hook command the way Claude Code does: through the shell, the event's JSON on stdin,
 * in the turn's workspace, under a timeout. The environment is the worker's minus every secret.
 */
import { spawn } from 'node:child_process';
import type { HookExit } from './hookOutput.js';

/** Output kept per stream; a hook's answer is a line of JSON or a sentence. */
export const MAX_HOOK_OUTPUT_BYTES = 1024 * 1024;

/** One run of a hook command. */
export interface HookRunRequest {
  command: string;
  /** The JSON the hook reads on stdin. */
  stdin: string;
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Aborting kills the hook (the call was cancelled). */
  signal?: AbortSignal;
}

/** Runs `request.command` with `/bin/sh -c` in its own process group, so a timeout kills all of it. */
export function runHookCommand(request: HookRunRequest): Promise<HookExit> {
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const sizes = { out: 0, err: 0 };
    const child = spawn('/bin/sh', ['-c', request.command], {
      cwd: request.cwd,
      env: request.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const finish = (exit: HookExit) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      resolve(exit);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, request.timeoutMs);
    const onAbort = () => killGroup();
    request.signal?.addEventListener('abort', onAbort, { once: true });
    const keep = (chunks: Buffer[], which: 'out' | 'err') => (chunk: Buffer) => {
      if (sizes[which] >= MAX_HOOK_OUTPUT_BYTES) return;
      chunks.push(chunk);
      sizes[which] += chunk.length;
    };
    child.stdout.on('data', keep(out, 'out'));
    child.stderr.on('data', keep(err, 'err'));
    // A hook that does not read its stdin closes the pipe early: that is its right, not an error.
    child.stdin.on('error', () => undefined);
    child.on('error', (e) =>
      finish({ exitCode: null, stdout: '', stderr: '', timedOut: false, spawnError: e.message }),
    );
    child.on('close', (code) => {
      finish({
        exitCode: timedOut ? null : code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        timedOut,
      });
    });
    child.stdin.end(request.stdin);
  });
}
