// knex access to `usage_monthly`: the durable count of metered (assess + session) calls per account and month.
import type { Knex } from 'knex';

export class UsageRepository {
  constructor(private readonly db: Knex) {}

  /** Adds counts in one statement (upsert-increment); used by the write-behind flusher. */
  async addCounts(input: { entries: Array<{ accountId: string; period: string; count: number }> }): Promise<void> {
    if (input.entries.length === 0) return;
    await this.db('usage_monthly')
      .insert(input.entries.map((e) => ({ account_id: e.accountId, period: e.period, count: e.count })))
      .onConflict(['account_id', 'period'])
      .merge({ count: this.db.raw('usage_monthly.count + excluded.count'), updated_at: this.db.fn.now() });
  }

  async get(input: { accountId: string; period: string }): Promise<number> {
    const row = await this.db('usage_monthly').where({ account_id: input.accountId, period: input.period }).first('count');
    return row ? Number(row.count) : 0;
  }
}
