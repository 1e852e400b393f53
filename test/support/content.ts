import type { ContentBlock } from '../../contract/index.js';

/** The text of a text block; undefined for any other block (or none). */
export function textOf(block: ContentBlock | undefined): string | undefined {
  return block?.type === 'text' ? block.text : undefined;
}

/** The base64 data of an image or audio block; undefined for any other block. */
export function dataOf(block: ContentBlock | undefined): string | undefined {
  return block?.type === 'image' || block?.type === 'audio' ? block.data : undefined;
}

/** The messages of an error and its causes, joined: a failed turn's reason is a few causes deep. */
export function causeMessages(err: unknown): string {
  const out: string[] = [];
  for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e)
    if (e.message) out.push(e.message);
  return out.join(' <- ');
}
