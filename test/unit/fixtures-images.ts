/** Test images made with sharp at test time, so no binary files live in the repository. */
import sharp from 'sharp';

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

/** Deterministic pixels (xorshift32), so a failing test fails the same way every run. */
export function noisePixels(width: number, height: number, channels: 3 | 4, seed = 0x9e3779b9): Buffer {
  const buf = Buffer.allocUnsafe(width * height * channels);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < buf.length; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    buf[i] = x & 0xff;
    if (i + 1 < buf.length) buf[i + 1] = (x >>> 8) & 0xff;
    if (i + 2 < buf.length) buf[i + 2] = (x >>> 16) & 0xff;
    if (i + 3 < buf.length) buf[i + 3] = (x >>> 24) & 0xff;
  }
  return buf;
}

/** A small image in the given format. */
export async function smallImage(format: ImageFormat, width = 8, height = 8, alpha = false): Promise<Buffer> {
  const channels = alpha ? 4 : 3;
  const img = sharp(noisePixels(width, height, channels), { raw: { width, height, channels } });
  return img.toFormat(format).toBuffer();
}

/** A PNG of random pixels: incompressible, so its size is about width * height * channels. */
export async function noisyPng(width: number, height: number, alpha = false): Promise<Buffer> {
  const channels = alpha ? 4 : 3;
  return sharp(noisePixels(width, height, channels), { raw: { width, height, channels } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}
