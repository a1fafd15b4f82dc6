// The assess read path in ONE SQL statement: records the assessed address in known_addresses (unless the
// caller knows it is recorded), resolves the
// claimed identity (wallet or credential) and the signer wallet to their operator accounts (claimed wallets
// in operator_wallets first, else active captures: wallet_captures whose credential is not revoked), and
// returns each operator's KYC columns and linked wallets.
import type { Knex } from 'knex';
import type { AccountRow } from './accounts';
import type { CredentialRow } from './credentials';
import type { AddressFamily } from '../../shared/types';
import { COUNTED_CAPTURES_SQL } from './ownedWallets';
import { PreparedStatements } from '../db/prepared';

export interface WalletRef {
  network: AddressFamily;
  /** Canonical form (EVM lowercase, Solana verbatim). */
  address: string;
}

export interface LinkedWalletRow {
  network: AddressFamily;
  address: string;
  /** 'claimed' (signed ownership) or 'captured' (reported after a payment under a live credential). */
  source: 'claimed' | 'captured';
  /** Claim time for claimed wallets; null for captured ones. */
  claimedAt: Date | null;
}

/** The operator's KYC columns (as on `accounts`) plus its linked wallets. */
export interface OperatorRow extends Pick<
  AccountRow,
  | 'kyc_status'
  | 'kyc_verified_at'
  | 'operator_type'
  | 'jurisdiction'
  | 'age_bracket'
  | 'age_verified'
  | 'sanctions_status'
  | 'sanctions_checked_at'
  | 'verification_level'
> {
  account_id: string;
  wallets: LinkedWalletRow[];
}

export interface LookupResult {
  /** Operator behind the claimed identity (wallet owner, or the credential's account); null when unlinked. */
  claimed: OperatorRow | null;
  /** Operator owning the signer wallet; null when unlinked or no signer was given. */
  signer: OperatorRow | null;
  /** Token mode: the credential the hash matched (any state); null when none. */
  credential: CredentialRow | null;
  /** Wallet mode: true when the address was not in known_addresses before this call. */
  newAddress: boolean;
}

export type LookupInput =
  /** record: false skips the known_addresses insert (the caller knows the address is recorded; newAddress is false). */
  | { mode: 'wallet'; wallet: WalletRef; signer: WalletRef | null; refresh: boolean; record?: boolean }
  | { mode: 'token'; tokenHash: string; signer: WalletRef | null };

const OWNER_SQL = `coalesce(
    (select ow.account_id from operator_wallets ow where ow.network = ? and ow.address = ?),
    (select wc.account_id from ${COUNTED_CAPTURES_SQL}
      where wc.network = ? and wc.wallet_address = ?
      order by wc.first_seen_at, wc.account_id limit 1))`;

const ACCOUNT_COLUMNS = `a.kyc_status, a.kyc_verified_at, a.operator_type, a.jurisdiction, a.age_bracket, a.age_verified,
  a.sanctions_status, a.sanctions_checked_at, a.verification_level`;

interface RawRow extends Omit<OperatorRow, 'wallets' | 'account_id'> {
  slot: 'claimed' | 'signer';
  account_id: string | null;
  wallets: Array<[string, string, number, number | null]> | null;
  inserted?: boolean | null;
  credential?:
    | (Omit<CredentialRow, 'created_at' | 'expires_at' | 'revoked_at' | 'last_used_at'> &
        Record<'created_at' | 'expires_at', string> &
        Record<'revoked_at' | 'last_used_at', string | null>)
    | null;
}

export class OperatorLookupRepository {
  /**
   * The lookup runs as a prepared statement on PostgreSQL: it has few shapes (mode × signer × refresh) and
   * planning its CTEs costs more than executing them.
   */
  private readonly prepared: PreparedStatements;

  constructor(db: Knex) {
    this.prepared = new PreparedStatements(db, 'kya_lookup');
  }

