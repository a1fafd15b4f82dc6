// knex access for operators (accounts of kind 'operator', and any account's KYC state) and their claimed
// wallets (`operator_wallets`). Verification level only ever moves up: none → wallet_claimed → kyc_verified.
import type { Knex } from 'knex';
import type { AccountRow, KycStatus } from './accounts';
import type { AddressFamily, VerificationLevel } from '../../shared/types';

export interface OperatorWalletRow {
  id: string;
  account_id: string;
  network: AddressFamily;
  address: string;
  session_id: string | null;
  claimed_at: Date;
}

export interface KycPatch {
  kyc_status: KycStatus;
  kyc_verified_at?: Date | null;
  operator_type?: string | null;
  jurisdiction?: string | null;
  age_bracket?: string | null;
  age_verified?: boolean;
  sanctions_status?: 'clear' | 'flagged' | null;
  sanctions_checked_at?: Date | null;
  /** Why screening flagged the account (JSON: listed name, uid, score, qualifiers); null when clear. */
  sanctions_match?: string | null;
  kyc_provider?: string | null;
  kyc_reference?: string | null;
  pii_encrypted?: string | null;
  identity_fingerprint?: string | null;
}

export type OperatorAccountRow = AccountRow & { identity_fingerprint: string | null };

export class OperatorsRepository {
  constructor(private readonly db: Knex) {}

  async insertOperator(input: { name: string }, trx?: Knex.Transaction): Promise<OperatorAccountRow> {
    const [row] = await (trx ?? this.db)<OperatorAccountRow>('accounts').insert({ kind: 'operator', name: input.name }).returning('*');
    return row;
  }

  /**
   * The operator with this identity fingerprint, created now when there is none. Relies on the unique partial
   * index on the fingerprint: a concurrent insert of the same person waits for the other transaction and then
   * finds its committed row.
   */
  async insertOrFindByFingerprint(input: { name: string; fingerprint: string }, trx: Knex.Transaction): Promise<OperatorAccountRow> {
    const inserted = await trx.raw<{ rows: OperatorAccountRow[] }>(
      `insert into accounts (kind, name, identity_fingerprint) values ('operator', ?, ?)
       on conflict (identity_fingerprint) where kind = 'operator' and identity_fingerprint is not null do nothing
       returning *`,
      [input.name, input.fingerprint],
    );
    if (inserted.rows[0]) return inserted.rows[0];
    const existing = await this.findByFingerprint({ fingerprint: input.fingerprint }, trx);
    if (!existing) throw new Error('operator fingerprint conflict without a visible row');
    return existing;
  }

  async findAccount(input: { id: string; forUpdate?: boolean }, trx?: Knex.Transaction): Promise<OperatorAccountRow | undefined> {
    const q = (trx ?? this.db)<OperatorAccountRow>('accounts').where({ id: input.id }).first();
    return input.forUpdate && trx ? q.forUpdate() : q;
  }

  /** The earliest operator whose verified identity has this fingerprint. */
  async findByFingerprint(input: { fingerprint: string }, trx?: Knex.Transaction): Promise<OperatorAccountRow | undefined> {
    return (trx ?? this.db)<OperatorAccountRow>('accounts')
      .where({ identity_fingerprint: input.fingerprint, kind: 'operator' })
      .orderBy('created_at', 'asc')
      .first();
  }

  async applyKyc(input: { id: string; patch: KycPatch }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)<OperatorAccountRow>('accounts')
      .where({ id: input.id })
      .update({ ...input.patch, updated_at: (trx ?? this.db).fn.now() });
  }

  /** Raises the verification level; never lowers it. */
  async raiseLevel(input: { id: string; level: Exclude<VerificationLevel, 'none'> }, trx?: Knex.Transaction): Promise<void> {
    const db = trx ?? this.db;
    await db('accounts')
      .where({ id: input.id })
      .update({
        verification_level: db.raw(`case when verification_level = 'kyc_verified' or ?::text = verification_level then verification_level else ?::text end`, [
          input.level,
          input.level,
        ]),
        updated_at: db.fn.now(),
      });
  }

  async recordScreening(input: { id: string; status: 'clear' | 'flagged'; checkedAt: Date; match?: unknown }, trx?: Knex.Transaction): Promise<void> {
    await (trx ?? this.db)('accounts')
      .where({ id: input.id })
      .update({
        sanctions_status: input.status,
        sanctions_checked_at: input.checkedAt,
        sanctions_match: input.match === undefined || input.match === null ? null : JSON.stringify(input.match),
        updated_at: (trx ?? this.db).fn.now(),
      });
  }

  /** A clear re-screening: moves sanctions_checked_at; a flag under review is never cleared by it. */
  async recordClearScreenings(input: { ids: string[]; checkedAt: Date }, trx?: Knex.Transaction): Promise<void> {
    if (!input.ids.length) return;
    const db = trx ?? this.db;
    await db('accounts')
      .whereIn('id', input.ids)
      .andWhere((q) => void q.whereNull('sanctions_status').orWhere('sanctions_status', 'clear'))
      .update({ sanctions_status: 'clear', sanctions_checked_at: input.checkedAt, updated_at: db.fn.now() });
  }

  /** Every account whose KYC completed (operators and self-verified merchants): the re-screening population. */
  async listKycVerified(trx?: Knex.Transaction): Promise<OperatorAccountRow[]> {
    return (trx ?? this.db)<OperatorAccountRow>('accounts').where({ kyc_status: 'verified' }).orderBy('created_at', 'asc');
  }

  async findWallet(input: { network: string; address: string }, trx?: Knex.Transaction): Promise<OperatorWalletRow | undefined> {
    return (trx ?? this.db)<OperatorWalletRow>('operator_wallets').where('network', input.network).andWhere('address', input.address).first();
  }

  /** Links a wallet; returns undefined when (network, address) is already claimed (by anyone). */
  async insertWallet(
    input: { accountId: string; network: AddressFamily; address: string; sessionId: string; claimedAt: Date },
    trx?: Knex.Transaction,
  ): Promise<OperatorWalletRow | undefined> {
    const [row] = await (trx ?? this.db)<OperatorWalletRow>('operator_wallets')
      .insert({ account_id: input.accountId, network: input.network, address: input.address, session_id: input.sessionId, claimed_at: input.claimedAt })
      .onConflict(['network', 'address'])
      .ignore()
      .returning('*');
    return row;
  }

  async listWallets(input: { accountId: string }, trx?: Knex.Transaction): Promise<OperatorWalletRow[]> {
    return (trx ?? this.db)<OperatorWalletRow>('operator_wallets').where({ account_id: input.accountId }).orderBy('claimed_at', 'asc');
  }
}
