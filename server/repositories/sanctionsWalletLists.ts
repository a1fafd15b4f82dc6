// knex access to `sanctions_wallet_lists`: the persisted last good wallet sanctions list.
import type { Knex } from 'knex';
import type { WalletList, WalletListFormat } from '../sanctions/walletList';

const KEEP = 3;

export interface StoredListInfo {
  id: number;
  source: string;
  format: WalletListFormat;
  sha256: string;
  published_at: Date | null;
  loaded_at: Date;
  entry_count: number;
  checked_at: Date | null;
}

export interface StoredListRow extends StoredListInfo {
  counts: Record<string, number>;
  etag: string | null;
  last_modified: string | null;
  entries: Array<[string, string, string, string, string | null]>;
}

export class SanctionsWalletListsRepository {
  /** `bulk`: the pool for writing and reading whole lists (a longer statement bound); defaults to `db`. */
  constructor(
    private readonly db: Knex,
    private readonly bulk: Knex = db,
  ) {}

  /** Persists `list` as the newest and prunes all but the newest few, in one transaction. */
  async save(input: { list: WalletList }, trx?: Knex.Transaction): Promise<number> {
    const { list } = input;
    return (trx ?? this.bulk).transaction(async (tx) => {
      const [row] = await tx('sanctions_wallet_lists')
        .insert({
          source: list.meta.source,
          format: list.meta.format,
          sha256: list.meta.sha256,
          published_at: list.meta.publishedAt,
          loaded_at: list.meta.loadedAt,
          entry_count: list.size,
          counts: JSON.stringify(list.counts()),
          entries: JSON.stringify(list.rows()),
          etag: list.meta.validators?.etag ?? null,
          last_modified: list.meta.validators?.lastModified ?? null,
          checked_at: list.meta.loadedAt,
        })
        .returning<Array<{ id: string }>>('id');
      await tx.raw(`delete from sanctions_wallet_lists where id not in (select id from sanctions_wallet_lists order by id desc limit ?)`, [KEEP]);
      return Number(row.id);
    });
  }

  /** Metadata of the newest persisted list (cheap: no entries). */
  /**
   * The newest stored list's metadata. `background`: asked by a refresh that has just parsed a list (it runs on
   * the bulk pool, whose connections wait out a busy process); otherwise on the pool that fails fast.
   */
  async latestInfo(input: { background?: boolean } = {}, trx?: Knex.Transaction): Promise<StoredListInfo | undefined> {
    return (trx ?? (input.background ? this.bulk : this.db))<StoredListRow>('sanctions_wallet_lists')
      .select('id', 'source', 'format', 'sha256', 'published_at', 'loaded_at', 'entry_count', 'checked_at')
      .orderBy('id', 'desc')
      .first();
  }

  /** Records that the source confirmed the stored list (unchanged file, same hash or HTTP 304). */
  async touch(input: { id: number; checkedAt: Date }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)<StoredListRow>('sanctions_wallet_lists').where({ id: input.id }).update({ checked_at: input.checkedAt });
  }

  /** The newest persisted list with its entries. */
  async latest(trx?: Knex.Transaction): Promise<StoredListRow | undefined> {
    return (trx ?? this.bulk)<StoredListRow>('sanctions_wallet_lists').orderBy('id', 'desc').first();
  }
}
