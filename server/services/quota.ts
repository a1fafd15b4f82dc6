// Monthly quota on metered calls (assess + session creation). The live counter is one atomic Redis (or
// in-process) increment per request; the durable truth is `usage_monthly`, written behind the response in
// batches. When the live counter is missing (new month, Redis restart, FLUSHALL) it is rebuilt from the
// durable count, so no count is lost. Failed requests (status ≥ 400) are refunded and never made durable.
import type { Logger } from '../logger';
import type { KeyValueStore } from '../stores/kv';
import type { UsageRepository } from '../repositories/usage';

export interface QuotaState {
  limit: number;
  used: number;
  /** First day of the next UTC month, YYYY-MM-DD. */
  reset: string;
  exceeded: boolean;
}

export interface Reservation {
  state: QuotaState;
  /** Settles the reservation once the response status is known. */
  settle(status: number): void;
}

export function periodOf(now: Date): string {
  return now.toISOString().slice(0, 7);
}

export function nextMonthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

export class QuotaService {
  private pending = new Map<string, number>(); // `${accountId}|${period}` → count not yet durable
  /** Live counters that missed increments while the store was unreachable; rebuilt on next use. */
  private readonly stale = new Set<string>();
  private storeDown = false;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly kv: KeyValueStore,
    private readonly usage: UsageRepository,
    private readonly logger: Logger,
    private readonly now: () => Date,
    private readonly flushIntervalMs = 1000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** Counts one call against `limit`; the returned reservation must be settled with the final status. */
  async reserve(accountId: string, limit: number): Promise<Reservation> {
    const now = this.now();
    const period = periodOf(now);
    const key = `quota:${accountId}:${period}`;
    const reset = nextMonthStart(now);
    const ttlMs = reset.getTime() - now.getTime() + 7 * 86400_000;
    let used: number;
    let live = true;
    try {
      if (this.stale.has(key)) {
        // Calls counted durably during an outage are not in the live counter: rebuild it from the database.
        await this.flush();
        await this.kv.del(key);
        this.stale.delete(key);
      }
      used = (await this.kv.incrIfExists(key)) ?? (await this.rebuild(accountId, period, key, ttlMs));
      if (this.storeDown) this.logger.info('quota store available again');
      this.storeDown = false;
    } catch (err) {
      // Redis unavailable: the durable count (plus what this instance has not flushed) still bounds usage.
      if (!this.storeDown) this.logger.warn({ err: (err as Error).message }, 'quota store unavailable; counting from the database');
      this.storeDown = true;
      live = false;
      this.stale.add(key);
      used = (await this.durable(accountId, period)) + 1;
    }
    const exceeded = used > limit;
    const state: QuotaState = { limit, used: Math.min(used, limit), reset: reset.toISOString().slice(0, 10), exceeded };
    let settled = false;
    const settle = (status: number) => {
      if (settled) return;
      settled = true;
      if (status < 400 && !exceeded) {
        this.record(accountId, period);
      } else if (live) {
        // Refund only an existing counter: re-creating a flushed key at -1 would hide the durable count.
        this.kv.incrIfExists(key, -1).catch(() => undefined);
      }
    };
    if (exceeded) settle(429);
    return { state, settle };
  }

  /** Durable count for a month, including increments this instance has not flushed yet. */
  async durable(accountId: string, period: string): Promise<number> {
    return (await this.usage.get({ accountId, period })) + (this.pending.get(`${accountId}|${period}`) ?? 0);
  }

  /** Writes pending counts to usage_monthly. Concurrent callers share one write. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      const entries = [...batch].map(([k, count]) => {
        const [accountId, period] = k.split('|');
        return { accountId, period, count };
      });
      try {
        await this.usage.addCounts({ entries });
      } catch (err) {
        // Keep the counts for the next attempt: usage must never be dropped.
        for (const [k, c] of batch) this.pending.set(k, (this.pending.get(k) ?? 0) + c);
        this.logger.warn({ err: (err as Error).message }, 'usage flush failed; will retry');
      }
    });
    return this.flushing;
  }

  private record(accountId: string, period: string) {
    const k = `${accountId}|${period}`;
    this.pending.set(k, (this.pending.get(k) ?? 0) + 1);
  }

  /** Seeds the live counter from the durable count (first writer wins), then counts this call. */
  private async rebuild(accountId: string, period: string, key: string, ttlMs: number): Promise<number> {
    await this.flush();
    const base = await this.durable(accountId, period);
    await this.kv.set(key, String(base), ttlMs, { nx: true });
    return this.kv.incr(key, ttlMs);
  }
}
