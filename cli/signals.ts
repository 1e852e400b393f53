/**
 * How a long-running command answers signals. The first SIGINT/SIGTERM/SIGHUP stops in order
 * (running calls may finish within the worker's shutdown grace, then servers stop, then whatever
 * serves them); a second one forces: every server process group is killed at once. Either way the
 * exit code is 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM), as shells expect.
 */
export const SIGNAL_EXIT_CODES = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

export interface StopHandlers {
  /** The orderly stop; the process exits when it settles. */
  graceful(signal: StopSignal): Promise<unknown>;
  /** Synchronous last resort on the second signal: kill what must not outlive the process. */
  force(signal: StopSignal): void;
  /** Said once on the first signal (stderr). */
  notice?: (signal: StopSignal) => void;
}

export function handleStopSignals(
  handlers: StopHandlers,
  signals: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'],
): void {
  let received = 0;
  for (const signal of signals) {
    process.on(signal, () => {
      received += 1;
      const code = SIGNAL_EXIT_CODES[signal];
      if (received === 1) {
        handlers.notice?.(signal);
        void handlers.graceful(signal).finally(() => process.exit(code));
        return;
      }
      handlers.force(signal);
      process.exit(code);
    });
  }
}

/** SIGKILL to a whole process group; a group already gone is fine. */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
