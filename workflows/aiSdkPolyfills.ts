/**
 * The Web-API globals the AI SDK (`ai`) needs at module scope, which the workflow sandbox lacks:
 * `Headers`, the Web Streams classes and `structuredClone`. Installed before any other module of a
 * bundle the plugin builds (see docs/plugin.md); never overwrites a global that exists.
 */
import structuredClonePolyfill from '@ungap/structured-clone';
import { Headers } from 'headers-polyfill';
import * as webStreams from 'web-streams-polyfill';

const g = globalThis as Record<string, unknown>;
if (g.Headers === undefined) g.Headers = Headers;
for (const [name, impl] of Object.entries(webStreams)) if (name !== 'default' && !(name in g)) g[name] = impl;
if (!('structuredClone' in g)) g.structuredClone = structuredClonePolyfill;
