// Rotating refresh tokens for agent-started sessions (an agent with no merchant has nobody to start a new
// session for it, so it may renew its own credential). Each rotation retires the presented
// token and issues a child in the same family together with a new credential; presenting a token that was
// already rotated is treated as theft: the whole family and every credential it minted are revoked.
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { ApiError } from '../../shared/errors';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { displayPrefix, newSecret, sha256Hex } from '../crypto';
import type { RefreshTokenRow, RefreshTokensRepository } from '../repositories/refreshTokens';
import type { OperatorsRepository } from '../repositories/operators';
import type { CredentialsService } from './credentials';
import type { IdentityChanged } from './identity';
import { credentialCopy } from './agentCopy';

export const REFRESH_TOKEN_PREFIX = 'ort_';

export interface RefreshResponse {
  operator_token: string;
  token_ttl_seconds: number;
  refresh_token: string;
  refresh_token_ttl_seconds: number;
}

function refused(): ApiError {
  // One answer for unknown, expired, revoked and reused tokens: no oracle for guessing.
  return new ApiError('invalid_credential', 'The refresh token is not valid. Start a new verification session.', {
    top: {
      next_steps: {
        action: 'create_new_session',
        user_message: credentialCopy.refreshEnded,
      },
    },
  });
}

export interface RefreshTokensServiceOptions {
  db: Knex;
  tokens: RefreshTokensRepository;
  operators: OperatorsRepository;
  credentials: CredentialsService;
  config: Config;
  logger: Logger;
  now: () => Date;
  identityChanged: IdentityChanged;
}

export class RefreshTokensService {
  private readonly db: Knex;
  private readonly tokens: RefreshTokensRepository;
  private readonly operators: OperatorsRepository;
  private readonly credentials: CredentialsService;
  private readonly config: Config;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly identityChanged: IdentityChanged;

  constructor(options: RefreshTokensServiceOptions) {
    this.db = options.db;
    this.tokens = options.tokens;
    this.operators = options.operators;
    this.credentials = options.credentials;
    this.config = options.config;
    this.logger = options.logger;
    this.now = options.now;
    this.identityChanged = options.identityChanged;
  }

  get ttlSeconds(): number {
    return this.config.sessions.refreshTokenTtlDays * 86400;
  }

  static isShaped(token: unknown): token is string {
    return typeof token === 'string' && token.startsWith(REFRESH_TOKEN_PREFIX) && token.length >= 20 && token.length <= 128;
  }

  /** Issues a refresh token: a new family, or the child of `parent` in the parent's family. */
  async issue(input: { accountId: string; parent?: RefreshTokenRow }, trx: Knex.Transaction): Promise<{ row: RefreshTokenRow; token: string }> {
    const token = newSecret(REFRESH_TOKEN_PREFIX, 32);
    const now = this.now();
    const row = await this.tokens.insert(
      {
        token: {
          account_id: input.accountId,
          family_id: input.parent?.family_id ?? crypto.randomUUID(),
          parent_id: input.parent?.id ?? null,
          token_hash: sha256Hex(token),
          prefix: displayPrefix(token),
          created_at: now,
          expires_at: new Date(now.getTime() + this.ttlSeconds * 1000),
        },
      },
      trx,
    );
    return { row, token };
  }

  /** Rotates a presented refresh token into a new credential + refresh token. */
  async refresh(presented: unknown): Promise<RefreshResponse> {
    if (!RefreshTokensService.isShaped(presented)) throw refused();
    const outcome = await this.db.transaction(async (trx) => {
      const now = this.now();
      // The row lock serialises concurrent refreshes of one token: exactly one rotates, the rest see reuse.
      const current = await this.tokens.findByHash({ tokenHash: sha256Hex(presented), forUpdate: true }, trx);
      if (!current) return { kind: 'refused' as const };
      if (current.rotated_at) {
        const revoked = await this.tokens.revokeFamily({ familyId: current.family_id, at: now }, trx);
        // Committed (not rolled back): the revocation must stick even though the caller gets an error.
        return { kind: 'reused' as const, familyId: current.family_id, accountId: current.account_id, revoked };
      }
      if (current.revoked_at || current.expires_at.getTime() <= now.getTime()) return { kind: 'refused' as const };
      const account = await this.operators.findAccount({ id: current.account_id }, trx);
      if (!account || account.status !== 'active' || account.kyc_status !== 'verified' || account.sanctions_status === 'flagged') {
        return { kind: 'refused' as const };
      }
      if (!(await this.tokens.markRotated({ id: current.id, at: now }, trx))) return { kind: 'refused' as const };
      const next = await this.issue({ accountId: current.account_id, parent: current }, trx);
      const minted = await this.credentials.mint(
        {
          accountId: current.account_id,
          ttlSeconds: this.config.sessions.tokenTtlSeconds,
          source: 'refresh',
          refreshTokenId: next.row.id,
          mintedByRefreshTokenId: current.id,
        },
        trx,
      );
      return { kind: 'rotated' as const, token: minted.token, refreshToken: next.token };
    });
    if (outcome.kind === 'reused') {
      const { credentialIds, ...counts } = outcome.revoked;
      await this.identityChanged({ operatorId: outcome.accountId, credentialIds });
      this.logger.warn({ family: outcome.familyId, ...counts }, 'refresh token reuse detected; family revoked');
      throw refused();
    }
    if (outcome.kind === 'refused') throw refused();
    return {
      operator_token: outcome.token,
      token_ttl_seconds: this.config.sessions.tokenTtlSeconds,
      refresh_token: outcome.refreshToken,
      refresh_token_ttl_seconds: this.ttlSeconds,
    };
  }
}
