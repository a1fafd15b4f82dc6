// Test helpers for credentials and wallet capture: KYC state on an account, and refresh-token chains seeded
// through the database in exactly the shape refresh rotation writes (new token's parent_id = the presented
// token, same family; the new credential's refresh_token_id = the new token, minted_by = the presented one).
import crypto from 'node:crypto';
import type { Deps } from '../../server/deps';
import type { AccountPatch } from '../../server/repositories/accounts';
import { displayPrefix, newSecret, sha256Hex } from '../../server/crypto';

export const DAY_MS = 86_400_000;

/** Marks an account as having completed KYC (plus any overrides). */
export async function verifyAccount(deps: Deps, accountId: string, patch: AccountPatch = {}): Promise<void> {
  const now = deps.clock.now();
  await deps.repos.accounts.update({
    id: accountId,
    patch: {
      kyc_status: 'verified',
      kyc_verified_at: now,
      operator_type: 'individual',
      jurisdiction: 'US',
      age_bracket: '21+',
      age_verified: true,
      sanctions_status: 'clear',
      sanctions_checked_at: now,
      verification_level: 'kyc_verified',
      ...patch,
    },
  });
}

export interface ChainLink {
  refreshTokenId: string;
  credentialId: string;
  token: string;
}

async function insertRefreshToken(deps: Deps, input: { accountId: string; familyId: string; parentId: string | null }): Promise<string> {
  const secret = newSecret('ort_', 32);
  const [row] = await deps
    .db('refresh_tokens')
    .insert({
      account_id: input.accountId,
      family_id: input.familyId,
      parent_id: input.parentId,
      token_hash: sha256Hex(secret),
      prefix: displayPrefix(secret),
      expires_at: new Date(deps.clock.now().getTime() + 90 * DAY_MS),
    })
    .returning<Array<{ id: string }>>('id');
  return row.id;
}

/** A session-issued credential with its refresh token, then `rotations` rotations of that token. */
export async function seedRefreshChain(deps: Deps, accountId: string, rotations: number): Promise<ChainLink[]> {
  const familyId = crypto.randomUUID();
  const firstToken = await insertRefreshToken(deps, { accountId, familyId, parentId: null });
  const first = await deps.services.credentials.mint({ accountId, ttlSeconds: 86_400, source: 'session', refreshTokenId: firstToken });
  const chain: ChainLink[] = [{ refreshTokenId: firstToken, credentialId: first.credential.id, token: first.token }];
  for (let i = 0; i < rotations; i++) chain.push(await rotate(deps, accountId, familyId, chain[chain.length - 1].refreshTokenId));
  return chain;
}

/** One rotation of a refresh token, as POST /v1/sessions/refresh performs it. */
export async function rotate(deps: Deps, accountId: string, familyId: string, presentedId: string): Promise<ChainLink> {
  await deps.db('refresh_tokens').where({ id: presentedId }).update({ rotated_at: deps.clock.now() });
  const next = await insertRefreshToken(deps, { accountId, familyId, parentId: presentedId });
  const minted = await deps.services.credentials.mint({
    accountId,
    ttlSeconds: 86_400,
    source: 'refresh',
    refreshTokenId: next,
    mintedByRefreshTokenId: presentedId,
  });
  return { refreshTokenId: next, credentialId: minted.credential.id, token: minted.token };
}
