/**
 * The environment variables that bound what the model sees of a call. Parsed here so that
 * shaping/ takes its limits as a value and never reads the environment itself.
 */
import { DEFAULT_SHAPE_LIMITS, type ShapeLimits } from '../shaping/limits.js';

const STRUCTURED_SETTINGS: readonly ShapeLimits['structured'][] = ['content', 'structured', 'both', 'auto'];

/**
 * Reads the limits from the environment: `DMCP_MAX_TOOL_RESULT_TOKENS`, `DMCP_MAX_IMAGE_BYTES`,
 * `DMCP_MAX_IMAGES_PER_MESSAGE`, `DMCP_MODEL_IMAGES` (`true`/`false`) and `DMCP_STRUCTURED_CONTENT`
 * (`content`/`structured`/`both`/`auto`). Unset or empty variables take the defaults.
 * @throws Error naming the variable when a value is not valid.
 */
export function shapeLimitsFromEnv(env: Record<string, string | undefined>): ShapeLimits {
  const get = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const integer = (name: string, fallback: number, min: number): number => {
    const v = get(name);
    if (v === undefined) return fallback;
    const n = /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min) {
      throw new Error(`${name} must be an integer of at least ${min}, got ${JSON.stringify(clip(v, 40))}`);
    }
    return n;
  };
  const images = get('DMCP_MODEL_IMAGES')?.toLowerCase();
  let modelTakesImages = DEFAULT_SHAPE_LIMITS.modelTakesImages;
  if (images !== undefined) {
    if (['true', '1', 'yes'].includes(images)) modelTakesImages = true;
    else if (['false', '0', 'no'].includes(images)) modelTakesImages = false;
    else throw new Error(`DMCP_MODEL_IMAGES must be true or false, got ${JSON.stringify(clip(images, 40))}`);
  }
  const structured = get('DMCP_STRUCTURED_CONTENT')?.toLowerCase() ?? DEFAULT_SHAPE_LIMITS.structured;
  if (!(STRUCTURED_SETTINGS as readonly string[]).includes(structured)) {
    throw new Error(
      `DMCP_STRUCTURED_CONTENT must be one of ${STRUCTURED_SETTINGS.join(', ')}, got ${JSON.stringify(clip(structured, 40))}`,
    );
  }
  return {
    maxTokens: integer('DMCP_MAX_TOOL_RESULT_TOKENS', DEFAULT_SHAPE_LIMITS.maxTokens, 1),
    maxImageBytes: integer('DMCP_MAX_IMAGE_BYTES', DEFAULT_SHAPE_LIMITS.maxImageBytes, 1),
    maxImages: integer('DMCP_MAX_IMAGES_PER_MESSAGE', DEFAULT_SHAPE_LIMITS.maxImages, 0),
    modelTakesImages,
    structured: structured as ShapeLimits['structured'],
  };
}

/** A bad value quoted in an error stays short, however long the variable is. */
function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}...` : s;
}
