import { execFile } from 'node:child_process';
import { readFile, realpath, stat } from 'node:fs/promises';
import { MAX_CONFIG_BYTES } from './json.js';

/** How long one `$(command)` may run while the config loads. */
export const COMMAND_TIMEOUT_MS = 10_000;

/** A `$(command)` to run: an argument vector (or `/bin/sh -c`), with the secret-scrubbed environment. */
export interface CommandRequest {
  argv: string[];
  /** The folder of the file that holds the expression. */
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/**
 * The loader's only contact with the outside world; tests pass a fake to stay off the disk.
 * `readText` rejects with an `ENOENT` error for a missing file (normal for most layers).
 */
export interface ConfigIO {
  readText(path: string): Promise<string>;
  /** Runs a command expression and resolves its stdout; rejects on failure, non-zero exit or timeout. */
  runCommand?(request: CommandRequest): Promise<string>;
  /** The path with every symlink resolved; rejects when it does not exist. Without it paths are taken as written. */
  realPath?(path: string): Promise<string>;
}

/** The real file system and process runner. Files over 1 MiB are refused before being read. */
export const nodeConfigIO: ConfigIO = {
  async readText(path) {
    const info = await stat(path);
    if (info.size > MAX_CONFIG_BYTES) {
      throw Object.assign(new Error(`file is ${info.size} bytes; config files are limited to 1 MiB`), {
        code: 'EFBIG',
      });
    }
    return readFile(path, 'utf8');
  },
  realPath: (path) => realpath(path),
  runCommand({ argv, cwd, env, timeoutMs }) {
    return new Promise((resolvePromise, reject) => {
      execFile(
        argv[0],
        argv.slice(1),
        { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024, windowsHide: true },
        (err, stdout, stderr) => {
          if (err) {
            const detail = (stderr.trim().split('\n').pop() ?? '') || err.message.split('\n')[0];
            reject(new Error(err.killed ? `timed out after ${timeoutMs / 1000} s` : detail));
          } else resolvePromise(stdout);
        },
      );
    });
  },
};
