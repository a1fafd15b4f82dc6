// Verification sessions: creation (merchant, agent-started "public", and account self-verification), the
// create-response body agents rely on, and polling with exactly-once delivery of the operator token: the
// credential is minted inside the transaction whose conditional UPDATE moves the session verified → consumed.
import type { Knex } from 'knex';
import { ApiError, type AgentInstructions } from '../../shared/errors';
import type { Config } from '../config';
import { newSecret, safeEqual, sha256Hex } from '../crypto';
import type { SessionKind, SessionRow, SessionsRepository } from '../repositories/sessions';
import type { CredentialsService } from './credentials';
import type { RefreshTokensService } from './refreshTokens';
import { memoryCopy, pollCopy, sessionCopy } from './agentCopy';
import { emitSessionEvent, type WebhookEmitter } from '../webhooks/events';

export const POLL_SECRET_HEADER = 'X-Poll-Secret';
export const POLL_INTERVAL_SECONDS = 5;

export interface CreatedSession {
  session_id: string;
  poll_secret: string;
  verify_url: string;
  poll_url: string;
  expires_at: string;
  next_steps: {
    action: 'deliver_verify_url_and_poll';
    poll_interval_seconds: number;
    poll_secret_header: string;
    steps: string[];
    user_message: string;
  };
  agent_memory: Record<string, unknown>;
  /** JSON-encoded {action, steps, user_message}: the encoding older gates parse. */
  agent_instructions: string;
}

export type PollBody =
  | {
      session_id: string;
      status: 'pending';
      retry_after_seconds: number;
      next_steps: { action: 'continue_polling'; poll_interval_seconds: number; eta_message: string };
    }
  | {
      session_id: string;
      status: 'verified';
      operator_token: string;
      completed_at: string;
      token_ttl_seconds: number;
      refresh_token?: string;
      refresh_token_ttl_seconds?: number;
      next_steps: { action: 'retry_merchant_request_with_operator_token'; header_name: 'X-Operator-Token'; user_message: string };
    }
  | { session_id: string; status: 'consumed'; next_steps: { action: 'use_stored_operator_token'; user_message: string } }
  | { session_id: string; status: 'expired'; next_steps: { action: 'create_new_session'; user_message: string } }
  | { session_id: string; status: 'failed'; next_steps: { action: 'verification_failed'; user_message: string } }
  | {
      session_id: string;
      status: 'flagged';
      next_steps: { action: 'contact_support'; support_email: string; support_subject: string; user_message: string };
    };

/** Collaborators polling needs to mint the credential (and refresh token) at delivery time. */
export interface SessionDelivery {
  credentials: CredentialsService;
  refreshTokens: RefreshTokensService;
  webhooks?: WebhookEmitter;
}

const SESSION_ID_RE = /^vs_[0-9A-Za-z]{20,64}$/;
// Compared against when the session does not exist, so unknown ids and wrong secrets cost the same.
const DUMMY_HASH = sha256Hex('kya:no-such-session');

export interface CreateSessionInput {
  kind: SessionKind;
  merchantAccountId?: string | null;
  operatorAccountId?: string | null;
  context?: string | null;
  productName?: string | null;
  clientId?: string | null;
}

export interface SessionsServiceOptions {
  db: Knex;
  sessions: SessionsRepository;
  config: Config;
  now: () => Date;
  delivery?: SessionDelivery;
}

export class SessionsService {
  private readonly db: Knex;
  private readonly sessions: SessionsRepository;
  private readonly config: Config;
  private readonly now: () => Date;
  private readonly delivery: SessionDelivery | undefined;

  constructor(options: SessionsServiceOptions) {
    this.db = options.db;
    this.sessions = options.sessions;
    this.config = options.config;
    this.now = options.now;
    this.delivery = options.delivery;
  }

  static isSessionId(id: unknown): id is string {
    return typeof id === 'string' && SESSION_ID_RE.test(id);
  }

  /**
   * The session when `id` exists and `pollSecret` is its secret; otherwise one `not_found` for both cases
   * (no oracle for guessing session ids), with the same hash comparison on both paths.
   */
  async authenticatePoll(id: unknown, pollSecret: string): Promise<SessionRow> {
    const row = SessionsService.isSessionId(id) ? await this.sessions.findById({ id }) : undefined;
    const matches = safeEqual(sha256Hex(pollSecret), row?.poll_secret_hash ?? DUMMY_HASH);
    if (!row || !matches) throw new ApiError('not_found', 'Session not found.');
    return row;
  }

