/**
 * Binary content in JSON answers: an image, audio or blob block keeps its type and size and gets a
 * link in place of its base64 data; the link serves the bytes. Pure.
 */
import type { ContentBlock } from '../contract/index.js';
import { sniffImageType } from '../shaping/index.js';

type Block = Record<string, unknown> & { type: string };

/** The base64 data a block carries, if any (image and audio `data`, embedded resource `blob`). */
function dataOf(block: Block): string | undefined {
  if ((block.type === 'image' || block.type === 'audio') && typeof block.data === 'string') return block.data;
  const resource = block.resource as Record<string, unknown> | undefined;
  if (block.type === 'resource' && resource && typeof resource.blob === 'string') return resource.blob;
  return undefined;
}

function decodedSize(base64: string): number {
  return Buffer.byteLength(base64, 'base64');
}

/** Blocks with every binary payload replaced by `href: <base>/<index>` and its decoded size in `bytes`. */
export function linkBinaryContent(blocks: readonly ContentBlock[], base: string): Block[] {
  return (blocks as unknown as Block[]).map((block, index) => {
    const data = dataOf(block);
    if (data === undefined) return block;
    if (block.type === 'resource') {
      const { blob: _blob, ...resource } = block.resource as Record<string, unknown>;
      return { ...block, resource: { ...resource, href: `${base}/${index}`, bytes: decodedSize(data) } };
    }
    const { data: _data, ...rest } = block;
    return { ...rest, href: `${base}/${index}`, bytes: decodedSize(data) };
  });
}

/**
 * The bytes of one block and the type to serve them as. Images are served as the type their bytes
 * show (never as declared: a server's `text/html` must not reach a browser as HTML); anything else
 * as `application/octet-stream` unless it declares an audio type.
 */
export function binaryOf(block: ContentBlock | undefined): { bytes: Buffer; contentType: string } | undefined {
  if (!block) return undefined;
  const data = dataOf(block as unknown as Block);
  if (data === undefined) return undefined;
  const bytes = Buffer.from(data, 'base64');
  if (block.type === 'image') return { bytes, contentType: sniffImageType(bytes) ?? 'application/octet-stream' };
  const declared = block.type === 'audio' ? block.mimeType : undefined;
  return { bytes, contentType: declared && /^audio\/[\w.+-]+$/.test(declared) ? declared : 'application/octet-stream' };
}
