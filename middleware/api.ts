// Typed client for the kya identity API (`@kya/gate/client`): one method per endpoint, typed request and
// response shapes, one error class per error code, quota from the X-Quota-* headers. It rides on the gate's
// own transport (keep-alive, per-attempt timeout, one retry for 5xx/429 honouring Retry-After, never for
// quota_exceeded or contact_merchant), and the gate calls the identity server through it.
import type { AssessResponse, CreatedCredential, CredentialSummary, TokenExpiredBody } from '../shared/types';
import type { AgentInstructions } from '../shared/errors';

export type { CredentialSummary };
import { IdentityClient, type CallOutcome } from './client';
import { GATE_VERSION } from './options';
import type {
  AddressFamily,
  AssessRequestBody,
  AssessResponseBody,
  ErrorResponseBody,
  QuotaInfo,
  SessionBody,
  WalletCaptureBody,
  WalletCaptureResponse,
} from './wire';

export type { ErrorCode } from '../shared/errors';
export type { AssessRequest, AssessResponse, Policy, SignerMatch, SignerSanctions } from '../shared/types';
export type { AssessRequestBody, AssessResponseBody, QuotaInfo, SessionBody, WalletCaptureBody, WalletCaptureResponse } from './wire';

export interface KyaClientOptions {
  /** Merchant API key (`as_live_…`). Required. */
  apiKey: string;
  /** Identity server address, e.g. `https://id.example.com`. Required. */
  baseUrl: string;
  /** Per-attempt timeout in ms. Default: `3000`. */
  timeoutMs?: number;
  /** Default: `kya-client/<version>`. */
  userAgent?: string;
}

export interface SessionCreateInput {
  context?: string;
  /** Shown on the verification page (max 200 characters). */
  productName?: string;
}

export type SessionStatus = 'pending' | 'verified' | 'consumed' | 'expired' | 'failed' | 'flagged';

export interface SessionPoll {
  session_id: string;
  status: SessionStatus;
  next_steps: Record<string, unknown>;
  retry_after_seconds?: number;
  /** Verified polls only, exactly once. */
  operator_token?: string;
  completed_at?: string;
  token_ttl_seconds?: number;
  [extra: string]: unknown;
}

/** The created credential as the client returns it (`agent_memory` stays optional in the client's public type). */
export type CredentialCreated = Omit<CreatedCredential, 'agent_memory'> & { agent_memory?: CreatedCredential['agent_memory'] };

export interface CredentialList {
  account_verification: {
    kyc_status: string;
    kyc_verified_at?: string;
    jurisdiction?: string;
    age_verified?: boolean;
    age_bracket?: string;
    sanctions_clear?: boolean | null;
    sanctions_checked_at?: string | null;
    operator_type?: string;
  };
  credentials: CredentialSummary[];
}

export interface ReputationProfile {
  subject: { address: string; chains: string[] };
  score: { value: number; grade: string; scored_at: string; status: 'scored' | 'stale' | 'known_unscored'; version: string } | null;
  verification_level: 'none' | 'wallet_claimed' | 'kyc_verified';
  chains: Array<Record<string, unknown>>;
  agents?: Array<{ token_id: number; chain: string; name: string | null; score: number | null; grade: string | null }>;
  data_semantics?: string;
  caveats?: string[];
  updated_at?: string;
  [extra: string]: unknown;
}

/** A successful answer with the quota headers that came with it (null when the account has no quota). */
export interface WithQuota<T> {
  data: T;
  quota: QuotaInfo | null;
}

// --------------------------------------------------------------------------------------------- errors

export type AgentInstructionsEnvelope = Partial<AgentInstructions>;

/** Any non-2xx answer; `code` is the server's error code, `body` the whole response body. */
export class ApiError extends Error {
  readonly status: number;
  /** An `ErrorCode`, or a code this client version does not know yet. */
  readonly code: string;
  readonly body: ErrorResponseBody | null;
  readonly quota: QuotaInfo | null;
  /** The server's instructions for an agent (object form, parsed when it came JSON-encoded). */
  readonly agentInstructions: AgentInstructionsEnvelope | null;

  constructor(status: number, body: ErrorResponseBody | null, quota: QuotaInfo | null) {
    super(typeof body?.error?.message === 'string' ? body.error.message : `identity server answered ${status}`);
    this.name = new.target.name;
    this.status = status;
    this.code = typeof body?.error?.code === 'string' ? body.error.code : 'api_error';
    this.body = body;
    this.quota = quota;
    this.agentInstructions = parseInstructions(body?.agent_instructions);
  }
}

