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
}
