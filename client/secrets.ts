/**
 * The client's refusal of secret values: workflow input and Update arguments are recorded in
 * history as given, so a value that would land there is refused before anything is sent.
 */
import type { CallRequest, InputAnswer } from '../contract/index.js';
import type { InputHandler } from './inputs.js';

/** A turn or call that would put the value of a secret variable into history; names the variable, never the value. */
export class SecretInInputError extends Error {
  override name = 'SecretInInputError';
}

/** Shorter values would match ordinary text (the worker's scrubbing uses the same bound). */
const MIN_SECRET_LENGTH = 4;

/** Every string in a value (object keys included), with where it sits. */
function stringsIn(value: unknown, where: string, out: [string, string][] = []): [string, string][] {
  if (typeof value === 'string') out.push([where, value]);
  else if (Array.isArray(value)) value.forEach((v, i) => stringsIn(v, `${where}[${i}]`, out));
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.push([where, k]);
      stringsIn(v, `${where}.${k}`, out);
    }
  }
  return out;
}

/** Refuses input holding a secret value: workflow input and Update arguments are recorded as given. */
export function refuseSecrets(secrets: Record<string, string> | undefined, parts: [string, unknown][]): void {
  if (!secrets) return;
  const known = Object.entries(secrets).filter(([, v]) => typeof v === 'string' && v.length >= MIN_SECRET_LENGTH);
  if (known.length === 0) return;
  for (const [label, value] of parts) {
    for (const [where, text] of stringsIn(value, label)) {
      const hit = known.find(([, secret]) => text.includes(secret));
      if (hit) {
        throw new SecretInInputError(
          `${where} contains the value of the secret variable ${hit[0]}; it would be recorded in workflow history. ` +
            'Give secrets to servers on the worker instead ("envFrom" or "bearerTokenEnv" in a config file, with DMCP_MCP_ENV)',
        );
      }
    }
  }
}

/** Refuses a call whose arguments hold a secret value. */
export function refuseCallSecrets(secrets: Record<string, string> | undefined, request: CallRequest): void {
  refuseSecrets(secrets, [[`call ${JSON.stringify(request.id)} (${request.name}) arguments`, request.arguments ?? {}]]);
}

/** Refuses an answer to an input request that holds a secret value. */
export function refuseAnswerSecrets(
  secrets: Record<string, string> | undefined,
  requestId: string,
  answer: InputAnswer,
): void {
  refuseSecrets(secrets, [[`answer to ${JSON.stringify(requestId)}`, answer]]);
}

/** `onInput`, with each answer it gives refused when it holds a secret value. */
export function answersWithoutSecrets(
  secrets: Record<string, string> | undefined,
  onInput: InputHandler,
): InputHandler {
  return async (asked, context) => {
    const answer = await onInput(asked, context);
    if (answer) refuseAnswerSecrets(secrets, asked.requestId, answer);
    return answer;
  };
}
