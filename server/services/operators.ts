// Operator resolution rules on top of the one-query lookup: an operator's linked wallets, its canonical
// ("resolved") wallet, its KYC state for the policy engine, and the operator_verification object.
import type { OperatorVerification } from '../../shared/types';
import type { LinkedWalletRow, OperatorRow } from '../repositories/operatorLookup';
import type { OperatorState } from './policy';

export interface ResolvedOperator {
  accountId: string;
  state: OperatorState;
  /** Every same-operator wallet: claimed ones (oldest claim first), then active captured ones (lexical). */
  wallets: string[];
  /** Earliest claimed wallet, else the lexically smallest active captured wallet; null when it has none. */
  resolvedWallet: string | null;
}

/** Plain code-unit order: base58 is case-sensitive, so no locale collation. */
function lexical(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function orderWallets(rows: LinkedWalletRow[]): { wallets: string[]; resolved: string | null } {
  const claimed = rows
    .filter((w) => w.source === 'claimed')
    .sort((a, b) => (a.claimedAt?.getTime() ?? 0) - (b.claimedAt?.getTime() ?? 0) || lexical(a.address, b.address));
  const captured = rows.filter((w) => w.source === 'captured').sort((a, b) => lexical(a.address, b.address));
  const wallets = [...new Set([...claimed, ...captured].map((w) => w.address))];
  return { wallets, resolved: claimed[0]?.address ?? captured[0]?.address ?? null };
}

export function toOperatorState(row: OperatorRow): OperatorState {
  return {
    kycStatus: row.kyc_status,
    kycVerifiedAt: row.kyc_verified_at,
    operatorType: row.operator_type,
    jurisdiction: row.jurisdiction ? row.jurisdiction.trim() : null,
    ageBracket: row.age_bracket,
    ageVerified: row.age_verified,
    sanctionsStatus: row.sanctions_status,
    sanctionsCheckedAt: row.sanctions_checked_at,
    verificationLevel: row.verification_level,
  };
}

export function resolveOperator(row: OperatorRow): ResolvedOperator {
  const { wallets, resolved } = orderWallets(row.wallets);
  return { accountId: row.account_id, state: toOperatorState(row), wallets, resolvedWallet: resolved };
}

/** `{level}` alone without a completed identity check; with it, also operator_type and verified_at. */
export function operatorVerification(state: OperatorState): OperatorVerification {
  if (state.kycStatus !== 'verified') {
    // A verification that was later flagged keeps its level (levels never move back; the flag is reported by
    // sanctions_flagged) but exposes no details.
    return { level: state.verificationLevel };
  }
  const out: OperatorVerification = { level: 'kyc_verified' };
  if (state.operatorType) out.operator_type = state.operatorType;
  if (state.kycVerifiedAt) out.verified_at = state.kycVerifiedAt.toISOString();
  return out;
}
