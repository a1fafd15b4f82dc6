// Liveness, readiness and metrics. Readiness checks each dependency with a bounded wait and names what failed.
import { Router } from 'express';
import type { Deps } from '../deps';

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

export function healthRouter(deps: Deps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const timeout = deps.config.dependencyTimeoutMs;
    const checks: Record<string, 'ok' | 'failed'> = {};
    await Promise.all([
      within(timeout, deps.db.raw('select 1')).then(() => (checks.database = 'ok'), () => (checks.database = 'failed')),
      deps.redis
        ? within(timeout, deps.redis.ping()).then(() => (checks.redis = 'ok'), () => (checks.redis = 'failed'))
        : Promise.resolve(),
    ]);
    const failed = Object.entries(checks).filter(([, v]) => v === 'failed').map(([k]) => k);
    // Without the database nothing works: 503 takes the instance out of rotation. Without Redis the instance
    // still serves (per-instance limits, durable quota; DESIGN.md §7). By default readiness still fails (503
    // naming redis) so the outage is visible to the load balancer; READINESS_REQUIRES_REDIS=false reports
    // 200 `degraded` instead, so one Redis outage does not drain every instance at once.
    const redisFatal = checks.redis === 'failed' && deps.config.readinessRequiresRedis;
    const status = checks.database === 'failed' || redisFatal ? 'unavailable' : failed.length ? 'degraded' : 'ready';
    res.status(status === 'unavailable' ? 503 : 200).json({ status, checks, failed });
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', deps.metrics.contentType);
    res.send(await deps.metrics.metrics());
  });
  return router;
}
