// Operator credentials (`opc_…`): minting, resolving a presented token, listing and cascade revocation
// (CredentialsService), and the account-facing lifecycle behind /v1/credentials (CredentialLifecycleService):
// the KYC gate on creation, the account_verification view, and the 401 answers for dead or unknown tokens.
// Tokens are stored as SHA-256 hashes; resolution is an index probe on the hash, so unknown and wrong tokens
// take the same path.
import type { Knex } from 'knex';
import type { WebhookEmitter } from '../webhooks/events';
import { ApiError } from '../../shared/errors';
import type { CreatedCredential, CredentialSummary } from '../../shared/types';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { displayPrefix, newSecret, sha256Hex } from '../crypto';
import type { AccountRow, AccountsRepository, KycStatus } from '../repositories/accounts';
import type { CredentialRow, CredentialsRepository, ListedCredentialRow } from '../repositories/credentials';
import type { SessionsService } from './sessions';
import { credentialCopy, memoryCopy, sessionCopy } from './agentCopy';
import type { IdentityChanged } from './identity';
import type { WriteBehind } from '../db/writeBehind';

export const CREDENTIAL_PREFIX = 'opc_';

export type CredentialResolution =
  | { status: 'live'; credential: CredentialRow }
  /** Existed once but is revoked or past its TTL (not disclosed which): 401 token_expired + a new session. */
  | { status: 'expired'; credential: CredentialRow }
  /** Never existed (or is not even shaped like a credential): 401 invalid_credential, no session. */
  | { status: 'unknown' };

/**
 * The one definition of a usable credential: found, not revoked, and not past its expiry at `now`. Callers
 * that found the row some other way (assess resolves it inside its lookup statement) classify it here too.
 */
