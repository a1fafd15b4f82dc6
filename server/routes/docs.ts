// GET /openapi.json (the API description) and GET /docs (a browsable reference rendered from it by Swagger UI,
// served from the installed swagger-ui-dist package: no CDN, works offline, and fits the default CSP because
// every script is a same-origin file).
import path from 'node:path';
import { Router } from 'express';
import type { Deps } from '../deps';
import { openApiDocument } from '../openapi/document';

const ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png'];

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kya API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// The page's own script is a file too: an inline script would need a CSP exception.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'BaseLayout',
});
`;

export function docsRouter(deps: Deps): Router {
  const router = Router();
  const dist = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  // Built on first request (converting the schemas takes a moment), then served from memory.
  let body: string | null = null;

  router.get('/openapi.json', (_req, res) => {
    body ??= JSON.stringify({ ...openApiDocument(), servers: [{ url: deps.config.publicBaseUrl }] });
    res.type('application/json').send(body);
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT);
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    const file = String(req.params.file);
    if (!ASSETS.includes(file)) return next();
    res.sendFile(path.join(dist, file), { maxAge: '1d' });
  });
  return router;
}