  async lookup(input: LookupInput, trx?: Knex.Transaction): Promise<LookupResult> {
    const ctes: string[] = [];
    const bindings: Knex.RawBinding[] = [];
    const record = input.mode === 'wallet' && (input.record !== false || input.refresh);
    if (record && input.mode === 'wallet') {
      // Known address side effect in the same round trip; xmax = 0 tells a fresh insert from an update.
      const onConflict = input.refresh ? 'do update set refresh_requested_at = now()' : 'do nothing';
      ctes.push(`seen as (insert into known_addresses (address, network) values (?, ?)
        on conflict (network, address) ${onConflict} returning (xmax = 0) as inserted)`);
      bindings.push(input.wallet.address, input.wallet.network);
    } else if (input.mode === 'token') {
      ctes.push(`cred as (select * from credentials where token_hash = ?)`);
      bindings.push(input.tokenHash);
    }
    const owners: string[] = [];
    if (input.mode === 'wallet') {
      owners.push(`select 'claimed'::text as slot, ${OWNER_SQL} as account_id`);
      bindings.push(input.wallet.network, input.wallet.address, input.wallet.network, input.wallet.address);
    } else {
      owners.push(`select 'claimed'::text as slot, (select account_id from cred) as account_id`);
    }
    if (input.signer) {
      owners.push(`select 'signer'::text, ${OWNER_SQL}`);
      bindings.push(input.signer.network, input.signer.address, input.signer.network, input.signer.address);
    }
    ctes.push(`owner as (${owners.join(' union all ')})`);
    ctes.push(`linked as (
      select ow.account_id, ow.network, ow.address, 0 as src, extract(epoch from ow.claimed_at) * 1000 as at
        from operator_wallets ow where ow.account_id in (select account_id from owner where account_id is not null)
      union all
      select wc.account_id, wc.network, wc.wallet_address, 1, null
        from ${COUNTED_CAPTURES_SQL}
        where wc.account_id in (select account_id from owner where account_id is not null))`);
    const extra =
      input.mode === 'wallet' ? (record ? `, (select inserted from seen) as inserted` : '') : `, (select row_to_json(cred) from cred) as credential`;
    const sql = `with ${ctes.join(',\n')}
      select o.slot, o.account_id, ${ACCOUNT_COLUMNS},
        (select json_agg(json_build_array(l.network, l.address, l.src, l.at)) from linked l where l.account_id = o.account_id) as wallets
        ${extra}
      from owner o left join accounts a on a.id = o.account_id`;
    const rows = await this.prepared.query<RawRow>(sql, bindings, trx);
    const claimedRow = rows.find((r) => r.slot === 'claimed');
    const signerRow = rows.find((r) => r.slot === 'signer');
    const cred = claimedRow?.credential ?? null;
    return {
      claimed: toOperator(claimedRow),
      signer: toOperator(signerRow),
      credential: cred
        ? {
            ...cred,
            created_at: new Date(cred.created_at),
            expires_at: new Date(cred.expires_at),
            revoked_at: cred.revoked_at ? new Date(cred.revoked_at) : null,
            last_used_at: cred.last_used_at ? new Date(cred.last_used_at) : null,
          }
        : null,
      newAddress: claimedRow?.inserted === true,
    };
  }
}

function toOperator(row: RawRow | undefined): OperatorRow | null {
  if (!row || !row.account_id || !row.kyc_status) return null;
  return {
    account_id: row.account_id,
    kyc_status: row.kyc_status,
    kyc_verified_at: row.kyc_verified_at,
    operator_type: row.operator_type,
    jurisdiction: row.jurisdiction,
    age_bracket: row.age_bracket,
    age_verified: row.age_verified,
    sanctions_status: row.sanctions_status,
    sanctions_checked_at: row.sanctions_checked_at,
    verification_level: row.verification_level,
    wallets: (row.wallets ?? []).map(([network, address, src, at]) => ({
      network: network as AddressFamily,
      address,
      source: src === 0 ? 'claimed' : 'captured',
      claimedAt: at === null ? null : new Date(Number(at)),
    })),
  };
}
