// knex access to `api_keys`: only hashes and display prefixes are stored, never a key.
import type { Knex } from 'knex';
import type { AccountRow } from './accounts';
import { touchLastUsed } from './lastUsed';

export interface ApiKeyRow {
  id: string;
  account_id: string;
  key_hash: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

export class ApiKeysRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { accountId: string; keyHash: string; prefix: string }, trx?: Knex.Transaction): Promise<ApiKeyRow> {
    const [row] = await (trx ?? this.db)<ApiKeyRow>('api_keys')
      .insert({ account_id: input.accountId, key_hash: input.keyHash, prefix: input.prefix })
      .returning('*');
    return row;
  }

  /** The active key with this hash and its account, in one query. */
  async findActiveByHash(input: { keyHash: string }): Promise<{ key: ApiKeyRow; account: AccountRow } | undefined> {
    const row = await this.db('api_keys as k')
      .join('accounts as a', 'a.id', 'k.account_id')
      .where('k.key_hash', input.keyHash)
      .whereNull('k.revoked_at')
      .select(this.db.raw('row_to_json(k.*) as key'), this.db.raw('row_to_json(a.*) as account'))
      .first<{ key: Record<string, unknown>; account: Record<string, unknown> } | undefined>();
    if (!row) return undefined;
    return { key: reviveDates(row.key), account: reviveDates(row.account) };
  }

  async listForAccount(input: { accountId: string; activeOnly?: boolean }, trx?: Knex.Transaction): Promise<ApiKeyRow[]> {
    const q = (trx ?? this.db)<ApiKeyRow>('api_keys').where({ account_id: input.accountId }).orderBy('created_at', 'asc');
    return input.activeOnly ? q.whereNull('revoked_at') : q;
  }

  /** Batched last_used_at update (written behind the request path; see AccountsService.noteKeyUse). */
  async touch(input: { uses: Array<{ id: string; at: Date }> }): Promise<void> {
    await touchLastUsed(this.db, 'api_keys', input.uses);
  }

  /** Revokes one active key of the account; undefined when it has no such active key. */
  async revoke(input: { accountId: string; keyId: string }, trx?: Knex.Transaction): Promise<ApiKeyRow | undefined> {
    const db = trx ?? this.db;
    const [row] = await db<ApiKeyRow>('api_keys')
      .where({ id: input.keyId, account_id: input.accountId })
      .whereNull('revoked_at')
      .update({ revoked_at: db.fn.now() })
      .returning('*');
    return row;
  }

  async revokeAllForAccount(input: { accountId: string }, trx?: Knex.Transaction): Promise<number> {
    return (trx ?? this.db)<ApiKeyRow>('api_keys')
      .where({ account_id: input.accountId })
      .whereNull('revoked_at')
      .update({ revoked_at: (trx ?? this.db).fn.now() });
  }
}

const DATE_FIELDS = /_at$/;
/** row_to_json returns timestamps as strings; turn `*_at` fields back into Dates like the rest of knex. */
function reviveDates<T>(row: Record<string, unknown>): T {
  for (const [k, v] of Object.entries(row)) if (DATE_FIELDS.test(k) && typeof v === 'string') row[k] = new Date(v);
  return row as T;
}
