/**
 * What other rooms use of shaping/: the model's view of a call, the limits it is shaped to, the
 * one description of content blocks, and the servers paragraph.
 */
export { shapeForModel, type ModelView } from './shapeResult.js';
export { DEFAULT_SHAPE_LIMITS, type ShapeLimits } from './limits.js';
export { sniffImageType, type ModelImage } from './images.js';
export { describeBlock, describeContent, type BlockView } from './content.js';
export { renderServersParagraph, MAX_QUOTED_LENGTH, MAX_WARNINGS_SHOWN } from './serversParagraph.js';
