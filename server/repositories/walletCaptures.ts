// knex access to `wallet_captures`: which wallet paid under which operator credential, one row per
// (credential, wallet, network), counted with a single-statement conditional upsert.
import type { Knex } from 'knex';
import type { AddressFamily } from '../../shared/types';

export interface WalletCaptureRow {
  id: string;
  credential_id: string;
  account_id: string;
  reported_by_account_id: string | null;
  network: AddressFamily;
  wallet_address: string;
  transaction_count: number;
  last_idempotency_key: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
}

/** inserted = first report of the tuple; counted = a later report; deduped = same key as the last report. */
export type CaptureOutcome = 'inserted' | 'counted' | 'deduped';

export class WalletCapturesRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Records one report atomically. The ON CONFLICT path takes the row lock and re-checks the key against
   * the latest committed row, so concurrent duplicates of one report change the row exactly once; a
   * report that changes nothing returns no row (deduped). A report without a key always counts.
   */
  async record(
    input: {
      credentialId: string;
      accountId: string;
      reportedByAccountId: string;
      network: AddressFamily;
      walletAddress: string;
      idempotencyKey: string | null;
      at: Date;
    },
    trx?: Knex.Transaction,
  ): Promise<CaptureOutcome> {
    const { rows } = await (trx ?? this.db).raw<{ rows: Array<{ inserted: boolean }> }>(
      `insert into wallet_captures as w
         (credential_id, account_id, reported_by_account_id, network, wallet_address, transaction_count,
          last_idempotency_key, first_seen_at, last_seen_at)
       values (?, ?, ?, ?, ?, 1, ?, ?, ?)
       on conflict (credential_id, wallet_address, network) do update
         set transaction_count = w.transaction_count + 1,
             last_idempotency_key = excluded.last_idempotency_key,
             last_seen_at = greatest(w.last_seen_at, excluded.last_seen_at),
             reported_by_account_id = excluded.reported_by_account_id
         where excluded.last_idempotency_key is null
            or w.last_idempotency_key is distinct from excluded.last_idempotency_key
       returning (xmax = 0) as inserted`,
      [input.credentialId, input.accountId, input.reportedByAccountId, input.network, input.walletAddress, input.idempotencyKey, input.at, input.at],
    );
    if (rows.length === 0) return 'deduped';
    return rows[0].inserted ? 'inserted' : 'counted';
  }

  async find(input: { credentialId: string; network: AddressFamily; walletAddress: string }, trx?: Knex.Transaction): Promise<WalletCaptureRow | undefined> {
    return (trx ?? this.db)<WalletCaptureRow>('wallet_captures')
      .where({ credential_id: input.credentialId, network: input.network, wallet_address: input.walletAddress })
      .first();
  }
}
