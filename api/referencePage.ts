/**
 * The rendered reference: a small page that reads the OpenAPI document and lists every operation
 * with its parameters, body and answers. Rendered in the browser by the page's own script, so it
 * needs no CDN and works offline; all text is inserted as text, never as HTML.
 */
export function referencePage(documentUrl: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>durable-mcp API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h2{border-bottom:1px solid #ddd;margin-top:2rem}.op{margin:1rem 0;padding:.5rem 1rem;border-left:4px solid #36c;background:#f7f9fc}
.m{font-weight:bold;text-transform:uppercase;margin-right:.5rem}code,pre{font-family:ui-monospace,monospace;font-size:13px}
pre{background:#fff;border:1px solid #e3e3e3;padding:.5rem;overflow:auto;max-height:20rem}
</style></head>
<body><h1>durable-mcp API reference</h1><p>From <a href="${documentUrl}">${documentUrl}</a> (OpenAPI 3.1).</p><main id="ops">loading...</main>
<script>
(async () => {
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };
  const main = document.getElementById('ops');
  const doc = await (await fetch(${JSON.stringify(documentUrl)})).json();
  const deref = (s) => (s && s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
  main.textContent = '';
  const byTag = {};
  for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops)) (byTag[(op.tags || ['other'])[0]] ||= []).push([path, method, op]);
  for (const [tag, list] of Object.entries(byTag)) {
    main.append(el('h2', tag));
    for (const [path, method, op] of list) {
      const box = el('div', undefined, 'op');
      const head = el('div'); head.append(el('span', method, 'm'), el('code', path)); box.append(head);
      if (op.summary) box.append(el('p', op.summary));
      if (op.description) box.append(el('p', op.description));
      const security = op.security || doc.security || [];
      box.append(el('div', security.length === 0 ? 'needs no token' : 'needs: ' + security.map((s) => Object.entries(s).map(([k, v]) => k + (v.length ? ' with scope ' + v.join(', ') : '')).join(' and ')).join(' or ')));
      for (const p of op.parameters || []) box.append(el('div', p.in + ' ' + p.name + (p.required ? ' (required)' : '') + (p.description ? ': ' + p.description : '')));
      const body = op.requestBody && op.requestBody.content['application/json'];
      if (body) { box.append(el('div', 'body:')); box.append(el('pre', JSON.stringify(deref(body.schema), null, 2))); }
      const codes = Object.entries(op.responses || {}).map(([code, r]) => code + ' ' + (r.description || '')).join('\\n');
      box.append(el('pre', codes));
      main.append(box);
    }
  }
  main.append(el('h2', 'schemas'));
  for (const [name, schema] of Object.entries(doc.components.schemas || {})) { main.append(el('h3', name)); main.append(el('pre', JSON.stringify(schema, null, 2))); }
})().catch((err) => { document.getElementById('ops').textContent = 'could not load the document: ' + err; });
</script></body></html>
`;
}
