/**
 * The one reading of MCP content blocks as text. The model's view (shapeForModel) and the
 * transcript a person reads both describe blocks through here, so a block never reads one way to
 * the model and another way in the transcript. Pure and synchronous: images are only described
 * here; fetching their bytes into the model's limits is images.ts's job.
 */
import { isJsonObject } from '../contract/index.js';
import { oneLine } from '../text/oneLine.js';

/** What one content block shows as. `index` is the block's position in `content`. */
export type BlockView =
  /** text that is shown as it is (a text block, an embedded text resource, a resource link) */
  | { kind: 'text'; index: number; text: string }
  /** a block that is not shown, and why: one line, without brackets */
  | { kind: 'note'; index: number; note: string }
  /** an image block: whether the model sees it depends on its bytes and the limits */
  | {
      kind: 'image';
      index: number;
      /** `image (content[i], <declared type>, <size>)`, the words any note about it starts with */
      label: string;
      /** the declared MIME type as quoted in notes ('no type' when there is none) */
      declaredType: string;
      /** base64 as sent; '' when the block has no data */
      data: string;
    };

/** Describes every block of `content`, in order; anything but an array has no blocks. */
export function describeContent(content: unknown): BlockView[] {
  // Array.from, not map: a hole in a sparse array is a block too (shown as a note), not skipped.
  return Array.isArray(content) ? Array.from(content, (block: unknown, index) => describeBlock(block, index)) : [];
}

/** Describes one block. Never throws: malformed blocks (from a server or an old history) become notes. */
export function describeBlock(block: unknown, index: number): BlockView {
  const where = `content[${index}]`;
  if (!isRecord(block)) return { kind: 'note', index, note: `${where} is not a content block and is not shown` };
  switch (block.type) {
    case 'text':
      return { kind: 'text', index, text: typeof block.text === 'string' ? block.text : '' };
    case 'image':
      return {
        kind: 'image',
        index,
        label: `image (${where}, ${describeData(block.mimeType, block.data)})`,
        declaredType: typeof block.mimeType === 'string' ? quote(block.mimeType, '', 60) : 'no type',
        data: typeof block.data === 'string' ? block.data : '',
      };
    case 'audio':
      return {
        kind: 'note',
        index,
        note: `${where}: audio (${describeData(block.mimeType, block.data)}) not shown: the model takes no audio`,
      };
    case 'resource': {
      const r = isRecord(block.resource) ? block.resource : {};
      const uri = quote(r.uri, 'unnamed resource');
      if (typeof r.text === 'string') {
        const mime = typeof r.mimeType === 'string' ? ` (${quote(r.mimeType)})` : '';
        return { kind: 'text', index, text: `Resource ${uri}${mime}:\n${r.text}` };
      }
      if (typeof r.blob === 'string') {
        return {
          kind: 'note',
          index,
          note: `${where}: binary resource ${uri} (${describeData(r.mimeType, r.blob)}) not shown`,
        };
      }
      return { kind: 'note', index, note: `${where}: resource ${uri} has no content` };
    }
    case 'resource_link': {
      const mime = typeof block.mimeType === 'string' ? `, ${quote(block.mimeType)}` : '';
      const desc =
        typeof block.description === 'string' && block.description ? `: ${quote(block.description, '', 300)}` : '';
      return {
        kind: 'text',
        index,
        text: `Resource link: ${quote(block.name, 'unnamed')} (${quote(block.uri, 'no uri')}${mime})${desc}`,
      };
    }
    default:
      return {
        kind: 'note',
        index,
        note: `${where}: unsupported block type ${JSON.stringify(quote(block.type, 'none', 40))} not shown`,
      };
  }
}

/** A tool must not be able to end the `<toolOutput>` wrapper early. */
export function neutralize(s: string): string {
  return s.replace(/<\/(toolOutput)/gi, '<\\/$1');
}

/** Whether `v` is a JSON object (the contract's `isJsonObject`, under the name shaping uses). */
export const isRecord = isJsonObject;

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

/** `<type>, <decoded size>` of a block's base64 data, for notes. */
function describeData(mimeType: unknown, data: unknown): string {
  const mime = typeof mimeType === 'string' && mimeType ? quote(mimeType, '', 60) : 'no type';
  const size = typeof data === 'string' ? formatBytes(Buffer.byteLength(data, 'base64')) : 'no data';
  return `${mime}, ${size}`;
}

/**
 * A tool-supplied value quoted inside one of our lines: `fallback` when it is not a non-empty
 * string. Its spacing is kept (a name is quoted as sent) apart from control characters, which
 * would break the line.
 */
function quote(v: unknown, fallback = '', max = 200): string {
  if (typeof v !== 'string' || v === '') return fallback;
  return neutralize(oneLine(v, { max, spacing: 'control', cut: 'append' }));
}
