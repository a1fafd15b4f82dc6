// Liveness, readiness and metrics. What readiness checks is services/readiness.ts; 503 when the instance
// must leave rotation.
import { Router } from 'express';
import type { Deps } from '../deps';

export function healthRouter(deps: Deps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const report = await deps.services.readiness.check();
    res.status(report.status === 'unavailable' ? 503 : 200).json(report);
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', deps.metrics.contentType);
    res.send(await deps.metrics.metrics());
  });
  return router;
}
