/**
 * Writes the variables table of docs/configuration.md from settings/variables.ts:
 *
 *   node dist/settings/renderVariables.js      (npm run docs:settings)
 *
 * Run from the compiled tree; the checkout is two folders up.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderVariables, withVariablesBlock } from './variables.js';

const doc = resolve(fileURLToPath(new URL('../..', import.meta.url)), 'docs', 'configuration.md');
const before = readFileSync(doc, 'utf8');
const after = withVariablesBlock(before, renderVariables());
if (after !== before) writeFileSync(doc, after);
process.stdout.write(`${after === before ? 'unchanged' : 'wrote'} ${doc}\n`);
