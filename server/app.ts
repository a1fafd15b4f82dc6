// createApp(deps): parsers, routers, 404 and the one error handler. Never listens (tests import it).
import express, { type Express } from 'express';
import helmet from 'helmet';
import { Counter } from 'prom-client';
import type { Deps } from './deps';
import './http/types';
import { requestContext } from './http/requestContext';
import { errorHandler, notFound } from './http/errorHandler';
import { healthRouter } from './routes/health';
import { mountRawRoutes, mountRoutes } from './routes';

export function createApp(deps: Deps): Express {
  const app = express();
  app.set('trust proxy', deps.config.trustProxy);
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use(requestContext(deps.logger));
  app.use(helmet());
  const requests =
    (deps.metrics.getSingleMetric('kya_http_requests_total') as Counter<'route' | 'status'> | undefined) ??
    new Counter({ name: 'kya_http_requests_total', help: 'HTTP responses by route and status', labelNames: ['route', 'status'], registers: [deps.metrics] });
  app.use((req, res, next) => {
    res.on('finish', () => requests.inc({ route: req.route ? `${req.baseUrl}${req.route.path}` : 'unmatched', status: String(res.statusCode) }));
    next();
  });

  app.use(healthRouter(deps));
  mountRawRoutes(app, deps);
  app.use(express.json({ limit: deps.config.bodyLimit }));
  mountRoutes(app, deps);

  app.use(notFound);
  app.use(errorHandler);
  return app;
}
