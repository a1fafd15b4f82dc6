// knex access to `sanctions_wallet_lists`: the persisted last good wallet sanctions list.
import type { Knex } from 'knex';
import { WalletList, type WalletListFormat } from './walletList';

const KEEP = 3;

export interface StoredListInfo {
  id: number;
  source: string;
  format: WalletListFormat;
  sha256: string;
  published_at: Date | null;
  loaded_at: Date;
  entry_count: number;
}

export class WalletListStore {
  constructor(private readonly db: Knex) {}

  /** Persists `list` as the newest and prunes all but the newest few, in one transaction. */
  async save(list: WalletList): Promise<number> {
    return this.db.transaction(async (trx) => {
      const [row] = await trx('sanctions_wallet_lists')
        .insert({
          source: list.meta.source,
          format: list.meta.format,
          sha256: list.meta.sha256,
          published_at: list.meta.publishedAt,
          loaded_at: list.meta.loadedAt,
          entry_count: list.size,
          counts: JSON.stringify(list.counts()),
          entries: JSON.stringify(list.rows()),
        })
        .returning('id');
      await trx.raw(
        `delete from sanctions_wallet_lists where id not in (select id from sanctions_wallet_lists order by id desc limit ?)`,
        [KEEP],
      );
      return Number(row.id);
    });
  }

  /** Metadata of the newest persisted list (cheap: no entries). */
  async latestInfo(): Promise<StoredListInfo | undefined> {
    return this.db('sanctions_wallet_lists')
      .select('id', 'source', 'format', 'sha256', 'published_at', 'loaded_at', 'entry_count')
      .orderBy('id', 'desc')
      .first();
  }

  async latest(): Promise<{ id: number; list: WalletList } | undefined> {
    const row = await this.db('sanctions_wallet_lists').orderBy('id', 'desc').first();
    if (!row) return undefined;
    const list = WalletList.fromRows(row.entries, {
      source: row.source,
      format: row.format,
      sha256: row.sha256,
      publishedAt: row.published_at,
      loadedAt: row.loaded_at,
    });
    return { id: Number(row.id), list };
  }
}
