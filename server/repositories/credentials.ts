// knex access to `credentials` (operator credentials, `opc_…`): hashes and display prefixes only.
import type { Knex } from 'knex';

export interface CredentialRow {
  id: string;
  account_id: string;
  token_hash: string;
  prefix: string;
  label: string | null;
  source: 'api' | 'session' | 'refresh';
  session_id: string | null;
  refresh_token_id: string | null;
  minted_by_refresh_token_id: string | null;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

export type NewCredential = Pick<CredentialRow, 'account_id' | 'token_hash' | 'prefix' | 'source' | 'expires_at'> &
  Partial<Pick<CredentialRow, 'label' | 'session_id' | 'refresh_token_id' | 'minted_by_refresh_token_id'>>;

export class CredentialsRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { credential: NewCredential }, trx?: Knex.Transaction): Promise<CredentialRow> {
    const [row] = await (trx ?? this.db)('credentials').insert(input.credential).returning('*');
    return row;
  }

  async findByHash(input: { tokenHash: string }, trx?: Knex.Transaction): Promise<CredentialRow | undefined> {
    return (trx ?? this.db)('credentials').where({ token_hash: input.tokenHash }).first();
  }

  async findById(input: { id: string }, trx?: Knex.Transaction): Promise<CredentialRow | undefined> {
    return (trx ?? this.db)('credentials').where({ id: input.id }).first();
  }

  /** Batched last_used_at update (written behind the hot path). */
  async touch(input: { uses: Array<{ id: string; at: Date }> }): Promise<void> {
    if (input.uses.length === 0) return;
    await this.db.raw(
      `update credentials c set last_used_at = greatest(coalesce(c.last_used_at, v.at), v.at)
       from (select unnest(?::uuid[]) as id, unnest(?::timestamptz[]) as at) v where c.id = v.id`,
      [input.uses.map((u) => u.id), input.uses.map((u) => u.at.toISOString())],
    );
  }
}
