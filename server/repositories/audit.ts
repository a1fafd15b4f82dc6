// The assess audit trail (`assess_audit`). Rows are buffered in memory and written in batches behind the
// responses (never on a request's critical path); a failed write keeps the rows for the next attempt, and the
// buffer is flushed on shutdown (deps.lifecycle), so a clean stop drops nothing.
import type { Knex } from 'knex';
import type { Logger } from '../logger';

export interface AuditEntry {
  account_id: string;
  request_id: string;
  identity_kind: 'wallet' | 'operator_token';
  /** Normalised address, or the SHA-256 of the token (never the token). */
  identity_value: string;
  decision: 'allow' | 'deny';
  reasons: string[];
  signer_kind: string | null;
  /** `clear`, `sanctioned`, `unavailable`, or null without a signer. */
  signer_sanctions: string | null;
  created_at: Date;
}

export interface AuditRow extends AuditEntry {
  id: number;
}

export class AuditRepository {
  constructor(private readonly db: Knex) {}

  async insertMany(entries: AuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.db('assess_audit').insert(entries);
  }

  async listForAccount(input: { accountId: string; limit?: number }): Promise<AuditRow[]> {
    return this.db('assess_audit').where({ account_id: input.accountId }).orderBy('id', 'asc').limit(input.limit ?? 1000);
  }
}

/** Write-behind buffer in front of AuditRepository. */
export class AuditLog {
  private buffer: AuditEntry[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly repo: AuditRepository,
    private readonly logger: Logger,
    private readonly options: { flushIntervalMs?: number; batchSize?: number; maxBuffered?: number } = {},
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.options.flushIntervalMs ?? 250);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // A few attempts: a clean shutdown must not lose rows to one transient error.
    for (let attempt = 0; attempt < 3 && this.buffer.length > 0; attempt++) await this.flush();
    await this.flushing;
    if (this.buffer.length) this.logger.error({ rows: this.buffer.length }, 'audit rows could not be written before shutdown');
  }

  record(entry: AuditEntry): void {
    this.buffer.push(entry);
    const max = this.options.maxBuffered ?? 100_000;
    if (this.buffer.length > max) {
      // Only reachable during a long database outage; bounded memory beats an OOM that loses everything.
      const dropped = this.buffer.splice(0, this.buffer.length - max);
      this.logger.error({ dropped: dropped.length }, 'audit buffer full during a database outage; oldest rows dropped');
    }
    if (this.buffer.length >= (this.options.batchSize ?? 500)) void this.flush();
  }

  get pending(): number {
    return this.buffer.length;
  }

  /** Writes everything buffered so far; concurrent callers share the queue of writes. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      while (this.buffer.length > 0) {
        const batch = this.buffer.splice(0, this.options.batchSize ?? 500);
        try {
          await this.repo.insertMany(batch);
        } catch (err) {
          this.buffer.unshift(...batch);
          this.logger.warn({ err: (err as Error).message, rows: this.buffer.length }, 'audit write failed; will retry');
          return;
        }
      }
    });
    return this.flushing;
  }
}
