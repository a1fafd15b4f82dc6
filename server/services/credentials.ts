// Operator credentials (`opc_…`): minting and resolving a presented token. Tokens are stored as SHA-256
// hashes; resolution is an index probe on the hash, so unknown and wrong tokens take the same path.
// (Issue 5 extends this service with create/list/revoke, refresh and cascade revocation.)
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { displayPrefix, newSecret, sha256Hex } from '../crypto';
import type { CredentialRow, CredentialsRepository } from '../repositories/credentials';

export const CREDENTIAL_PREFIX = 'opc_';

export type CredentialResolution =
  | { status: 'live'; credential: CredentialRow }
  /** Existed once but is revoked or past its TTL (not disclosed which): 401 token_expired + a new session. */
  | { status: 'expired'; credential: CredentialRow }
  /** Never existed (or is not even shaped like a credential): 401 invalid_credential, no session. */
  | { status: 'unknown' };

export class CredentialsService {
  private pendingTouches = new Map<string, Date>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Knex,
    private readonly credentials: CredentialsRepository,
    private readonly logger: Logger,
    private readonly now: () => Date,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flushTouches(), 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flushTouches();
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
    const credential = await this.credentials.findByHash({ tokenHash: sha256Hex(token) }, trx);
    if (!credential) return { status: 'unknown' };
    if (credential.revoked_at || credential.expires_at.getTime() <= this.now().getTime()) return { status: 'expired', credential };
    this.pendingTouches.set(credential.id, this.now());
    return { status: 'live', credential };
  }

  async flushTouches(): Promise<void> {
    if (this.pendingTouches.size === 0) return;
    const batch = this.pendingTouches;
    this.pendingTouches = new Map();
    try {
      await this.credentials.touch({ uses: [...batch].map(([id, at]) => ({ id, at })) });
    } catch (err) {
      this.logger.debug({ err: (err as Error).message }, 'last_used_at update failed');
    }
  }
}
