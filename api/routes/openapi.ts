import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { notFound } from '../../shared/errors.js';
import { openApiDocument } from '../openapi/document.js';
import type { Routes } from '../router.js';

const swaggerUiDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const here = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'openapi');

/** The files the docs page loads, all from this server: Swagger UI from node_modules and our initializer. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui.css': { file: path.join(swaggerUiDir, 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
  'index.css': { file: path.join(swaggerUiDir, 'index.css'), type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: path.join(swaggerUiDir, 'swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' },
  'favicon-32x32.png': { file: path.join(swaggerUiDir, 'favicon-32x32.png'), type: 'image/png' },
  'docs-init.js': { file: path.join(here, 'docs-init.js'), type: 'text/javascript; charset=utf-8' },
};
const loaded = new Map<string, Buffer>();

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>edgehub API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="stylesheet" href="/docs/index.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/docs-init.js"></script>
</body>
</html>
`;

/** `/openapi.json` (the OpenAPI 3.1 document, api/openapi) and `/docs` (Swagger UI over it). No authentication. */
export default function routes({ open }: Routes) {
  open.get('/openapi.json', (ctx) => {
    ctx.body = openApiDocument();
  });
  open.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });
  open.get('/docs/:file', (ctx) => {
    const asset = Object.hasOwn(ASSETS, ctx.params.file) ? ASSETS[ctx.params.file] : undefined;
    if (!asset) throw notFound(`docs asset '${ctx.params.file}'`);
    let content = loaded.get(asset.file);
    if (!content) loaded.set(asset.file, (content = readFileSync(asset.file)));
    ctx.type = asset.type;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = content;
  });
}
