/**
 * The web console: `GET /console` and its files, all served by this process (no
 * CDN: it works offline). The page is Preact + htm modules (no build step) and uPlot for the sparklines, loaded
 * through an import map; everything it shows comes from the public and operator APIs with the credential the
 * person signs in with. `GET /` points people to it and to the API reference.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { notFound } from '../../shared/errors.js';
import type { Routes } from '../router.js';
import { setting } from '../../shared/settings.js';

const require = createRequire(import.meta.url);
const here = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'console');
/** A file of an installed package (found from its entry point: not every package exports its package.json). */
function pkg(name: string, file: string): string {
  let dir = path.dirname(require.resolve(name));
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, file);
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** Every file the console may load, by its one-segment name: nothing else is served (no paths, no traversal). */
const FILES: Record<string, { file: string; type: string }> = {
  'preact.mjs': { file: pkg('preact', 'dist/preact.mjs'), type: JS },
  'hooks.mjs': { file: pkg('preact', 'hooks/dist/hooks.mjs'), type: JS },
  'htm.mjs': { file: pkg('htm', 'dist/htm.mjs'), type: JS },
  'uplot.mjs': { file: pkg('uplot', 'dist/uPlot.esm.js'), type: JS },
  'uplot.css': { file: pkg('uplot', 'dist/uPlot.min.css'), type: CSS },
};
for (const name of readdirSync(here)) {
  if (/^[a-z][a-z0-9-]*\.(js|css)$/.test(name)) FILES[name] = { file: path.join(here, name), type: name.endsWith('.css') ? CSS : JS };
}

const IMPORT_MAP = JSON.stringify({
  imports: { preact: '/console/preact.mjs', 'preact/hooks': '/console/hooks.mjs', htm: '/console/htm.mjs', uplot: '/console/uplot.mjs' },
});
const IMPORT_MAP_HASH = createHash('sha256').update(IMPORT_MAP).digest('base64');

/** Only this page's own files; the one inline script is the import map, allowed by its hash. */
const CSP = [
  "default-src 'self'",
  `script-src 'self' 'sha256-${IMPORT_MAP_HASH}'`,
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="color-scheme" content="light dark">
  <title>edgehub console</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/console/uplot.css">
  <link rel="stylesheet" href="/console/console.css">
  <script type="importmap">${IMPORT_MAP}</script>
  <script type="module" src="/console/app.js"></script>
</head>
<body>
  <div id="app"><p class="loading">Loading the console…</p></div>
  <noscript>The console needs JavaScript. The API reference is at <a href="/docs">/docs</a>.</noscript>
</body>
</html>
`;

const loaded = new Map<string, Buffer>();

export default function routes({ open }: Routes) {
  open.get('/', (ctx) => {
    // a browser goes to the console; anything else learns where things are
    if (ctx.accepts('html', 'json') === 'html') return ctx.redirect('/console');
    ctx.body = { name: 'edgehub', console: '/console', docs: '/docs', openapi: '/openapi.json', health: '/healthz' };
  });
  open.get('/console', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', CSP);
    ctx.body = PAGE;
  });
  open.get('/console/:file', (ctx) => {
    const asset = Object.hasOwn(FILES, ctx.params.file) ? FILES[ctx.params.file] : undefined;
    if (!asset) throw notFound(`console file '${ctx.params.file}'`);
    let content = loaded.get(asset.file);
    if (!content || setting('NODE_ENV') === 'development') loaded.set(asset.file, (content = readFileSync(asset.file)));
    ctx.type = asset.type;
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('Content-Security-Policy', CSP);
    ctx.body = content;
  });
}