export function credentialStatus(credential: CredentialRow | null | undefined, now: Date): CredentialResolution {
  if (!credential) return { status: 'unknown' };
  if (credential.revoked_at || credential.expires_at.getTime() <= now.getTime()) return { status: 'expired', credential };
  return { status: 'live', credential };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY_MS = 86_400_000;
/** Bound on re-reading the refresh chain while concurrent rotations commit (each pass is one statement). */
const MAX_CHAIN_PASSES = 50;

export interface RevokedCredential {
  id: string;
  /** Every credential the cascade revoked (the target included). */
  credentialIds: string[];
  refreshTokenIds: string[];
}

export interface CredentialsServiceOptions {
  db: Knex;
  credentials: CredentialsRepository;
  logger: Logger;
  now: () => Date;
  identityChanged: IdentityChanged;
  webhooks?: WebhookEmitter;
  /** last_used_at of credentials, written behind the request (credential id → time of use). */
  touches: WriteBehind<string, Date>;
}

export class CredentialsService {
  private readonly db: Knex;
  private readonly credentials: CredentialsRepository;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly identityChanged: IdentityChanged;
  private readonly webhooks: WebhookEmitter | undefined;
  private readonly touches: WriteBehind<string, Date>;

  constructor(options: CredentialsServiceOptions) {
    this.db = options.db;
    this.credentials = options.credentials;
    this.logger = options.logger;
    this.now = options.now;
    this.identityChanged = options.identityChanged;
    this.webhooks = options.webhooks;
    this.touches = options.touches;
  }

  static isCredentialShaped(token: unknown): token is string {
    return typeof token === 'string' && token.startsWith(CREDENTIAL_PREFIX) && token.length >= 20 && token.length <= 128;
  }

  static hash(token: string): string {
    return sha256Hex(token);
  }

  /** Mints a new credential for an operator account; the plaintext is returned once and never stored. */
  async mint(
    input: {
      accountId: string;
      ttlSeconds: number;
      source: CredentialRow['source'];
      label?: string | null;
      sessionId?: string | null;
      refreshTokenId?: string | null;
      mintedByRefreshTokenId?: string | null;
    },
    trx?: Knex.Transaction,
  ): Promise<{ credential: CredentialRow; token: string }> {
    const token = newSecret(CREDENTIAL_PREFIX, 32);
    const credential = await this.credentials.insert(
      {
        credential: {
          account_id: input.accountId,
          token_hash: sha256Hex(token),
          prefix: displayPrefix(token),
          source: input.source,
          label: input.label ?? null,
          session_id: input.sessionId ?? null,
          refresh_token_id: input.refreshTokenId ?? null,
          minted_by_refresh_token_id: input.mintedByRefreshTokenId ?? null,
          expires_at: new Date(this.now().getTime() + input.ttlSeconds * 1000),
        },
      },
      trx,
    );
    return { credential, token };
  }

  /** Resolves a presented token; marks live use (last_used_at) behind the hot path. */
  async resolve(token: unknown, trx?: Knex.Transaction): Promise<CredentialResolution> {
    if (!CredentialsService.isCredentialShaped(token)) return { status: 'unknown' };
    return this.classify(await this.credentials.findByHash({ tokenHash: sha256Hex(token) }, trx));
  }

  /** The status of a credential row the caller already looked up; marks live use like `resolve`. */
  classify(credential: CredentialRow | null | undefined): CredentialResolution {
    const resolution = credentialStatus(credential, this.now());
    if (resolution.status === 'live') this.touches.set(resolution.credential.id, this.now());
    return resolution;
  }

  /** The account's unrevoked credentials that are unexpired or still refreshable, newest first. */
  async listForAccount(accountId: string): Promise<ListedCredentialRow[]> {
    return this.credentials.listForAccount({ accountId, now: this.now() });
  }

  /**
   * Revokes one of the account's credentials, named by its id or by its `opc_` value, together with the
   * refresh token minted with it, every later rotation of that token and every credential those rotations
   * minted — in one transaction. null when the account owns no such credential (unknown and foreign ids
   * alike, so the caller can answer both the same way). Revoking twice is harmless.
   */
  async revoke(input: { accountId: string; idOrToken: string }): Promise<RevokedCredential | null> {
    const lookup = UUID_RE.test(input.idOrToken)
      ? { id: input.idOrToken.toLowerCase() }
      : CredentialsService.isCredentialShaped(input.idOrToken)
        ? { tokenHash: sha256Hex(input.idOrToken) }
        : null;
    if (!lookup) return null;
    const result = await this.db.transaction(async (trx) => {
      const credential = await this.credentials.findOwnedForUpdate({ accountId: input.accountId, ...lookup }, trx);
      if (!credential) return null;
      // Lock the chain, then read it again: a rotation that held one of its rows while we waited has
      // committed by now and its new token is visible to the next statement. Once every row is locked,
      // no further rotation can start from it (rotation needs the parent row), so the set is final.
      const chain = new Set<string>();
      for (let pass = 0; pass < MAX_CHAIN_PASSES; pass++) {
        const ids = await this.credentials.lockRefreshChain({ credentialId: credential.id, accountId: input.accountId }, trx);
        const before = chain.size;
        for (const id of ids) chain.add(id);
        if (chain.size === before) break;
      }
      const revoked = await this.credentials.revokeCascade(
        { credentialId: credential.id, accountId: input.accountId, refreshTokenIds: [...chain], at: this.now() },
        trx,
      );
      const data = {
        credential_id: credential.id,
        prefix: credential.prefix,
        revoked_credential_ids: revoked.credentialIds,
        revoked_at: this.now().toISOString(),
      };
      await this.webhooks?.emit({ accountId: input.accountId, type: 'credential.revoked', data }, trx);
      return { id: credential.id, ...revoked };
    });
    if (result) {
      // The credentials, and the operator's captured wallets (captures under a revoked credential stop counting).
      await this.identityChanged({ operatorId: input.accountId, credentialIds: result.credentialIds });
      this.logger.info(
        { credential: result.id, credentials: result.credentialIds.length, refresh_tokens: result.refreshTokenIds.length },
        'credential revoked with its refresh chain',
      );
    }
    return result;
  }

  /** Writes the pending last_used_at times now (tests; the write-behind flushes by itself). */
  flushTouches(): Promise<void> {
    return this.touches.flush();
  }
}

/** sanctions_clear of the account view: fresh clear screening → true, a hit → false, never screened or stale → null. */
export function sanctionsClear(
  account: Pick<AccountRow, 'sanctions_status' | 'sanctions_checked_at' | 'sanctions_freshness_days'>,
  defaultFreshnessDays: number,
  now: Date,
): boolean | null {
  if (account.sanctions_status === 'flagged') return false;
  if (account.sanctions_status !== 'clear' || !account.sanctions_checked_at) return null;
  const windowMs = (account.sanctions_freshness_days ?? defaultFreshnessDays) * DAY_MS;
  return now.getTime() - account.sanctions_checked_at.getTime() <= windowMs ? true : null;
}

/** `account_verification` in GET /v1/credentials: every field once KYC was completed, else only kyc_status. */
export type AccountVerification =
  | { kyc_status: Exclude<KycStatus, 'verified' | 'flagged'> }
  | {
      kyc_status: 'verified' | 'flagged';
      kyc_verified_at: string | null;
      jurisdiction: string | null;
      age_verified: boolean;
      age_bracket: string | null;
      sanctions_clear: boolean | null;
      sanctions_checked_at: string | null;
      operator_type: string | null;
    };

/** The listed credential is the wire shape both the server and the gate's client use. */
export type CredentialView = CredentialSummary;

export const OPERATOR_TOKEN_HEADER = 'X-Operator-Token';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * What /v1/credentials does for the calling account, which is itself the operator: its KYC columns decide
 * whether it may mint, and its credentials are the ones listed and revoked.
 */
export interface CredentialLifecycleServiceOptions {
  credentials: CredentialsService;
  accounts: AccountsRepository;
  sessions: SessionsService;
  config: Config;
  now: () => Date;
}

export class CredentialLifecycleService {
  private readonly credentials: CredentialsService;
  private readonly accounts: AccountsRepository;
  private readonly sessions: SessionsService;
  private readonly config: Config;
  private readonly now: () => Date;

  constructor(options: CredentialLifecycleServiceOptions) {
    this.credentials = options.credentials;
    this.accounts = options.accounts;
    this.sessions = options.sessions;
    this.config = options.config;
    this.now = options.now;
  }

  /** Mints a credential for an account that completed KYC; the plaintext is in the result once. */
  async create(input: { accountId: string; label: string | null; ttlDays: number }): Promise<CreatedCredential> {
    const account = await this.requireAccount(input.accountId);
    if (account.kyc_status === 'flagged' || account.sanctions_status === 'flagged') throw this.flagged();
    if (account.kyc_status !== 'verified') throw await this.kycRequired(account.id);
    const { credential, token } = await this.credentials.mint({
      accountId: account.id,
      ttlSeconds: input.ttlDays * 86_400,
      source: 'api',
      label: input.label,
    });
    return {
      id: credential.id,
      credential: token,
      prefix: credential.prefix,
      label: credential.label,
      expires_at: credential.expires_at.toISOString(),
      created_at: credential.created_at.toISOString(),
      agent_memory: this.agentMemory(credential.expires_at),
    };
  }

  async list(accountId: string): Promise<{ account_verification: AccountVerification; credentials: CredentialView[] }> {
    const [account, rows] = await Promise.all([this.requireAccount(accountId), this.credentials.listForAccount(accountId)]);
    return {
      account_verification: this.accountVerification(account),
      credentials: rows.map((row) => ({
        id: row.id,
        prefix: row.prefix,
        label: row.label,
        expires_at: row.expires_at.toISOString(),
        created_at: row.created_at.toISOString(),
        last_used_at: iso(row.last_used_at),
        refreshable: row.refreshable,
      })),
    };
  }

  /** DELETE /v1/credentials/{id}: unknown and foreign ids get the same 404. */
  async revoke(input: { accountId: string; idOrToken: string }): Promise<{ id: string; revoked: true }> {
    const revoked = await this.credentials.revoke(input);
    if (!revoked) throw new ApiError('not_found', 'No credential with this id.');
    return { id: revoked.id, revoked: true };
  }

  accountVerification(account: AccountRow): AccountVerification {
    // A flagged operator went through identity verification; its record is shown so sanctions_clear=false
    // explains why. Accounts that never completed KYC show only their status.
    if (account.kyc_status !== 'verified' && account.kyc_status !== 'flagged') return { kyc_status: account.kyc_status };
    return {
      kyc_status: account.kyc_status,
      kyc_verified_at: iso(account.kyc_verified_at),
      jurisdiction: account.jurisdiction?.trim() ?? null,
      age_verified: account.age_verified,
      age_bracket: account.age_bracket,
      sanctions_clear: sanctionsClear(account, this.config.sanctions.freshnessDays, this.now()),
      sanctions_checked_at: iso(account.sanctions_checked_at),
      operator_type: account.operator_type,
    };
  }

  /**
   * The 401 for a presented token that is not live (assess and wallet capture alike): a token that existed
   * but is revoked or past its TTL gets `token_expired` with a fresh verification session for the calling
   * merchant (which of the two is not disclosed); a token that never existed gets `invalid_credential`.
   */
  async rejection(resolution: Exclude<CredentialResolution, { status: 'live' }>, merchantAccountId: string): Promise<ApiError> {
    if (resolution.status === 'unknown') {
      return new ApiError('invalid_credential', 'The operator credential is not valid. Do not retry with it.');
    }
    const { body } = await this.sessions.create({ kind: 'merchant', merchantAccountId });
    return new ApiError('token_expired', 'The operator credential has expired or was revoked. Verify again to get a new one.', {
      top: { ...body },
    });
  }

  private async requireAccount(accountId: string): Promise<AccountRow> {
    const account = await this.accounts.findById({ id: accountId });
    // The key authenticated a moment ago; an account gone since gets the same answer as a bad key.
    if (!account) throw new ApiError('signup_required', 'A valid API key is required (X-API-Key header).', { extra: { signup_url: this.config.signupUrl } });
    return account;
  }

  private async kycRequired(accountId: string): Promise<ApiError> {
    // A self-verification session: the verify page completes it onto this same account.
    const { body } = await this.sessions.create({ kind: 'self', merchantAccountId: accountId, operatorAccountId: accountId });
    return new ApiError('kyc_required', 'This account must complete identity verification before it can create operator credentials.', {
      top: {
        verify_url: body.verify_url,
        next_steps: {
          action: 'complete_kyc_then_retry',
          user_message: sessionCopy.completeKycThenRetry(body.verify_url, this.config.sessions.ttlSeconds),
        },
      },
    });
  }

  private flagged(): ApiError {
    // Re-verifying cannot clear a sanctions match; only a manual review can.
    return new ApiError('forbidden', 'Credential issuance is blocked for this account pending a manual compliance review.', {
      top: {
        next_steps: {
          action: 'contact_support',
          support_email: this.config.supportEmail,
          support_subject: this.config.supportSubject,
          user_message: credentialCopy.screeningReview(this.config.supportEmail),
        },
      },
    });
  }

  private agentMemory(expiresAt: Date): Record<string, unknown> {
    const base = this.sessions.agentMemory();
    return {
      ...base,
      pattern_summary: memoryCopy.credential(OPERATOR_TOKEN_HEADER, expiresAt),
      credential_header: OPERATOR_TOKEN_HEADER,
      credential_expires_at: expiresAt.toISOString(),
      do_not_persist_in_memory: ['credential', 'operator_token', 'poll_secret', 'refresh_token'],
      persist_in_credential_store: ['credential', 'operator_token'],
    };
  }
}
