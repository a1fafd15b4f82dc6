// knex access for the merchant dashboard: its sign-in sessions and one-time links (stored as hashes), and the
// read models of the Overview and Activity pages over assess_audit and sessions.
import type { Knex } from 'knex';
import type { AuditRow } from './audit';
import type { CredentialRow } from './credentials';

export interface ActivityFilter {
  accountId: string;
  decision?: 'allow' | 'deny';
  reason?: string;
  identityKind?: 'wallet' | 'operator_token';
  from?: Date;
  to?: Date;
  /** Rows with an id below this (newest first). */
  before?: number;
  limit: number;
}

export class DashboardRepository {
  constructor(private readonly db: Knex) {}

  async insertSession(input: { idHash: string; accountId: string; at: Date }): Promise<void> {
    await this.db('dashboard_sessions').insert({ id_hash: input.idHash, account_id: input.accountId, created_at: input.at, last_seen_at: input.at });
  }

  /** The session if it was seen after `idleSince`; its last_seen_at moves to `now` (sliding idle timeout). */
  async touchSession(input: { idHash: string; idleSince: Date; now: Date }): Promise<{ account_id: string } | undefined> {
    const [row] = await this.db('dashboard_sessions')
      .where({ id_hash: input.idHash })
      .where('last_seen_at', '>', input.idleSince)
      .update({ last_seen_at: input.now })
      .returning<{ account_id: string }[]>(['account_id']);
    return row;
  }

  async deleteSession(input: { idHash: string }): Promise<void> {
    await this.db('dashboard_sessions').where({ id_hash: input.idHash }).delete();
  }

  async deleteIdleSessions(input: { idleSince: Date }): Promise<number> {
    return this.db('dashboard_sessions').where('last_seen_at', '<=', input.idleSince).delete();
  }

  async setFlash(input: { idHash: string; payload: string; expiresAt: Date }): Promise<void> {
    await this.db('dashboard_sessions').where({ id_hash: input.idHash }).update({ flash_encrypted: input.payload, flash_expires_at: input.expiresAt });
  }

  /** The session's unexpired flash, cleared in the same statement (a second read, even a concurrent one, gets none). */
  async takeFlash(input: { idHash: string; now: Date }): Promise<string | null> {
    const result = await this.db.raw<{ rows: Array<{ flash: string | null; expires_at: Date | null }> }>(
      `with old as (select id_hash, flash_encrypted, flash_expires_at from dashboard_sessions where id_hash = ? and flash_encrypted is not null for update)
       update dashboard_sessions d set flash_encrypted = null, flash_expires_at = null from old where d.id_hash = old.id_hash
       returning old.flash_encrypted as flash, old.flash_expires_at as expires_at`,
      [input.idHash],
    );
    const row = result.rows[0];
    return row?.flash && row.expires_at && row.expires_at.getTime() > input.now.getTime() ? row.flash : null;
  }

  async insertLoginLink(input: { tokenHash: string; accountId: string; expiresAt: Date }): Promise<void> {
    await this.db('dashboard_login_links').insert({ token_hash: input.tokenHash, account_id: input.accountId, expires_at: input.expiresAt });
  }

  /** Marks an unused, unexpired link used (once, even under concurrent clicks) and returns its account. */
  async useLoginLink(input: { tokenHash: string; now: Date }): Promise<{ account_id: string } | undefined> {
    const [row] = await this.db('dashboard_login_links')
      .where({ token_hash: input.tokenHash })
      .whereNull('used_at')
      .where('expires_at', '>', input.now)
      .update({ used_at: input.now })
      .returning<{ account_id: string }[]>(['account_id']);
    return row;
  }

  // ---- read models ----

  /**
   * Assess calls since `since`, grouped by UTC day, decision and reason list: one index range scan that both
   * the daily chart and the decision breakdown are computed from.
   */
  async auditSummary(input: { accountId: string; since: Date }): Promise<Array<{ day: string; decision: string; reasons: string[]; n: number }>> {
    const result = await this.db.raw<{ rows: Array<{ day: string; decision: string; reasons: string[]; n: string }> }>(
      `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, decision, reasons, count(*) as n
         from assess_audit
        where account_id = ? and created_at >= ?
        group by 1, 2, 3`,
      [input.accountId, input.since],
    );
    return result.rows.map((r) => ({ day: r.day, decision: r.decision, reasons: r.reasons, n: Number(r.n) }));
  }

  async sessionOutcomes(input: { accountId: string; since: Date }): Promise<Array<{ status: string; n: number }>> {
    const rows = await this.db('sessions')
      .select('status')
      .count({ n: '*' })
      .where({ merchant_account_id: input.accountId })
      .where('created_at', '>=', input.since)
      .groupBy('status');
    return (rows as Array<{ status: string; n: string }>).map((r) => ({ status: String(r.status), n: Number(r.n) }));
  }

  async activity(f: ActivityFilter): Promise<AuditRow[]> {
    const q = this.db('assess_audit').where({ account_id: f.accountId }).orderBy('id', 'desc').limit(f.limit);
    if (f.decision) q.where({ decision: f.decision });
    if (f.identityKind) q.where({ identity_kind: f.identityKind });
    if (f.reason) q.whereRaw('? = any(reasons)', [f.reason]);
    if (f.from) q.where('created_at', '>=', f.from);
    if (f.to) q.where('created_at', '<', f.to);
    if (f.before) q.where('id', '<', f.before);
    return q;
  }

  /**
   * Operator credentials attributable to the merchant, newest first: those of the account itself (minted with
   * its API key, or by a session it started for itself) and those its verification sessions delivered to
   * other operators. Each branch is an index range scan bounded by the limit.
   */
  async credentials(input: { accountId: string; limit: number }): Promise<CredentialRow[]> {
    const result = await this.db.raw<{ rows: CredentialRow[] }>(
      `select * from (
         (select c.* from credentials c where c.account_id = ? order by c.created_at desc limit ?)
         union all
         (select c.* from sessions s join credentials c on c.session_id = s.id
           where s.merchant_account_id = ? and c.account_id <> ? order by c.created_at desc limit ?)
       ) found order by created_at desc, id limit ?`,
      [input.accountId, input.limit, input.accountId, input.accountId, input.limit, input.limit],
    );
    return result.rows;
  }

  async sessions(input: { accountId: string; limit: number }) {
    return (await this.db('sessions')
      .select('id', 'status', 'context', 'created_at', 'completed_at')
      .where({ merchant_account_id: input.accountId })
      .orderBy('created_at', 'desc')
      .limit(input.limit)) as { id: string; status: string; context: string | null; created_at: Date; completed_at: Date | null }[];
  }
}
