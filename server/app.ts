// createApp(deps): parsers, routers, 404 and the one error handler. Never listens (tests import it).
import express, { type Express } from 'express';
import type { Deps } from './deps';
import './http/types';
import { requestContext } from './http/requestContext';
import { counter } from './http/metrics';
import { staticSecurityHeaders } from './http/securityHeaders';
import { errorHandler, notFound } from './http/errorHandler';
import { rejectNulInBody, rejectNulInUrl } from './http/inputGuard';
import { authFailureGuard } from './http/authFailures';
import { healthRouter } from './routes/health';
import { docsRouter } from './routes/docs';
import { mountRawRoutes, mountRoutes } from './routes';
import { assessRouter } from './routes/assess';

export function createApp(deps: Deps): Express {
  const app = express();
  app.set('trust proxy', deps.config.trustProxy);
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use(requestContext(deps.logger));
  app.use(staticSecurityHeaders());
  const requests = counter(deps.metrics, { name: 'kya_http_requests_total', help: 'HTTP responses by route and status', labelNames: ['route', 'status'] });
  app.use((req, res, next) => {
    res.on('finish', () =>
      requests.inc({ route: req.route ? `${req.baseUrl}${(req.route as { path: string }).path}` : 'unmatched', status: String(res.statusCode) }),
    );
    next();
  });

  app.use(healthRouter(deps));
  app.use(docsRouter(deps));
  app.use(rejectNulInUrl);
  app.use(authFailureGuard(deps.limiters, deps.config.authFailuresPerMinute));
  const jsonBody = [express.json({ limit: deps.config.bodyLimit }), rejectNulInBody];
  // The hot path first, parsing its own body: an assess call walks no other router's layers.
  app.use(assessRouter(deps, jsonBody));
  mountRawRoutes(app, deps);
  app.use(jsonBody);
  mountRoutes(app, deps);

  app.use(notFound);
  app.use(errorHandler);
  return app;
}
