// knex access to `credentials` (operator credentials, `opc_…`): hashes and display prefixes only, plus the
// refresh-token chain queries behind the `refreshable` flag and cascade revocation.
import type { Knex } from 'knex';
import { touchLastUsed } from './lastUsed';

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

/** A credential row as listed to its owner: with whether its refresh token can still mint a replacement. */
export type ListedCredentialRow = CredentialRow & { refreshable: boolean };

/** SQL: true when the credential's own refresh token is live (unrotated, unrevoked, unexpired). */
const REFRESHABLE_SQL = `exists (
  select 1 from refresh_tokens rt
  where rt.id = c.refresh_token_id and rt.rotated_at is null and rt.revoked_at is null and rt.expires_at > ?
)`;

export class CredentialsRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { credential: NewCredential }, trx?: Knex.Transaction): Promise<CredentialRow> {
    const [row] = await (trx ?? this.db)<CredentialRow>('credentials').insert(input.credential).returning('*');
    return row;
  }

  async findByHash(input: { tokenHash: string }, trx?: Knex.Transaction): Promise<CredentialRow | undefined> {
    return (trx ?? this.db)<CredentialRow>('credentials').where({ token_hash: input.tokenHash }).first();
  }

  async findById(input: { id: string }, trx?: Knex.Transaction): Promise<CredentialRow | undefined> {
    return (trx ?? this.db)<CredentialRow>('credentials').where({ id: input.id }).first();
  }

  /** Batched last_used_at update (written behind the hot path). */
  async touch(input: { uses: Array<{ id: string; at: Date }> }): Promise<void> {
    await touchLastUsed(this.db, 'credentials', input.uses);
  }

  /**
   * The account's credentials that still matter to it: unrevoked and either unexpired or refreshable
   * (expired but its refresh token can still mint a replacement). Newest first.
   */
  async listForAccount(input: { accountId: string; now: Date }, trx?: Knex.Transaction): Promise<ListedCredentialRow[]> {
    const db = trx ?? this.db;
    const now = input.now.toISOString();
    const { rows } = await db.raw<{ rows: ListedCredentialRow[] }>(
      `select c.*, ${REFRESHABLE_SQL} as refreshable
       from credentials c
       where c.account_id = ? and c.revoked_at is null and (c.expires_at > ? or ${REFRESHABLE_SQL})
       order by c.created_at desc, c.id`,
      [now, input.accountId, now, now],
    );
    return rows;
  }

  /** Finds and row-locks one of the account's credentials by id or by token hash (either may be given). */
  async findOwnedForUpdate(input: { accountId: string; id?: string; tokenHash?: string }, trx: Knex.Transaction): Promise<CredentialRow | undefined> {
    const q = trx<CredentialRow>('credentials').where({ account_id: input.accountId });
    if (input.id) q.where({ id: input.id });
    else if (input.tokenHash) q.where({ token_hash: input.tokenHash });
    else return undefined;
    return q.first().forUpdate();
  }

  /**
   * The credential's refresh token and every later rotation of it (descendants through parent_id),
   * locking those rows. Read in a fresh statement each call, so under READ COMMITTED a rotation that
   * committed while we waited for a lock shows up on the next call.
   */
  async lockRefreshChain(input: { credentialId: string; accountId: string }, trx: Knex.Transaction): Promise<string[]> {
    const { rows } = await trx.raw<{ rows: Array<{ id: string }> }>(
      `with recursive chain(id) as (
         select refresh_token_id from credentials where id = ? and refresh_token_id is not null
         union
         select rt.id from refresh_tokens rt join chain on rt.parent_id = chain.id
       )
       select rt.id from refresh_tokens rt join chain on rt.id = chain.id
       where rt.account_id = ? order by rt.id for update of rt`,
      [input.credentialId, input.accountId],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Revokes the credential, the given refresh tokens, and every credential minted with or by one of those
   * tokens, in the caller's transaction. Already-revoked rows keep their original revoked_at.
   */
  async revokeCascade(
    input: { credentialId: string; accountId: string; refreshTokenIds: string[]; at: Date },
    trx: Knex.Transaction,
  ): Promise<{ credentialIds: string[]; refreshTokenIds: string[] }> {
    const ids = input.refreshTokenIds;
    const tokens = ids.length
      ? await trx('refresh_tokens')
          .whereIn('id', ids)
          .andWhere({ account_id: input.accountId })
          .update({ revoked_at: trx.raw('coalesce(revoked_at, ?)', [input.at]) })
          .returning('id')
      : [];
    const credentials = await trx<CredentialRow>('credentials')
      .where({ account_id: input.accountId })
      .andWhere((w) => {
        w.where({ id: input.credentialId });
        if (ids.length) w.orWhereIn('refresh_token_id', ids).orWhereIn('minted_by_refresh_token_id', ids);
      })
      .update({ revoked_at: trx.raw('coalesce(revoked_at, ?)', [input.at]) })
      .returning('id');
    return {
      credentialIds: credentials.map((r: { id: string }) => r.id),
      refreshTokenIds: tokens.map((r: { id: string }) => r.id),
    };
  }
}
