/**
 * Images for the model: their real type from their bytes, and downscaling or recompressing those
 * over the size limit so the model still sees something rather than nothing.
 */
import type SharpModule from 'sharp';
import { formatBytes, type BlockView } from './content.js';
import type { ShapeLimits } from './limits.js';

/** One image for the model, in the format its bytes really have. */
export interface ModelImage {
  mimeType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
  /** base64 */
  data: string;
  /** decoded size */
  bytes: number;
  /** position in content */
  index: number;
}

/** The image type of some bytes by their magic numbers, whatever type they were declared as. */
export function sniffImageType(bytes: Uint8Array): ModelImage['mimeType'] | undefined {
  const at = (offset: number, ...sig: number[]): boolean =>
    bytes.length >= offset + sig.length && sig.every((b, i) => bytes[offset + i] === b);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (at(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (at(0, 0x47, 0x49, 0x46, 0x38) && (at(4, 0x37, 0x61) || at(4, 0x39, 0x61))) return 'image/gif';
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp';
  return undefined;
}

/**
 * What the model gets of one image block: the image (with a note when it was reduced), a note
 * saying why it is not shown, or 'over-count' when it would be past the per-call image limit
 * (the caller sums those up in one note).
 */
export type ImageResult = { image: ModelImage; note?: string } | 'over-count' | string;

/** Decides what the model gets of one image block, given how many images are already shown. */
export async function imageForModel(
  block: Extract<BlockView, { kind: 'image' }>,
  limits: ShapeLimits,
  shownSoFar: number,
): Promise<ImageResult> {
  const { index, label } = block;
  if (!limits.modelTakesImages) return `${label} not shown: the model takes no images`;
  if (block.data === '') return `${label} not shown: it has no data`;
  const bytes = Buffer.from(block.data, 'base64');
  const type = sniffImageType(bytes);
  if (!type)
    return `${label} not shown: its bytes are not a PNG, JPEG, GIF or WebP image (declared ${block.declaredType})`;
  if (shownSoFar >= limits.maxImages) return 'over-count';
  if (base64Size(bytes.length) <= limits.maxImageBytes) {
    return { image: { mimeType: type, data: bytes.toString('base64'), bytes: bytes.length, index } };
  }
  const fitted = await fitImage(bytes, limits.maxImageBytes);
  if (typeof fitted === 'string') {
    return `${label} not shown: larger than the ${formatBytes(limits.maxImageBytes)} limit and ${fitted}`;
  }
  return {
    image: { mimeType: fitted.type, data: fitted.data.toString('base64'), bytes: fitted.data.length, index },
    note:
      `image content[${index}] was reduced from ${fitted.from} ${type} (${formatBytes(bytes.length)}) to ` +
      `${fitted.to} ${fitted.type} (${formatBytes(fitted.data.length)}) to fit the ${formatBytes(limits.maxImageBytes)} limit`,
  };
}

interface Fitted {
  data: Buffer;
  type: 'image/png' | 'image/jpeg' | 'image/webp';
  from: string;
  to: string;
}

const MIN_SIDE = 16;
const MAX_ATTEMPTS = 8;

// sharp (native, ~0.3 s to load) is needed only when an image is too large; a client that merely
// renders outcomes, or a one-shot command, never pays for it.
let sharpModule: Promise<typeof SharpModule> | undefined;
function loadSharp(): Promise<typeof SharpModule> {
  sharpModule ??= import('sharp').then((m) => m.default);
  return sharpModule;
}

/** Downscales/recompresses an image until its base64 size fits `cap`; a reason when it cannot. */
async function fitImage(input: Buffer, cap: number): Promise<Fitted | string> {
  const sharp = await loadSharp();
  let width: number;
  let height: number;
  let alpha: boolean;
  try {
    const meta = await sharp(input, { failOn: 'none' }).metadata();
    width = meta.autoOrient.width;
    height = meta.autoOrient.height;
    alpha = meta.hasAlpha && !(await sharp(input, { failOn: 'none' }).stats()).isOpaque;
  } catch {
    return 'could not be decoded to reduce it';
  }
  // PNG keeps transparency losslessly, so it is tried first for images that use it, but only down
  // to half size; past that a lossy WebP with alpha keeps more of the picture.
  const formats: Array<{ type: Fitted['type']; minScale: number }> = alpha
    ? [
        { type: 'image/png', minScale: 0.5 },
        { type: 'image/webp', minScale: 0 },
      ]
    : [{ type: 'image/jpeg', minScale: 0 }];
  try {
    for (const { type, minScale } of formats) {
      let scale = 1;
      let quality = 85;
      for (let attempt = 0; attempt < MAX_ATTEMPTS && scale >= minScale; attempt++) {
        const w = Math.max(1, Math.round(width * scale));
        const h = Math.max(1, Math.round(height * scale));
        let pipeline = sharp(input, { failOn: 'none' }).rotate();
        if (scale < 1) pipeline = pipeline.resize(w, h, { fit: 'fill' });
        if (type === 'image/png') pipeline = pipeline.png({ compressionLevel: 9 });
        else if (type === 'image/webp') pipeline = pipeline.webp({ quality, alphaQuality: quality });
        else pipeline = pipeline.flatten({ background: '#ffffff' }).jpeg({ quality });
        const data = await pipeline.toBuffer();
        const size = base64Size(data.length);
        if (size <= cap) return { data, type, from: `${width}x${height}`, to: `${w}x${h}` };
        if (w <= MIN_SIDE && h <= MIN_SIDE) break;
        // Encoded size grows roughly with the pixel count, so scale the sides by the square root.
        scale *= Math.min(0.9, Math.max(0.1, Math.sqrt(cap / size) * 0.95));
        quality = 70;
      }
    }
  } catch {
    return 'could not be decoded to reduce it';
  }
  return 'could not be reduced to fit';
}

/** The limit is on the base64 size, since that is what model APIs measure. */
function base64Size(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}
