// knex access to `accounts` (merchants and operators). Row types mirror the table in snake_case.
import type { Knex } from 'knex';
import type { Tier } from '../../shared/types';
import type { VerificationLevel } from '../../shared/types';

export type AccountKind = 'merchant' | 'operator';
export type KycStatus = 'none' | 'pending' | 'verified' | 'failed' | 'flagged';

export interface AccountRow {
  id: string;
  kind: AccountKind;
  name: string;
  display_name: string | null;
  /** Shown on the verify page (dashboard settings); the logo is https only. */
  logo_url: string | null;
  support_email: string | null;
  tier: Tier;
  status: 'active' | 'cancelled';
  quota_override: number | null;
  rps_override: number | null;
  disabled_endpoints: string[];
  sanctions_freshness_days: number | null;
  kyc_status: KycStatus;
  kyc_verified_at: Date | null;
  operator_type: string | null;
  jurisdiction: string | null;
  age_bracket: string | null;
  age_verified: boolean;
  sanctions_status: 'clear' | 'flagged' | null;
  sanctions_checked_at: Date | null;
  verification_level: VerificationLevel;
  kyc_provider: string | null;
  kyc_reference: string | null;
  pii_encrypted: string | null;
  created_at: Date;
  updated_at: Date;
  cancelled_at: Date | null;
}

export type NewAccount = Pick<AccountRow, 'name'> & Partial<Pick<AccountRow, 'kind' | 'display_name' | 'tier' | 'quota_override' | 'rps_override'>>;

export type AccountPatch = Partial<Omit<AccountRow, 'id' | 'created_at'>>;

export class AccountsRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { account: NewAccount }, trx?: Knex.Transaction): Promise<AccountRow> {
    const [row] = await (trx ?? this.db)<AccountRow>('accounts').insert(input.account).returning('*');
    return row;
  }

  async findById(input: { id: string; forUpdate?: boolean }, trx?: Knex.Transaction): Promise<AccountRow | undefined> {
    const q = (trx ?? this.db)<AccountRow>('accounts').where({ id: input.id }).first();
    return input.forUpdate && trx ? q.forUpdate() : q;
  }

  async list(input: { kind?: AccountKind } = {}, trx?: Knex.Transaction): Promise<AccountRow[]> {
    const q = (trx ?? this.db)<AccountRow>('accounts').orderBy('created_at', 'asc');
    return input.kind ? q.where({ kind: input.kind }) : q;
  }

  async update(input: { id: string; patch: AccountPatch }, trx?: Knex.Transaction): Promise<AccountRow | undefined> {
    const [row] = await (trx ?? this.db)<AccountRow>('accounts')
      .where({ id: input.id })
      .update({ ...input.patch, updated_at: (trx ?? this.db).fn.now() })
      .returning('*');
    return row;
  }
}
