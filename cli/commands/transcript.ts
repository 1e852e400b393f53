/** `durable-mcp transcript <turnId>`: a turn rendered from its history. */
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Command } from 'commander';
import { findCause } from '../../client/failures.js';
import { saveImages } from '../../client/transcriptImages.js';
import { renderTranscript } from '../../client/transcriptText.js';
import { GrpcStatus, UsageError, grpcStatusOf } from '../common.js';
import { withCommandSession } from '../commandSession.js';
import { noSuchTurn, turnIdProblem } from '../turnIds.js';
import { terminalJson } from '../../text/terminal.js';

/** Whether Temporal answered that the turn (or its namespace) is not there. */
function notFound(err: unknown): boolean {
  // The history is read with a raw service call, which fails with the gRPC status, not the SDK's error.
  return (
    findCause(err, (e): e is WorkflowNotFoundError => e instanceof WorkflowNotFoundError) !== undefined ||
    grpcStatusOf(err) === GrpcStatus.NOT_FOUND
  );
}

/** Exit code 0, or 1 when an image could not be saved; a turn that is not there is a usage error. */
async function transcriptCommand(turnId: string, opts: { json?: boolean; saveImages?: string }): Promise<number> {
  const bad = turnIdProblem(turnId);
  if (bad) throw new UsageError(bad);
  return withCommandSession(async (session) => {
    try {
      const t = await session.client.transcript(turnId);
      process.stdout.write(opts.json ? `${terminalJson(t, 2)}\n` : `${renderTranscript(t)}\n`);
      if (opts.saveImages) {
        const saved = await saveImages(t, opts.saveImages);
        process.stderr.write(`saved ${saved.written.length} image(s) to ${opts.saveImages}\n`);
        for (const file of saved.skipped) process.stderr.write(`error: ${file} already exists; not overwritten\n`);
        if (saved.skipped.length > 0) return 1;
      }
      return 0;
    } catch (err) {
      if (notFound(err)) throw new UsageError(noSuchTurn(turnId, session.address));
      throw err;
    }
  });
}

/** Adds `durable-mcp transcript` to the program. */
export function registerTranscriptCommand(program: Command): void {
  program
    .command('transcript')
    .description('render a turn from its history (status, tools, calls, outcomes)')
    .argument('<turnId>', 'the turn, e.g. my-session/turn-1')
    .option('--json', 'print the transcript as JSON')
    .option('--save-images <dir>', 'write every image of every call to DIR as <call>-<n>.<ext>')
    .action(async (turnId: string, opts: { json?: boolean; saveImages?: string }) => {
      process.exitCode = await transcriptCommand(turnId, opts);
    });
}
