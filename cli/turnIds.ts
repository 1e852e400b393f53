/** How the CLI names a turn, and the one wording for a turn ID it cannot use. */
import { SESSION_ID_PATTERN } from '../contract/index.js';

/** A turn's workflow ID: `<sessionId>/turn-<n>`, the session ID as the API and CLI accept it. */
const TURN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\/turn-[1-9]\d{0,8}$/;

/** Where to look a session's turns up, for a hint after a turn ID that names none. */
function listHint(turnId: string): string {
  const session = turnId.split('/')[0] ?? '';
  return SESSION_ID_PATTERN.test(session)
    ? `\`durable-mcp turn list ${session}\` lists that session's turns`
    : '`durable-mcp session list` lists the sessions';
}

/** Why `turnId` is not a turn ID, or undefined when it has the form. */
export function turnIdProblem(turnId: string): string | undefined {
  if (TURN_ID_PATTERN.test(turnId)) return undefined;
  return `invalid turn ID ${JSON.stringify(turnId)}: expected <sessionId>/turn-<n>, e.g. ${JSON.stringify(`${SESSION_ID_PATTERN.test(turnId) ? turnId : 'chat-42'}/turn-1`)}; ${listHint(turnId)}`;
}

/** A well-formed turn ID that Temporal does not know. */
export function noSuchTurn(turnId: string, where: string): string {
  return `no turn ${JSON.stringify(turnId)} on ${where}; ${listHint(turnId)}`;
}
