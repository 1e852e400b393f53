import type { ContentBlock } from '../../contract/index.js';

/** The text of a text block; undefined for any other block (or none). */
export function textOf(block: ContentBlock | undefined): string | undefined {
  return block?.type === 'text' ? block.text : undefined;
}

/** The base64 data of an image or audio block; undefined for any other block. */
export function dataOf(block: ContentBlock | undefined): string | undefined {
  return block?.type === 'image' || block?.type === 'audio' ? block.data : undefined;
}