  /** One poll: the body for the session's current status; a verified session delivers its token exactly once. */
  async poll(id: unknown, pollSecret: string): Promise<PollBody> {
    let row = await this.authenticatePoll(id, pollSecret);
    const now = this.now();
    if (row.status === 'pending' && row.expires_at.getTime() <= now.getTime()) {
      row = (await this.expire(row.id, now)) ?? (await this.sessions.findById({ id: row.id }))!;
    }
    if (row.status === 'verified') {
      const delivered = await this.deliver(row.id);
      if (delivered) return delivered;
      row = (await this.sessions.findById({ id: row.id }))!;
    }
    return this.pollBody(row);
  }

  /**
   * verified → consumed and the credential minted in the same transaction. Only the caller whose conditional
   * UPDATE matched gets the plaintext token; it never rests in the database, and two concurrent polls on
   * two instances can never both receive it.
   */
  private async deliver(id: string): Promise<PollBody | null> {
    if (!this.delivery) throw new Error('SessionsService was built without credential delivery');
    const { credentials, refreshTokens } = this.delivery;
    return this.db.transaction(async (trx) => {
      const now = this.now();
      const row = await this.sessions.consumeIfVerified({ id, at: now }, trx);
      if (!row) return null;
      if (!row.operator_account_id) throw new Error(`verified session ${row.id} has no operator account`);
      const refresh = row.issue_refresh_token ? await refreshTokens.issue({ accountId: row.operator_account_id }, trx) : null;
      const minted = await credentials.mint(
        {
          accountId: row.operator_account_id,
          ttlSeconds: this.config.sessions.tokenTtlSeconds,
          source: 'session',
          sessionId: row.id,
          refreshTokenId: refresh?.row.id ?? null,
        },
        trx,
      );
      const body: PollBody = {
        session_id: row.id,
        status: 'verified',
        operator_token: minted.token,
        completed_at: (row.completed_at ?? now).toISOString(),
        token_ttl_seconds: this.config.sessions.tokenTtlSeconds,
        ...(refresh ? { refresh_token: refresh.token, refresh_token_ttl_seconds: refreshTokens.ttlSeconds } : {}),
        next_steps: {
          action: 'retry_merchant_request_with_operator_token',
          header_name: 'X-Operator-Token',
          user_message: pollCopy.verified,
        },
      };
      return body;
    });
  }

  /** The GET /v1/sessions/{session_id} body for a status other than a delivering `verified`. */
  pollBody(row: SessionRow): PollBody {
    const session_id = row.id;
    switch (row.status) {
      case 'pending':
        return {
          session_id,
          status: 'pending',
          retry_after_seconds: POLL_INTERVAL_SECONDS,
          next_steps: {
            action: 'continue_polling',
            poll_interval_seconds: POLL_INTERVAL_SECONDS,
            eta_message: pollCopy.pendingEta(row.expires_at),
          },
        };
      case 'verified':
      case 'consumed':
        // A `verified` row reaching here lost the delivery race: another poll holds the token.
        return {
          session_id,
          status: 'consumed',
          next_steps: {
            action: 'use_stored_operator_token',
            user_message: pollCopy.consumed,
          },
        };
      case 'expired':
        return {
          session_id,
          status: 'expired',
          next_steps: { action: 'create_new_session', user_message: pollCopy.expired },
        };
      case 'failed':
        return {
          session_id,
          status: 'failed',
          next_steps: {
            action: 'verification_failed',
            user_message: pollCopy.failed,
          },
        };
      case 'flagged':
        return {
          session_id,
          status: 'flagged',
          next_steps: {
            action: 'contact_support',
            support_email: this.config.supportEmail,
            support_subject: this.config.supportSubject,
            user_message: pollCopy.flagged(this.config.supportEmail, row.id),
          },
        };
    }
  }

  async findById(id: string): Promise<SessionRow | undefined> {
    return SessionsService.isSessionId(id) ? this.sessions.findById({ id }) : undefined;
  }

  /** The session as it stands now: a pending session past its TTL is moved to `expired` first. */
  async current(id: string): Promise<SessionRow | undefined> {
    const row = await this.findById(id);
    const now = this.now();
    if (row && row.status === 'pending' && row.expires_at.getTime() <= now.getTime()) {
      return (await this.expire(row.id, now)) ?? this.sessions.findById({ id: row.id });
    }
    return row;
  }

