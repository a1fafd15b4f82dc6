// knex access to `refresh_tokens` (rotating, `ort_…`, stored as SHA-256) and the family-wide revocation that
// reuse detection performs together with the credentials those tokens minted.
import type { Knex } from 'knex';

export interface RefreshTokenRow {
  id: string;
  account_id: string;
  family_id: string;
  parent_id: string | null;
  token_hash: string;
  prefix: string;
  created_at: Date;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

export type NewRefreshToken = Pick<RefreshTokenRow, 'account_id' | 'family_id' | 'token_hash' | 'prefix' | 'expires_at'> &
  Partial<Pick<RefreshTokenRow, 'parent_id' | 'created_at'>>;

export class RefreshTokensRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { token: NewRefreshToken }, trx?: Knex.Transaction): Promise<RefreshTokenRow> {
    const [row] = await (trx ?? this.db)<RefreshTokenRow>('refresh_tokens').insert(input.token).returning('*');
    return row;
  }

  async findByHash(input: { tokenHash: string; forUpdate?: boolean }, trx?: Knex.Transaction): Promise<RefreshTokenRow | undefined> {
    const q = (trx ?? this.db)<RefreshTokenRow>('refresh_tokens').where({ token_hash: input.tokenHash }).first();
    return input.forUpdate && trx ? q.forUpdate() : q;
  }

  /** Marks a token rotated, only if it was not already (the row lock makes this the single winner). */
  async markRotated(input: { id: string; at: Date }, trx: Knex.Transaction): Promise<boolean> {
    const n = await trx<RefreshTokenRow>('refresh_tokens')
      .where({ id: input.id })
      .whereNull('rotated_at')
      .whereNull('revoked_at')
      .update({ rotated_at: input.at });
    return n === 1;
  }

  /** Revokes every token of the family and every credential minted with or by one of them. */
  async revokeFamily(input: { familyId: string; at: Date }, trx: Knex.Transaction): Promise<{ tokens: number; credentials: number; credentialIds: string[] }> {
    const tokens = await trx<RefreshTokenRow>('refresh_tokens').where({ family_id: input.familyId }).whereNull('revoked_at').update({ revoked_at: input.at });
    const family = trx<RefreshTokenRow>('refresh_tokens').select('id').where({ family_id: input.familyId });
    const credentials: Array<{ id: string }> = await trx('credentials')
      .whereNull('revoked_at')
      .where((q) => void q.whereIn('refresh_token_id', family).orWhereIn('minted_by_refresh_token_id', family.clone()))
      .update({ revoked_at: input.at }, ['id']);
    return { tokens, credentials: credentials.length, credentialIds: credentials.map((c) => c.id) };
  }
}
