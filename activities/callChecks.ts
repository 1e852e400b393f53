/** Where a call runs, what the workflow says about it is checked rather than taken on trust. */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { RefusedCallError } from '../mcp/serverErrors.js';
import { preToolUseProofText, type CallToolInput, type ToolInfo } from '../contract/index.js';
import type { ActivityKit } from './deps.js';
import { configFailure } from './history.js';

/** Seals text (a PreToolUse decision's proof text) with `key`: an HMAC only holders of the key can make. */
export function sealerFor(key: Buffer): (text: string) => string {
  return (text) => createHmac('sha256', key).update(text, 'utf8').digest('hex');
}

/**
 * The operator's rules for this call, checked again where it runs: the workflow's tool list is
 * not taken on trust. A tool the rules refuse, or one with PreToolUse hooks but no sealed decision
 * for exactly this turn, call and arguments, is not sent.
 */
export async function checkCall(
  { deps, governanceFor, seal }: ActivityKit,
  input: CallToolInput,
  turnId: string,
): Promise<void> {
  const g = await governanceFor(turnId);
  if (!g || !deps.governance) return;
  let governed: ToolInfo | undefined;
  try {
    [governed] = deps.governance.govern(
      [{ name: input.name, server: input.server, tool: input.tool, description: '', inputSchema: {} }],
      g,
    );
  } catch (err) {
    throw configFailure(err, deps.scrub);
  }
  if (governed?.refusedBy !== undefined)
    throw new RefusedCallError(`${input.name} is not allowed: ${governed.refusedBy}`);
  if (governed?.hooks?.PreToolUse === undefined) return;
  const expected = Buffer.from(seal(preToolUseProofText(turnId, input.callId, input.name, input.arguments)), 'hex');
  const given = Buffer.from(input.hookProof ?? '', 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new RefusedCallError(
      `${input.name} has PreToolUse hooks, and this call carries no decision of theirs sealed by this operator's workers for this turn, call and arguments`,
    );
  }
}
