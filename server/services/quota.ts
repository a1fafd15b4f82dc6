// Monthly quota on metered calls (assess + session creation). The live counter is one atomic Redis (or
// in-process) increment per request; the durable truth is `usage_monthly`, where every counted call is
// committed (group commit) before its response is sent. When the live counter is missing (new month, Redis
// restart, FLUSHALL) it is rebuilt from the durable count, exactly (see stores/quotaCounters). Failed requests
// (status ≥ 400) are refunded and never made durable. While Redis is out (its circuit open), calls are checked
// against the durable count and the live counter is rebuilt when Redis is back.
import crypto from 'node:crypto';
import { isInfrastructureError } from '../circuit';
import type { Logger } from '../logger';
import type { QuotaCounters } from '../stores/quotaCounters';
import type { UsageRepository } from '../repositories/usage';
import type { CountedCall, MeteredRecorder } from './meteredRecords';

export interface QuotaState {
  limit: number;
  used: number;
  /** First day of the next UTC month, YYYY-MM-DD. */
  reset: string;
  exceeded: boolean;
}

export interface Reservation {
  state: QuotaState;
  /**
   * Settles the reservation once the response status is known: below 400 the call is counted durably (resolves
   * once committed; rejects if the commit failed, and the live counter is then rebuilt), otherwise it is
   * refunded. Idempotent.
   */
  settle(status: number): Promise<void>;
}

export function periodOf(now: Date): string {
  return now.toISOString().slice(0, 7);
}

export function nextMonthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

const counterKey = (accountId: string, period: string) => `quota:${accountId}:${period}`;

export interface QuotaServiceOptions {
  counters: QuotaCounters;
  usage: UsageRepository;
  recorder: MeteredRecorder;
  logger: Logger;
  now: () => Date;
}

export class QuotaService {
  /** Live counters that missed increments while the store was unreachable; rebuilt on next use. */
  private readonly stale = new Set<string>();
  private storeDown = false;

  private readonly counters: QuotaCounters;
  private readonly usage: UsageRepository;
  private readonly recorder: MeteredRecorder;
  private readonly logger: Logger;
  private readonly now: () => Date;

  constructor(options: QuotaServiceOptions) {
    this.counters = options.counters;
    this.usage = options.usage;
    this.recorder = options.recorder;
    this.logger = options.logger;
    this.now = options.now;
    this.recorder.onCommitted((xid, calls) => this.reconcile(xid, calls));
  }

  /** Counts one call against `limit`; the returned reservation must be settled with the final status. */
  async reserve(accountId: string, limit: number): Promise<Reservation> {
    const now = this.now();
    const period = periodOf(now);
    const key = counterKey(accountId, period);
    const reset = nextMonthStart(now);
    let used: number;
    let gen: string | null = null;
    try {
      if (this.stale.has(key)) {
        // Calls counted durably during an outage are not in the live counter: rebuild it from the database.
        await this.counters.drop(key);
        this.stale.delete(key);
      }
      const hit = (await this.counters.increment(key)) ?? (await this.rebuild(accountId, period, key, reset, now));
      used = hit.used;
      gen = hit.gen;
      if (this.storeDown) this.logger.info('quota store available again');
      this.storeDown = false;
    } catch (err) {
      if (!isInfrastructureError(err)) throw err;
      // Redis unavailable: the durable count bounds usage (per instance, without this call's concurrent peers).
      if (!this.storeDown) this.logger.warn({ err: (err as Error).message }, 'quota store unavailable; counting from the database');
      this.storeDown = true;
      this.stale.add(key);
      used = (await this.usage.get({ accountId, period })) + 1;
    }
    const exceeded = used > limit;
    const state: QuotaState = { limit, used: Math.min(used, limit), reset: reset.toISOString().slice(0, 10), exceeded };
    let settled: Promise<void> | null = null;
    const refund = () => {
      if (gen !== null) this.counters.refund(key, gen).catch(() => undefined);
    };
    const settle = (status: number): Promise<void> => {
      if (settled) return settled;
      if (status >= 400 || exceeded) {
        refund();
        settled = Promise.resolve();
      } else {
        settled = this.recorder.count({ accountId, period, gen }).then(
          () => undefined,
          (err) => {
            // Not refunded: a statement that timed out on a hung server may still commit when it resumes. The
            // live counter is rebuilt from the durable count instead, which is right either way.
            this.stale.add(key);
            throw err;
          },
        );
      }
      return settled;
    };
    if (exceeded) void settle(429);
    return { state, settle };
  }

  /** Resolves once every count submitted so far is committed. */
  flush(): Promise<void> {
    return this.recorder.drain();
  }

  /** Seeds the live counter from the durable count (first writer wins), then counts this call. */
  private async rebuild(accountId: string, period: string, key: string, reset: Date, now: Date) {
    const { count, snapshot } = await this.usage.durable({ accountId, period });
    const ttlMs = reset.getTime() - now.getTime() + 7 * 86400_000;
    return this.counters.rebuild(key, count, snapshot, crypto.randomBytes(6).toString('hex'), ttlMs);
  }

  /** After a batch commit: one reconcile per counter, adding calls whose increment a rebuild wiped. */
  private reconcile(xid: string, calls: CountedCall[]) {
    const byKey = new Map<string, Map<string, number>>();
    for (const call of calls) {
      if (call.gen === null) continue; // counted without the live counter; that counter is already stale
      const key = counterKey(call.accountId, call.period);
      const gens = byKey.get(key) ?? new Map<string, number>();
      gens.set(call.gen, (gens.get(call.gen) ?? 0) + 1);
      byKey.set(key, gens);
    }
    for (const [key, gens] of byKey) {
      this.counters.reconcile(key, xid, gens).catch(() => this.stale.add(key));
    }
  }
}
