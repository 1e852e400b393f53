/**
 * The API reference page: Swagger UI, served from the `swagger-ui-dist` package this API depends on
 * (no CDN, works offline), over the OpenAPI document. A table of contents by tag, each operation's
 * parameters, body and answers, with example values drawn from the schemas.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The files the page loads, by the name it loads them under, with their content types. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'init.js': 'text/javascript; charset=utf-8',
};

/** What the page's own script and styles may do: only this origin, no inline script. */
export const REFERENCE_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'";

/** The HTML of the page at `base` (where its assets are served, under `base/`). */
export function referencePage(base: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>durable-mcp API reference</title>
<link rel="icon" href="data:,"><link rel="stylesheet" href="${base}/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="${base}/swagger-ui-bundle.js"></script>
<script src="${base}/init.js"></script>
</body></html>
`;
}

/** The script that starts Swagger UI on the document at `documentUrl`. */
function initScript(documentUrl: string): string {
  return `window.ui = SwaggerUIBundle(${JSON.stringify({
    url: documentUrl,
    dom_id: '#ui',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    filter: true,
  })});\n`;
}

const cache = new Map<string, string>();

/**
 * One asset of the page, with its content type; undefined for any other name. The package's files
 * are read once and kept.
 */
export async function referenceAsset(
  name: string,
  documentUrl: string,
): Promise<{ body: string; type: string } | undefined> {
  const type = ASSETS[name];
  if (type === undefined) return undefined;
  if (name === 'init.js') return { body: initScript(documentUrl), type };
  let body = cache.get(name);
  if (body === undefined) {
    const root = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    body = await readFile(join(root, name), 'utf8');
    cache.set(name, body);
  }
  return { body, type };
}
