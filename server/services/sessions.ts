// Verification sessions: creation (merchant, agent-started "public", and account self-verification) and the
// create-response body agents rely on. (Issue 4 extends this service with polling, the verify page flow,
// KYC outcomes, refresh tokens and wallet claims.)
import type { Knex } from 'knex';
import type { AgentInstructions } from '../../shared/errors';
import type { Config } from '../config';
import { newSecret, sha256Hex } from '../crypto';
import type { SessionKind, SessionRow, SessionsRepository } from '../repositories/sessions';

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
  /** JSON-encoded {action, steps, user_message} for older gates (REFERENCE.md). */
  agent_instructions: string;
}

export interface CreateSessionInput {
  kind: SessionKind;
  merchantAccountId?: string | null;
  operatorAccountId?: string | null;
  context?: string | null;
  productName?: string | null;
  clientId?: string | null;
}

export class SessionsService {
  constructor(
    private readonly db: Knex,
    private readonly sessions: SessionsRepository,
    private readonly config: Config,
    private readonly now: () => Date,
  ) {}

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
          // Only agent-started sessions issue refresh tokens (DESIGN.md §3.4).
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
      `Give the user this link and ask them to complete verification in a browser: ${verifyUrl}`,
      `Poll GET ${pollUrl} every ${POLL_INTERVAL_SECONDS} seconds with the header ${POLL_SECRET_HEADER}: <poll_secret>. Never put the poll secret in a URL.`,
      'When the status is "verified", store operator_token in your credential store (not in conversation memory).',
      'Retry the original merchant request with the header X-Operator-Token: <operator_token>.',
    ];
    const userMessage = 'To continue, verify your identity once using the link. It takes a few minutes and the link expires in one hour.';
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
      pattern_summary:
        'Merchants gated by kya need proof that a verified operator stands behind this agent. Present a stored operator credential in X-Operator-Token (or pay from a wallet the operator claimed). Without one, a 403 carries a verification session: send the user verify_url, poll poll_url with X-Poll-Secret, store the operator_token you receive, and retry.',
      identity_paths: [
        { method: 'operator_token', header: 'X-Operator-Token', when: 'you hold a live opc_ credential in your credential store' },
        { method: 'wallet', header: 'X-Wallet-Address', when: 'you pay from a wallet your operator claimed during verification' },
      ],
      bootstrap: {
        on_denial_with_verify_url: 'deliver verify_url to the user, poll poll_url with X-Poll-Secret every 5 s',
        on_token_expired: 'the 401 body carries a fresh session: repeat the verification bootstrap',
        self_start_endpoint: `${base}/v1/sessions/public`,
        refresh_endpoint: `${base}/v1/sessions/refresh`,
      },
      do_not_persist_in_memory: ['operator_token', 'poll_secret', 'refresh_token'],
      persist_in_credential_store: ['operator_token', 'refresh_token'],
      identity_check_endpoint: `${base}/v1/assess`,
    };
  }
}
