// knex access to `usage_monthly`: the durable count of metered (assess + session) calls per account and month,
// kept as a few shard rows per (account, month) whose sum is the count.
import type { Knex } from 'knex';

/** Shard rows per (account, month): enough to spread concurrent batches from a few instances. */
export const USAGE_SHARDS = 4;

export interface DurableCount {
  count: number;
  /**
   * The PostgreSQL snapshot the count was read in (`xmin:xmax:xip,…`): which committed transactions the count
   * includes, so increments committed after it can be told apart.
   */
  snapshot: string;
}

export class UsageRepository {
  constructor(private readonly db: Knex) {}

  async get(input: { accountId: string; period: string }): Promise<number> {
    return (await this.durable(input)).count;
  }

  /** The count and, in the same statement, the snapshot it was read in. */
  async durable(input: { accountId: string; period: string }): Promise<DurableCount> {
    const { rows } = await this.db.raw<{ rows: Array<{ count: string; snapshot: string }> }>(
      'select coalesce(sum(count), 0)::bigint as count, pg_current_snapshot()::text as snapshot from usage_monthly where account_id = ? and period = ?',
      [input.accountId, input.period],
    );
    return { count: Number(rows[0].count), snapshot: rows[0].snapshot };
  }
}
