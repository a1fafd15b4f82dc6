// knex access to `sessions` (verification sessions). The poll secret is stored only as a hash.
import type { Knex } from 'knex';

export type SessionStatus = 'pending' | 'verified' | 'consumed' | 'expired' | 'failed' | 'flagged';
export type SessionKind = 'merchant' | 'public' | 'self';

export interface SessionRow {
  id: string;
  poll_secret_hash: string;
  kind: SessionKind;
  merchant_account_id: string | null;
  operator_account_id: string | null;
  client_id: string | null;
  context: string | null;
  product_name: string | null;
  status: SessionStatus;
  issue_refresh_token: boolean;
  kyc_provider: string | null;
  kyc_reference: string | null;
  created_at: Date;
  expires_at: Date;
  completed_at: Date | null;
  consumed_at: Date | null;
}

export type NewSession = Pick<SessionRow, 'id' | 'poll_secret_hash' | 'kind' | 'expires_at'> &
  Partial<Pick<SessionRow, 'merchant_account_id' | 'operator_account_id' | 'client_id' | 'context' | 'product_name' | 'issue_refresh_token'>>;

export class SessionsRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { session: NewSession }, trx?: Knex.Transaction): Promise<SessionRow> {
    const [row] = await (trx ?? this.db)('sessions').insert(input.session).returning('*');
    return row;
  }

  async findById(input: { id: string; forUpdate?: boolean }, trx?: Knex.Transaction): Promise<SessionRow | undefined> {
    const q = (trx ?? this.db)('sessions').where({ id: input.id }).first();
    return input.forUpdate && trx ? q.forUpdate() : q;
  }

  /**
   * verified → consumed, only if still verified. Concurrent callers serialise on the row lock; after the first
   * commits, the others re-check the WHERE clause, find `consumed` and get undefined (DESIGN.md §3.2).
   */
  async consumeIfVerified(input: { id: string; at: Date }, trx: Knex.Transaction): Promise<SessionRow | undefined> {
    const [row] = await trx('sessions')
      .where({ id: input.id, status: 'verified' })
      .update({ status: 'consumed', consumed_at: input.at })
      .returning('*');
    return row;
  }

  /** pending → expired once the TTL has elapsed (idempotent). */
  async expireIfDue(input: { id: string; now: Date }, trx?: Knex.Transaction): Promise<SessionRow | undefined> {
    const [row] = await (trx ?? this.db)('sessions')
      .where({ id: input.id, status: 'pending' })
      .where('expires_at', '<=', input.now)
      .update({ status: 'expired' })
      .returning('*');
    return row;
  }

  /** pending → verified | failed | flagged, only from pending and before expiry. */
  async completeIfPending(
    input: { id: string; status: 'verified' | 'failed' | 'flagged'; at: Date; operatorAccountId: string | null },
    trx: Knex.Transaction,
  ): Promise<SessionRow | undefined> {
    const [row] = await trx('sessions')
      .where({ id: input.id, status: 'pending' })
      .where('expires_at', '>', input.at)
      .update({ status: input.status, completed_at: input.at, operator_account_id: input.operatorAccountId })
      .returning('*');
    return row;
  }

  async bindOperator(input: { id: string; operatorAccountId: string }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)('sessions').where({ id: input.id }).update({ operator_account_id: input.operatorAccountId });
  }

  async setKycReference(input: { id: string; provider: string; reference: string }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)('sessions').where({ id: input.id }).update({ kyc_provider: input.provider, kyc_reference: input.reference });
  }

  async findByKycReference(input: { provider: string; reference: string; forUpdate?: boolean }, trx?: Knex.Transaction): Promise<SessionRow | undefined> {
    const q = (trx ?? this.db)('sessions').where({ kyc_provider: input.provider, kyc_reference: input.reference }).first();
    return input.forUpdate && trx ? q.forUpdate() : q;
  }
}
