// Seeds operator state for assess tests through the repositories (the verify flow and wallet capture create
// the same rows for real), announcing each change the way those services do.
import type { Deps } from '../../server/deps';
import type { KycStatus } from '../../server/repositories/accounts';
import type { VerificationLevel } from '../../shared/types';

export interface OperatorSeed {
  kyc?: KycStatus;
  jurisdiction?: string | null;
  age?: '18+' | '21+' | 'under_18' | null;
  ageVerified?: boolean;
  sanctions?: 'clear' | 'flagged' | null;
  checkedAt?: Date | null;
  verifiedAt?: Date | null;
  operatorType?: string | null;
  level?: VerificationLevel;
  kind?: 'operator' | 'merchant';
}

export async function createOperator(deps: Deps, seed: OperatorSeed = {}): Promise<string> {
  const account = await deps.repos.accounts.insert({ account: { name: 'Operator', kind: seed.kind ?? 'operator' } });
  const kyc = seed.kyc ?? 'verified';
  const verified = kyc === 'verified' || kyc === 'flagged';
  await deps.repos.accounts.update({
    id: account.id,
    patch: {
      kyc_status: kyc,
      kyc_verified_at: seed.verifiedAt !== undefined ? seed.verifiedAt : verified ? new Date('2025-03-01T10:00:00.000Z') : null,
      operator_type: seed.operatorType !== undefined ? seed.operatorType : verified ? 'individual' : null,
      jurisdiction: seed.jurisdiction !== undefined ? seed.jurisdiction : verified ? 'US' : null,
      age_bracket: seed.age !== undefined ? seed.age : verified ? '21+' : null,
      age_verified: seed.ageVerified ?? verified,
      sanctions_status: seed.sanctions !== undefined ? seed.sanctions : verified ? 'clear' : null,
      sanctions_checked_at: seed.checkedAt !== undefined ? seed.checkedAt : verified ? new Date(Date.now() - 86_400_000) : null,
      verification_level: seed.level ?? (verified ? 'kyc_verified' : 'none'),
    },
  });
  return account.id;
}

export async function claimWallet(deps: Deps, accountId: string, address: string, network: 'evm' | 'solana' = 'evm', claimedAt = new Date()): Promise<void> {
  await deps.db('operator_wallets').insert({ account_id: accountId, network, address, claimed_at: claimedAt });
  await deps.services.identity.changed({ operatorId: accountId, wallets: [{ network, address }] });
}

export async function mintCredential(deps: Deps, accountId: string, ttlSeconds = 86_400): Promise<{ token: string; id: string }> {
  const { credential, token } = await deps.services.credentials.mint({ accountId, ttlSeconds, source: 'api' });
  return { token, id: credential.id };
}

/** A wallet reported by a merchant after a payment under `credentialId` (an active capture while it is unrevoked). */
export async function captureWallet(
  deps: Deps,
  input: { accountId: string; credentialId: string; address: string; network?: 'evm' | 'solana' },
): Promise<void> {
  await deps.db('wallet_captures').insert({
    credential_id: input.credentialId,
    account_id: input.accountId,
    network: input.network ?? 'evm',
    wallet_address: input.address,
  });
  await deps.services.identity.changed({ operatorId: input.accountId, wallets: [{ network: input.network ?? 'evm', address: input.address }] });
}

export const ASSESS_TABLES = ['accounts', 'operator_wallets', 'credentials', 'wallet_captures', 'known_addresses', 'assess_audit', 'sessions'];

/** A random EVM address (lowercase). */
export function evmAddress(): string {
  return '0x' + [...crypto.getRandomValues(new Uint8Array(20))].map((b) => b.toString(16).padStart(2, '0')).join('');
}
