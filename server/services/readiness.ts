// Readiness: each dependency is checked with a bounded wait and named when it fails; a dependency whose circuit
// is open fails at once. The probes are handed in by server/deps.ts, so this service never holds a pool itself.
import type { ListFreshness } from '../sanctions/freshness';

export type ReadinessStatus = 'ready' | 'degraded' | 'unavailable';

export interface ReadinessReport {
  status: ReadinessStatus;
  checks: Record<string, 'ok' | 'failed'>;
  failed: string[];
  sanctions: Record<string, ListFreshness>;
}

export interface ReadinessOptions {
  /** Upper bound on each probe (DEPENDENCY_TIMEOUT_MS). */
  timeoutMs: number;
  /** READINESS_REQUIRES_REDIS: whether a Redis outage takes the instance out of rotation. */
  requiresRedis: boolean;
  pingDatabase: () => Promise<unknown>;
  /** null without Redis (embedded mode). */
  pingRedis: (() => Promise<unknown>) | null;
  /** Freshness of every sanctions list, read at the time of the check. */
  sanctionsLists: () => ListFreshness[];
}

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<T>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export class ReadinessService {
  constructor(private readonly options: ReadinessOptions) {}

  async check(): Promise<ReadinessReport> {
    const { timeoutMs, pingRedis } = this.options;
    const checks: Record<string, 'ok' | 'failed'> = {};
    await Promise.all([
      within(timeoutMs, this.options.pingDatabase()).then(
        () => (checks.database = 'ok'),
        () => (checks.database = 'failed'),
      ),
      pingRedis
        ? within(timeoutMs, pingRedis()).then(
            () => (checks.redis = 'ok'),
            () => (checks.redis = 'failed'),
          )
        : Promise.resolve(),
    ]);
    const failed = Object.entries(checks)
      .filter(([, v]) => v === 'failed')
      .map(([k]) => k);
    // Each sanctions list: source, entries, as_of and age. One that is missing or older than
    // SANCTIONS_MAX_AGE_HOURS degrades readiness (signer checks fail closed meanwhile) and says why.
    const lists = this.options.sanctionsLists();
    for (const list of lists) if (list.status !== 'ok') failed.push(`sanctions_${list.list}`);
    const sanctions = Object.fromEntries(lists.map((list) => [list.list, list]));
    // Without the database nothing works: unavailable takes the instance out of rotation. Without Redis the
    // instance still serves (per-instance rate limits, quota checked against the durable count). By default
    // readiness still fails (naming redis) so the outage is visible to the load balancer;
    // READINESS_REQUIRES_REDIS=false reports `degraded` instead, so one Redis outage does not drain every instance.
    const redisFatal = checks.redis === 'failed' && this.options.requiresRedis;
    const status: ReadinessStatus = checks.database === 'failed' || redisFatal ? 'unavailable' : failed.length ? 'degraded' : 'ready';
    return { status, checks, failed, sanctions };
  }
}