  /** pending → expired when due, with its webhook event in the same transaction. */
  private async expire(id: string, now: Date): Promise<SessionRow | undefined> {
    return this.db.transaction(async (trx) => {
      const row = await this.sessions.expireIfDue({ id, now }, trx);
      await emitSessionEvent(this.delivery?.webhooks, trx, this.config.serverSecret, row);
      return row;
    });
  }

  /** Expires merchant sessions past their TTL that nobody looked at, so their merchants hear `session.expired`. */
  async expireOverdue(limit = 200): Promise<number> {
    const now = this.now();
    const ids = await this.sessions.overduePendingIds({ now, limit });
    let n = 0;
    for (const id of ids) if (await this.expire(id, now)) n++;
    return n;
  }

  async setKycReference(id: string, provider: string, reference: string, returnKeyHash: string): Promise<void> {
    await this.sessions.setKycReference({ id, provider, reference, returnKeyHash });
  }

  verifyUrl(sessionId: string): string {
    return `${this.config.publicBaseUrl}/verify/${encodeURIComponent(sessionId)}`;
  }

  pollUrl(sessionId: string): string {
    return `${this.config.publicBaseUrl}/v1/sessions/${encodeURIComponent(sessionId)}`;
  }

  /** Creates a pending session; the poll secret is returned once and stored only as a hash. */
  async create(input: CreateSessionInput, trx?: Knex.Transaction): Promise<{ row: SessionRow; body: CreatedSession }> {
    const id = newSecret('vs_', 24);
    const pollSecret = newSecret('ps_', 32);
    const row = await this.sessions.insert(
      {
        session: {
          id,
          poll_secret_hash: sha256Hex(pollSecret),
          kind: input.kind,
          merchant_account_id: input.merchantAccountId ?? null,
          operator_account_id: input.operatorAccountId ?? null,
          client_id: input.clientId ?? null,
          context: input.context ?? null,
          product_name: input.productName ?? null,
          // Only agent-started sessions issue refresh tokens: a merchant-started session's agent gets a new
          // session from that merchant when its credential expires.
          issue_refresh_token: input.kind === 'public',
          expires_at: new Date(this.now().getTime() + this.config.sessions.ttlSeconds * 1000),
        },
      },
      trx,
    );
    return { row, body: this.createBody(row, pollSecret) };
  }

  private createBody(row: SessionRow, pollSecret: string): CreatedSession {
    const verifyUrl = this.verifyUrl(row.id);
    const pollUrl = this.pollUrl(row.id);
    const steps = [
      sessionCopy.deliverStep(verifyUrl),
      sessionCopy.pollStep(pollUrl, POLL_INTERVAL_SECONDS, POLL_SECRET_HEADER),
      sessionCopy.storeStep,
      sessionCopy.retryStep,
    ];
    const userMessage = sessionCopy.userMessage(this.config.sessions.ttlSeconds);
    const instructions: AgentInstructions = { action: 'deliver_verify_url_and_poll', steps, user_message: userMessage };
    return {
      session_id: row.id,
      poll_secret: pollSecret,
      verify_url: verifyUrl,
      poll_url: pollUrl,
      expires_at: row.expires_at.toISOString(),
      next_steps: {
        action: 'deliver_verify_url_and_poll',
        poll_interval_seconds: POLL_INTERVAL_SECONDS,
        poll_secret_header: POLL_SECRET_HEADER,
        steps,
        user_message: userMessage,
      },
      agent_memory: this.agentMemory(),
      agent_instructions: JSON.stringify(instructions),
    };
  }

  /** What an agent should remember about the pattern (never secrets). */
  agentMemory(): Record<string, unknown> {
    const base = this.config.publicBaseUrl;
    return {
      pattern_summary: memoryCopy.pattern,
      identity_paths: memoryCopy.identityPaths,
      bootstrap: {
        on_denial_with_verify_url: sessionCopy.onDenialWithVerifyUrl(POLL_INTERVAL_SECONDS),
        on_token_expired: memoryCopy.onTokenExpired,
        self_start_endpoint: `${base}/v1/sessions/public`,
        refresh_endpoint: `${base}/v1/sessions/refresh`,
      },
      do_not_persist_in_memory: ['operator_token', 'poll_secret', 'refresh_token'],
      persist_in_credential_store: ['operator_token', 'refresh_token'],
      identity_check_endpoint: `${base}/v1/assess`,
    };
  }
}
