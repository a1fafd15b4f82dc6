// knex access to `sanctions_name_lists`: the persisted last good sanctions name list, so a new instance starts
// with it even when its source is unreachable. Only the newest few are kept.
import type { Knex } from 'knex';
import type { Validators } from '../sanctions/fetchSource';
import type { NameEntry } from '../screening/nameList';

const KEEP = 3;

export interface NameListValidators {
  source: Validators | null;
  alt: Validators | null;
}

export interface StoredNameListInfo {
  id: number;
  source: string;
  alt_source: string | null;
  sha256: string;
  published_at: Date | null;
  loaded_at: Date;
  checked_at: Date | null;
  validators: NameListValidators | null;
  entry_count: number;
}

export interface NameListRecord {
  source: string;
  altSource: string | null;
  sha256: string;
  publishedAt: Date | null;
  loadedAt: Date;
  validators: NameListValidators | null;
  /** null for the bundled snapshot (every instance has it on disk). */
  entries: NameEntry[] | null;
  entryCount: number;
}

export class SanctionsNameListsRepository {
  /** `bulk`: the pool for writing and reading whole lists (a longer statement bound); defaults to `db`. */
  constructor(
    private readonly db: Knex,
    private readonly bulk: Knex = db,
  ) {}

  /** Persists the list as the newest and prunes all but the newest few, in one transaction. */
  async save(input: { record: NameListRecord }, trx?: Knex.Transaction): Promise<number> {
    const { record } = input;
    return (trx ?? this.bulk).transaction(async (tx) => {
      const [row] = await tx('sanctions_name_lists')
        .insert({
          source: record.source,
          alt_source: record.altSource,
          sha256: record.sha256,
          published_at: record.publishedAt,
          loaded_at: record.loadedAt,
          checked_at: record.loadedAt,
          validators: record.validators ? JSON.stringify(record.validators) : null,
          entry_count: record.entryCount,
          entries: record.entries ? JSON.stringify(record.entries) : null,
        })
        .returning<Array<{ id: string }>>('id');
      await tx.raw(`delete from sanctions_name_lists where id not in (select id from sanctions_name_lists order by id desc limit ?)`, [KEEP]);
      return Number(row.id);
    });
  }

  /**
   * The newest stored list's metadata. `background`: asked by a refresh that has just parsed a list (it runs on
   * the bulk pool, whose connections wait out a busy process); otherwise on the pool that fails fast.
   */
  async latestInfo(input: { background?: boolean } = {}, trx?: Knex.Transaction): Promise<StoredNameListInfo | undefined> {
    return (trx ?? (input.background ? this.bulk : this.db))<StoredNameListInfo>('sanctions_name_lists')
      .select('id', 'source', 'alt_source', 'sha256', 'published_at', 'loaded_at', 'checked_at', 'validators', 'entry_count')
      .orderBy('id', 'desc')
      .first();
  }

  async entries(input: { id: number }, trx?: Knex.Transaction): Promise<NameEntry[] | null> {
    const row = await (trx ?? this.bulk)<{ id: number; entries: NameEntry[] | null }>('sanctions_name_lists').select('entries').where({ id: input.id }).first();
    return row?.entries ?? null;
  }

  /** The source confirmed the stored list (unchanged content or HTTP 304). */
  async touch(input: { id: number; checkedAt: Date }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)<StoredNameListInfo>('sanctions_name_lists').where({ id: input.id }).update({ checked_at: input.checkedAt });
  }
}
