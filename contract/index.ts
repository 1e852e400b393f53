/** The contract room: what history and every process agree on. It imports nothing of the project. */
export * from './history.js';
export * from './turn.js';
export * from './names.js';
export * from './bounds.js';
export * from './governance.js';
export * from './shelf.js';
export * from './defaults.js';
export * from './inputs.js';
export * from './tasks.js';
export * from './models.js';
