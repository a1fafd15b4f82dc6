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
  /** SHA-256 of the claim key of the browser that may link wallets (or of a hosted check's return key). */
  claim_key_hash: string | null;
}

export type NewSession = Pick<SessionRow, 'id' | 'poll_secret_hash' | 'kind' | 'expires_at'> &
  Partial<Pick<SessionRow, 'merchant_account_id' | 'operator_account_id' | 'client_id' | 'context' | 'product_name' | 'issue_refresh_token'>>;

export class SessionsRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { session: NewSession }, trx?: Knex.Transaction): Promise<SessionRow> {
    const [row] = await (trx ?? this.db)<SessionRow>('sessions').insert(input.session).returning('*');
    return row;
  }

  async findById(input: { id: string; forUpdate?: boolean }, trx?: Knex.Transaction): Promise<SessionRow | undefined> {
    const q = (trx ?? this.db)<SessionRow>('sessions').where({ id: input.id }).first();
    return input.forUpdate && trx ? q.forUpdate() : q;
  }

  /**
   * verified → consumed, only if still verified. Concurrent callers serialise on the row lock; after the first
   * commits, the others re-check the WHERE clause, find `consumed` and get undefined: the credential is delivered exactly once.
   */
  async consumeIfVerified(input: { id: string; at: Date }, trx: Knex.Transaction): Promise<SessionRow | undefined> {
    const [row] = await trx<SessionRow>('sessions')
      .where({ id: input.id, status: 'verified' })
      .update({ status: 'consumed', consumed_at: input.at })
      .returning('*');
    return row;
  }

  /** pending → expired once the TTL has elapsed (idempotent). */
  async expireIfDue(input: { id: string; now: Date }, trx?: Knex.Transaction): Promise<SessionRow | undefined> {
    const [row] = await (trx ?? this.db)<SessionRow>('sessions')
      .where({ id: input.id, status: 'pending' })
      .where('expires_at', '<=', input.now)
      .update({ status: 'expired' })
      .returning('*');
    return row;
  }

  async overduePendingIds(input: { now: Date; limit: number }): Promise<string[]> {
    const rows = await this.db('sessions')
      .select('id')
      .where({ status: 'pending' })
      .whereNotNull('merchant_account_id')
      .where('expires_at', '<=', input.now)
      .orderBy('expires_at', 'asc')
      .limit(input.limit);
    return rows.map((r: { id: string }) => r.id);
  }

  /** pending → verified | failed | flagged, only from pending and before expiry. */
  async completeIfPending(
    input: { id: string; status: 'verified' | 'failed' | 'flagged'; at: Date; operatorAccountId: string | null; claimKeyHash?: string },
    trx: Knex.Transaction,
  ): Promise<SessionRow | undefined> {
    const [row] = await trx<SessionRow>('sessions')
      .where({ id: input.id, status: 'pending' })
      .where('expires_at', '>', input.at)
      .update({
        status: input.status,
        completed_at: input.at,
        operator_account_id: input.operatorAccountId,
        ...(input.claimKeyHash ? { claim_key_hash: input.claimKeyHash } : {}),
      })
      .returning('*');
    return row;
  }

  async bindOperator(input: { id: string; operatorAccountId: string }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)<SessionRow>('sessions').where({ id: input.id }).update({ operator_account_id: input.operatorAccountId });
  }

  /** The hosted check's reference, and the hash of the return key that binds the browser coming back from it. */
  async setKycReference(input: { id: string; provider: string; reference: string; returnKeyHash: string }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)('sessions')
      .where({ id: input.id })
      .update({ kyc_provider: input.provider, kyc_reference: input.reference, claim_key_hash: input.returnKeyHash });
  }

  /** Replaces the claim key hash only if it is still `from`: a return key is redeemed at most once. */
  async swapClaimKeyHash(input: { id: string; from: string; to: string }, trx?: Knex.Transaction): Promise<boolean> {
    const updated = await (trx ?? this.db)('sessions').where({ id: input.id, claim_key_hash: input.from }).update({ claim_key_hash: input.to });
    return updated === 1;
  }

  async findByKycReference(input: { provider: string; reference: string; forUpdate?: boolean }, trx?: Knex.Transaction): Promise<SessionRow | undefined> {
    const q = (trx ?? this.db)<SessionRow>('sessions').where({ kyc_provider: input.provider, kyc_reference: input.reference }).first();
    return input.forUpdate && trx ? q.forUpdate() : q;
  }
}
