// One statement per group-commit batch: the batch's assess audit rows (one multi-row insert) and its quota
// increments (one upsert into the usage_monthly shards), committed together. Returns the transaction id, which
// tells the live quota counter whether a rebuild's snapshot already included these increments.
import type { Knex } from 'knex';
import type { AuditEntry } from './audit';
import { PreparedStatements } from '../db/prepared';

export interface UsageIncrement {
  accountId: string;
  period: string;
  shard: number;
  count: number;
}

const COMMIT = `
with audit as (
  insert into assess_audit (account_id, request_id, identity_kind, identity_value, decision, reasons, signer_kind, signer_sanctions, created_at)
  select account_id, request_id, identity_kind, identity_value, decision, reasons, signer_kind, signer_sanctions, created_at
  from jsonb_to_recordset(?::jsonb) as r(account_id uuid, request_id text, identity_kind text, identity_value text, decision text,
    reasons text[], signer_kind text, signer_sanctions text, created_at timestamptz)
), usage as (
  insert into usage_monthly (account_id, period, shard, count)
  select account_id, period, shard, count from jsonb_to_recordset(?::jsonb) as u(account_id uuid, period text, shard smallint, count bigint)
  on conflict (account_id, period, shard) do update set count = usage_monthly.count + excluded.count, updated_at = now()
)
select pg_current_xact_id()::text as xid, set_config('synchronous_commit', ?, true) as synchronous_commit`;

export class MeteredRecordsRepository {
  private readonly synchronousCommit: 'on' | 'off';
  /** On PostgreSQL each pooled connection plans the batch statement once, not once per batch. */
  private readonly prepared: PreparedStatements;

  /**
   * `synchronousCommit: false` sets synchronous_commit off for these statements only (transaction-local, so
   * the pooled connection keeps its setting): the commit is visible and survives any app crash at once, and
   * reaches disk within PostgreSQL's WAL writer delay.
   */
  constructor(
    private readonly db: Knex,
    options: { synchronousCommit: boolean } = { synchronousCommit: true },
  ) {
    this.synchronousCommit = options.synchronousCommit ? 'on' : 'off';
    this.prepared = new PreparedStatements(db, 'kya_metered');
  }

  /** Writes both in one autocommit statement; `usage` must hold each (account, period, shard) at most once. */
  async commit(input: { audit: AuditEntry[]; usage: UsageIncrement[] }): Promise<string> {
    const usage = input.usage.map((u) => ({ account_id: u.accountId, period: u.period, shard: u.shard, count: u.count }));
    const params = [JSON.stringify(input.audit), JSON.stringify(usage), this.synchronousCommit];
    const [row] = await this.prepared.query<{ xid: string }>(COMMIT, params);
    return row.xid;
  }
}