/** 429 `quota_exceeded`: the account's cap; retrying does not lift it. */
export class QuotaExceededError extends ApiError {}
/** 429 `rate_limited`: wait `retryAfter` seconds. */
export class RateLimitedError extends ApiError {
  constructor(
    status: number,
    body: ErrorResponseBody | null,
    quota: QuotaInfo | null,
    readonly retryAfter: number | null,
  ) {
    super(status, body, quota);
  }
}
/** 401 `token_expired`: the credential lapsed or was revoked; `session` is the verification session the server minted. */
export class TokenExpiredError extends ApiError {
  readonly session: SessionBody | null;
  constructor(status: number, body: ErrorResponseBody | null, quota: QuotaInfo | null) {
    super(status, body, quota);
    const b = body as (ErrorResponseBody & Partial<TokenExpiredBody>) | null;
    if (b && typeof b.session_id === 'string') {
      const { error: _error, ...session } = b;
      this.session = session as unknown as SessionBody;
    } else this.session = null;
  }
}
/** 401 `invalid_credential`: the operator credential never existed (permanent). */
export class InvalidCredentialError extends ApiError {}
/** 401 `signup_required`: missing or invalid API key. */
export class SignupRequiredError extends ApiError {}
/** 402 `payment_required`: the endpoint is not enabled for this account. */
export class PaymentRequiredError extends ApiError {}
/** 403 `account_cancelled`. */
export class AccountCancelledError extends ApiError {}
/** 404 `not_found` / `unknown_address` (`can_assess` tells whether assess would index it). */
export class NotFoundError extends ApiError {}
/** 409 `kyc_required` (credential creation before identity verification; body has verify_url). */
export class KycRequiredError extends ApiError {}
/** Any 400 (`bad_request`, `invalid_address`, `invalid_identity`, `invalid_network`, `invalid_wallet`, …). */
export class BadRequestError extends ApiError {}
/** No usable answer: timeout, refused/reset connection, or a 2xx that is not JSON. */
export class NetworkError extends Error {
  constructor(
    readonly reason: 'timeout' | 'unreachable' | 'bad_response',
    message: string,
  ) {
    super(message);
    this.name = 'NetworkError';
  }
}

function parseInstructions(raw: ErrorResponseBody['agent_instructions'] | undefined): AgentInstructionsEnvelope | null {
  if (!raw) return null;
  if (typeof raw === 'object') return raw;
  try {
    const parsed = JSON.parse(raw) as unknown;
    return parsed && typeof parsed === 'object' ? parsed : null;
  } catch {
    return null;
  }
}

/** The typed error for one failed call. */
export function toError(outcome: Exclude<CallOutcome<unknown>, { kind: 'ok' }>): ApiError | NetworkError {
  if (outcome.kind === 'network') return new NetworkError(outcome.reason, outcome.message);
  const { status, body, quota } = outcome;
  const code = body?.error?.code;
  if (code === 'quota_exceeded') return new QuotaExceededError(status, body, quota);
  if (code === 'rate_limited' || (status === 429 && code === undefined)) return new RateLimitedError(status, body, quota, outcome.retryAfterSeconds);
  if (code === 'token_expired') return new TokenExpiredError(status, body, quota);
  if (code === 'invalid_credential') return new InvalidCredentialError(status, body, quota);
  if (code === 'signup_required') return new SignupRequiredError(status, body, quota);
  if (code === 'payment_required') return new PaymentRequiredError(status, body, quota);
  if (code === 'account_cancelled') return new AccountCancelledError(status, body, quota);
  if (code === 'kyc_required') return new KycRequiredError(status, body, quota);
  if (status === 404) return new NotFoundError(status, body, quota);
  if (status === 400) return new BadRequestError(status, body, quota);
  return new ApiError(status, body, quota);
}

// --------------------------------------------------------------------------------------------- client

export class KyaClient {
  /** The transport; `outcome` methods below return its never-throwing values (the gate's hot path uses them). */
  readonly transport: IdentityClient;

