/**
 * The conversation as the provider was last sent it, kept per conversation head on the worker that
 * sent it. The AI SDK checks and converts every message it is given on every request, a pass over
 * the whole conversation that made a step at 300 cost twice one at 10; a step on the worker that ran
 * the one before gives the SDK only the messages new since then, and puts what was sent before back
 * in front, already converted. A worker without the head (a new one, after a crash) sends it whole.
 */
import type { LanguageModel, LanguageModelMiddleware, wrapLanguageModel } from 'ai';

/** Messages in the provider's own form (the SDK's converted prompt, without the system message). */
export type ProviderMessages = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['transformParams']>>>['prompt'];

/** Heads kept: one per conversation that moves on, so a few hundred turns' worth. */
const HEADS_KEPT = 256;

export class PromptCache {
  private readonly byHead = new Map<string, ProviderMessages>();

  /** What was sent up to the step that ended at `head` (that step's own reply is not in it). */
  get(head: string | undefined): ProviderMessages | undefined {
    return head === undefined ? undefined : this.byHead.get(head);
  }

  /** Keeps `sent` for `head`; the parent's is dropped, since a conversation only moves forward. */
  set(head: string, sent: ProviderMessages, parent: string | undefined): void {
    if (parent !== undefined) this.byHead.delete(parent);
    if (this.byHead.size >= HEADS_KEPT) this.byHead.delete(this.byHead.keys().next().value!);
    this.byHead.set(head, sent);
  }
}

/**
 * `model`, sending `prefix` (already converted) before the messages the SDK converts, after the
 * system message; `onSent` gets everything sent but the system message.
 */
export function withPrefix(
  wrap: typeof wrapLanguageModel,
  model: LanguageModel,
  prefix: ProviderMessages,
  onSent: (sent: ProviderMessages) => void,
): LanguageModel {
  return wrap({
    model: model as Parameters<typeof wrap>[0]['model'],
    middleware: {
      specificationVersion: 'v3',
      transformParams: ({ params }) => {
        const system = params.prompt.filter((m) => m.role === 'system');
        const sent = [...prefix, ...params.prompt.filter((m) => m.role !== 'system')];
        onSent(sent);
        return Promise.resolve({ ...params, prompt: [...system, ...sent] });
      },
    },
  });
}
