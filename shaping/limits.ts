/** Limits and settings for what the model sees of one call. */
export interface ShapeLimits {
  /** DMCP_MAX_TOOL_RESULT_TOKENS, default 25000 */
  maxTokens: number;
  /**
   * DMCP_MAX_IMAGE_BYTES, default 5 MiB. Compared with the image's base64 size, which is what
   * model APIs measure, so an image under it is also under it in raw bytes.
   */
  maxImageBytes: number;
  /** DMCP_MAX_IMAGES_PER_MESSAGE, default 20 */
  maxImages: number;
  /** whether the model takes images */
  modelTakesImages: boolean;
  /**
   * what the model sees of structuredContent: 'content' | 'structured' | 'both' | 'auto' (auto =
   * content, plus the JSON when content is empty; the default)
   */
  structured: 'content' | 'structured' | 'both' | 'auto';
}

/** The documented defaults (docs/configuration.md). */
export const DEFAULT_SHAPE_LIMITS: ShapeLimits = Object.freeze({
  maxTokens: 25_000,
  maxImageBytes: 5 * 1024 * 1024,
  maxImages: 20,
  modelTakesImages: true,
  structured: 'auto',
});