  constructor(options: KyaClientOptions | { transport: IdentityClient }) {
    if ('transport' in options) {
      this.transport = options.transport;
      return;
    }
    if (!options || typeof options.apiKey !== 'string' || options.apiKey.length === 0) throw new TypeError('KyaClient: apiKey is required');
    let baseUrl: URL;
    try {
      baseUrl = new URL(options.baseUrl);
    } catch {
      throw new TypeError(`KyaClient: baseUrl must be an absolute http(s) URL (got ${JSON.stringify(options.baseUrl)})`);
    }
    if (!baseUrl.pathname.endsWith('/')) baseUrl.pathname += '/';
    this.transport = new IdentityClient({
      baseUrl,
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? 3000,
      userAgent: options.userAgent ?? `kya-client/${GATE_VERSION}`,
    });
  }

  /** Never-throwing calls (used by the gate): every outcome is a value. */
  readonly outcome = {
    assess: (body: AssessRequestBody) => this.transport.post<AssessResponseBody>('v1/assess', body, { retry: true }),
    createSession: (body: { context?: string; product_name?: string }) => this.transport.post<SessionBody>('v1/sessions', body, { retry: true }),
    captureWallet: (body: WalletCaptureBody) => this.transport.post<WalletCaptureResponse>('v1/credentials/wallets', body, { retry: false }),
  };

  /** POST /v1/assess. */
  async assess(body: AssessRequestBody): Promise<WithQuota<AssessResponse>> {
    return withQuota(await this.outcome.assess(body)) as WithQuota<AssessResponse>;
  }

  readonly sessions = {
    /** POST /v1/sessions. */
    create: async (input: SessionCreateInput = {}): Promise<SessionBody> => {
      const body: { context?: string; product_name?: string } = {};
      if (input.context !== undefined) body.context = input.context;
      if (input.productName !== undefined) body.product_name = input.productName;
      return unwrap(await this.outcome.createSession(body));
    },
    /** GET /v1/sessions/{id} with the session's poll secret. */
    poll: async (sessionId: string, pollSecret: string): Promise<SessionPoll> =>
      unwrap(
        await this.transport.request<SessionPoll>('GET', `v1/sessions/${encodeURIComponent(sessionId)}`, undefined, {
          retry: true,
          headers: { 'x-poll-secret': pollSecret },
        }),
      ),
  };

  readonly credentials = {
    /** POST /v1/credentials (`ttlDays` 1–365). The credential value is in the answer once. */
    create: async (input: { label?: string; ttlDays?: number } = {}): Promise<CredentialCreated> => {
      const body: { label?: string; ttl_days?: number } = {};
      if (input.label !== undefined) body.label = input.label;
      if (input.ttlDays !== undefined) body.ttl_days = input.ttlDays;
      return unwrap(await this.transport.post<CredentialCreated>('v1/credentials', body, { retry: false }));
    },
    /** GET /v1/credentials. */
    list: async (): Promise<CredentialList> => unwrap(await this.transport.request<CredentialList>('GET', 'v1/credentials', undefined, { retry: true })),
    /** DELETE /v1/credentials/{id}; `id` is the credential id or the `opc_…` value. */
    revoke: async (id: string): Promise<{ id: string; revoked: true }> =>
      unwrap(await this.transport.request<{ id: string; revoked: true }>('DELETE', `v1/credentials/${encodeURIComponent(id)}`, undefined, { retry: true })),
  };

  readonly wallets = {
    /** POST /v1/credentials/wallets: report the wallet that paid under an operator credential. */
    capture: async (input: {
      operatorToken: string;
      walletAddress: string;
      network: AddressFamily;
      idempotencyKey?: string;
    }): Promise<WalletCaptureResponse> => {
      const body: WalletCaptureBody = { operator_token: input.operatorToken, wallet_address: input.walletAddress, network: input.network };
      if (input.idempotencyKey !== undefined) body.idempotency_key = input.idempotencyKey;
      return unwrap(await this.outcome.captureWallet(body));
    },
  };

  /** GET /v1/reputation/{address}[?chain=]. */
  async reputation(address: string, options: { chain?: string } = {}): Promise<ReputationProfile> {
    const query = options.chain ? `?chain=${encodeURIComponent(options.chain)}` : '';
    return unwrap(await this.transport.request<ReputationProfile>('GET', `v1/reputation/${encodeURIComponent(address)}${query}`, undefined, { retry: true }));
  }

  /** Closes the keep-alive sockets. */
  close(): void {
    this.transport.close();
  }
}

function withQuota<T>(outcome: CallOutcome<T>): WithQuota<T> {
  if (outcome.kind !== 'ok') throw toError(outcome);
  return { data: outcome.body, quota: outcome.quota };
}

function unwrap<T>(outcome: CallOutcome<T>): T {
  return withQuota(outcome).data;
}
