// The gate's decision logic, free of any web framework: reads identity and payment signer, asks the identity
// server (through the cache and in-flight coalescing), and returns a tagged union — allow, degraded-allow or
// deny with the exact status and body — that an adapter (express.ts) turns into a response.
import { parseAddress, type ParsedAddress } from '../shared/address';
import { isChain, CHAINS } from '../shared/chains';
import { cacheKey, ttlFor, VERIFICATION_FIXABLE, DecisionCache, type CachedAssess } from './cache';
import { IdentityClient, type CallOutcome } from './client';
import type { GateConfig, GateDenial, GateIdentity, SessionOptions } from './options';
import { extractPaymentSigner, type PaymentSigner, type SignerErrorCode } from './signer';
import type { AddressFamily, AssessRequestBody, AssessResponseBody, ErrorResponseBody, QuotaInfo, SessionBody, SignerMatch, SignerSanctions } from './wire';

export type InfraReason = 'network_timeout' | 'api_error' | 'quota_exceeded';

/** Codes the gate itself puts in `error.code` (besides the server's decision reasons it passes through). */
export type GateCode =
  | 'identity_required'
  | 'invalid_address'
  | 'wallet_signer_mismatch'
  | 'wallet_auth_requires_wallet_signing'
  | 'token_expired'
  | 'invalid_credential'
  | 'api_error'
  | SignerErrorCode;

export interface SignerVerdict {
  /** What the payment headers proved (or claimed). */
  signer: PaymentSigner;
  /** The server's `signer_match` for this exact signer; null when assess did not run or returned none. */
  match: SignerMatch | null;
  sanctions: SignerSanctions | null;
}

/** Everything the gate learned about one request; built per request, never shared between requests. */
export interface GateResult {
  decision: 'allow' | 'deny';
  /** True when the request passed only because failOpen covered an identity-server failure. */
  degraded: boolean;
  infra_reason: InfraReason | null;
  identity: { method: 'operator_token' | 'wallet' | null; wallet_address: string | null; wallet_network: AddressFamily | null };
  /** The assess response (frozen); null when assess did not run or failed. */
  assess: Readonly<AssessResponseBody> | null;
  /** Pairwise operator handle (`oph_…`), token mode only: key durable per-buyer state on it. */
  operator_handle: string | null;
  signer: SignerVerdict | null;
  /** Quota headers of the assess response that decided (possibly cached). */
  quota: Readonly<QuotaInfo> | null;
  /** True when the decision came from the cache rather than a call for this request. */
  cached: boolean;
  denial: { status: number; code: string; reasons: string[] } | null;
}

/** Private per-request context for wallet capture (holds the bearer token; never exposed via GateResult). */
export interface CaptureContext {
  operatorToken: string | null;
  signer: PaymentSigner | null;
}

export type Evaluation =
  | { kind: 'allow'; result: GateResult; capture: CaptureContext }
  | { kind: 'degraded-allow'; result: GateResult; infraReason: InfraReason; capture: CaptureContext }
  | { kind: 'deny'; result: GateResult; denial: GateDenial; capture: CaptureContext };

/** Thrown (to the framework's error handler) when merchant code hands the gate something unusable. */
export class GateRuntimeError extends Error {
  constructor(message: string) {
    super(`kya gate: ${message}`);
    this.name = 'GateRuntimeError';
  }
}

type Headers = Record<string, string | string[] | undefined>;

/** Top-level denial fields that onBeforeSession extras may never replace. */
const RESERVED_FIELDS = new Set([
  'error', 'decision', 'reasons', 'verify_url', 'session_id', 'poll_secret', 'poll_url', 'expires_at', 'next_steps',
  'agent_instructions', 'agent_memory', 'infra_reason', 'linked_wallets', 'expected_signer', 'actual_signer',
]);

const RETRY_WITH_BACKOFF = {
  action: 'retry_with_backoff',
  steps: [
    'Wait 5 seconds, then retry the same request.',
    'Double the wait after each failure, up to 30 seconds.',
    'If it still fails after 5 minutes, tell the user the merchant cannot verify identity right now.',
  ],
  user_message: 'The merchant cannot check identity right now. Retrying shortly.',
};

const CONTACT_MERCHANT = {
  action: 'contact_merchant',
  steps: ['Do not retry: the problem is on the merchant side.', 'Tell the user the merchant cannot accept agent purchases right now.'],
  user_message: 'This merchant cannot verify agent identity at the moment. Please contact the merchant.',
};

const PRESENT_IDENTITY = {
  action: 'present_identity',
  steps: [
    'Retry with the header X-Operator-Token: <operator credential> from your credential store,',
    'or with X-Wallet-Address: <wallet your operator claimed> and a payment signed by that wallet.',
    'Without either, ask your operator to verify once and obtain an operator credential.',
  ],
  user_message: 'This merchant requires a verified operator behind the agent.',
};

function header(headers: Headers, name: string): string | null {
  const raw = headers[name];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  // Whitespace-only headers are absent, not an identity.
  return value ? value : null;
}

function bodyMessage(body: ErrorResponseBody | null, fallback: string): string {
  return typeof body?.error?.message === 'string' ? body.error.message : fallback;
}

export class GateCore<Req = unknown, Res = unknown> {
  readonly client: IdentityClient;
  private readonly cache: DecisionCache<CachedAssess>;

  constructor(readonly config: Readonly<GateConfig<Req, Res>>) {
    this.client = new IdentityClient({ baseUrl: config.baseUrl, apiKey: config.apiKey, timeoutMs: config.timeoutMs, userAgent: config.userAgent });
    this.cache = new DecisionCache<CachedAssess>({ maxEntries: config.cacheMaxEntries, enabled: config.cacheTtlMs > 0, now: config.now });
  }

  /**
   * Decides one request. Synchronous when the answer is cached (the hot path: no promise, no microtask hop),
   * a promise when the identity server has to be asked or a session minted.
   */
  evaluate(req: Req, headers: Headers): Evaluation | Promise<Evaluation> {
    const identity = this.readIdentity(req, headers);
    if ('invalid' in identity) {
      return this.deny({ status: 400, code: 'invalid_address', message: `${identity.invalid} is not a valid EVM or Solana address.`, fields: {} }, emptyResult(), { operatorToken: null, signer: null });
    }
    const { operatorToken, wallet } = identity;
    const result = emptyResult();
    result.identity = { method: operatorToken ? 'operator_token' : wallet ? 'wallet' : null, wallet_address: wallet?.address ?? null, wallet_network: wallet?.network ?? null };

    const extraction = this.readSigner(req, headers);
    const capture: CaptureContext = { operatorToken, signer: extraction.kind === 'signer' ? extraction.signer : null };
    if (extraction.kind === 'invalid') {
      return this.deny({ status: 400, code: extraction.code, message: extraction.message, fields: { header: extraction.header } }, result, capture);
    }
    const signer = capture.signer;
    if (signer) result.signer = { signer, match: null, sanctions: null };

    if (!operatorToken && !wallet) return this.missingIdentity(req, result, capture);

    const chain = this.chainFor(req);
    // A rail without a wallet signature only means something against a claimed wallet; with a token it is
    // simply a card payment, so no signer is sent (and no wallet_auth_requires_wallet_signing verdict).
    const wireSigner = !signer ? null : signer.address !== null ? { address: signer.address, network: signer.network } : !operatorToken && wallet ? { address: null, network: wallet.network } : null;
    const key = cacheKey({ operatorToken, walletAddress: wallet?.address ?? null, policyKey: this.config.policyKey, chain, signer: wireSigner });
    const hit = this.cache.get(key);
    if (hit) {
      result.cached = true;
      return this.decide(req, hit, result, capture, { operatorToken, wallet });
    }
    const body: AssessRequestBody = {};
    if (wallet) body.address = wallet.address;
    if (operatorToken) body.operator_token = operatorToken;
    if (chain) body.chain = chain;
    if (this.config.policy) body.policy = this.config.policy;
    if (wireSigner) body.signer = wireSigner;
    return this.cache.coalesce(key, () => this.assess(key, body)).promise.then((outcome) =>
      outcome.kind === 'ok' ? this.decide(req, outcome.body, result, capture, { operatorToken, wallet }) : this.failure(req, outcome, result, capture),
    );
  }

  /** Calls assess and caches a usable answer; errors are returned (never cached). */
  private async assess(key: string, body: AssessRequestBody): Promise<CallOutcome<CachedAssess>> {
    const outcome = await this.client.post<AssessResponseBody>('v1/assess', body, { retry: true });
    if (outcome.kind !== 'ok') return outcome;
    // Frozen once here: every request that reuses this answer reads it, none can alter it for the others.
    const entry: CachedAssess = Object.freeze({ body: deepFreeze(outcome.body), quota: outcome.quota ? Object.freeze({ ...outcome.quota }) : null });
    this.cache.set(key, entry, ttlFor(entry.body, this.config.cacheTtlMs));
    return { ...outcome, body: entry };
  }

  private readIdentity(req: Req, headers: Headers): { operatorToken: string | null; wallet: ParsedAddress | null } | { invalid: string } {
    let token: string | null;
    let walletRaw: string | null;
    let walletLabel = 'X-Wallet-Address';
    if (this.config.extractIdentity) {
      const found: GateIdentity = this.config.extractIdentity(req) ?? {};
      token = typeof found.operatorToken === 'string' && found.operatorToken.trim() ? found.operatorToken.trim() : null;
      walletRaw = typeof found.walletAddress === 'string' && found.walletAddress.trim() ? found.walletAddress.trim() : null;
      walletLabel = 'walletAddress';
    } else {
      token = header(headers, 'x-operator-token');
      walletRaw = header(headers, 'x-wallet-address');
    }
    if (walletRaw === null) return { operatorToken: token, wallet: null };
    const wallet = parseAddress(walletRaw);
    return wallet ? { operatorToken: token, wallet } : { invalid: walletLabel };
  }

  private readSigner(req: Req, headers: Headers) {
    if (!this.config.extractSigner) return extractPaymentSigner(headers, this.config.signer);
    const custom = this.config.extractSigner(req);
    if (!custom) return { kind: 'none' as const };
    if (custom.address !== null) {
      const parsed = parseAddress(custom.address);
      if (!parsed) throw new GateRuntimeError(`extractSigner returned an address that is neither EVM nor Solana: ${JSON.stringify(custom.address)}`);
      return { kind: 'signer' as const, signer: { ...custom, address: parsed.address, network: parsed.network } };
    }
    return { kind: 'signer' as const, signer: custom };
  }

  private chainFor(req: Req): string | undefined {
    const chain = this.config.getChain ? (this.config.getChain(req) ?? this.config.chain) : this.config.chain;
    if (chain !== undefined && !isChain(chain)) throw new GateRuntimeError(`getChain returned ${JSON.stringify(chain)}; expected one of ${CHAINS.join(', ')}`);
    return chain;
  }

  /** Turns a successful assess answer into allow/deny. */
  private decide(
    req: Req,
    entry: CachedAssess,
    result: GateResult,
    capture: CaptureContext,
    who: { operatorToken: string | null; wallet: ParsedAddress | null },
  ): Evaluation | Promise<Evaluation> {
    const body = entry.body;
    result.assess = body;
    result.quota = entry.quota;
    result.operator_handle = typeof body.operator_handle === 'string' ? body.operator_handle : null;
    if (result.signer) result.signer = { ...result.signer, match: body.signer_match ?? null, sanctions: body.signer_sanctions ?? null };

    // The ecosystem treats a null decision as allow.
    if (body.decision === 'deny') {
      const reasons = [...(body.decision_reasons ?? [])];
      const fields: Record<string, unknown> = {};
      if (typeof body.verify_url === 'string') fields.verify_url = body.verify_url;
      const denial = { status: 403, code: reasons[0] ?? 'policy_denied', message: denialMessage(reasons), reasons, fields };
      if (this.config.session && reasons.length > 0 && reasons.every((r) => VERIFICATION_FIXABLE.has(r))) {
        return this.denyWithSession(req, denial, result, capture);
      }
      return this.deny(denial, result, capture);
    }

    const match = body.signer_match;
    if (this.config.enforceSignerMatch && match) {
      if (match.kind === 'wallet_signer_mismatch' && (who.wallet || match.signer_operator)) {
        // Token mode: an unlinked signer is a new wallet of this operator that capture will link, not a mismatch.
        const fields: Record<string, unknown> = {};
        if (Array.isArray(match.linked_wallets) && match.linked_wallets.length > 0) fields.linked_wallets = match.linked_wallets;
        if (match.expected_signer) fields.expected_signer = match.expected_signer;
        if (match.actual_signer) fields.actual_signer = match.actual_signer;
        fields.next_steps = {
          action: 're_sign_from_linked_wallet',
          steps: ['Sign the payment again from one of linked_wallets (a wallet of the same operator),', 'or present X-Operator-Token instead of X-Wallet-Address.'],
          user_message: 'The paying wallet does not belong to the operator this agent claimed.',
        };
        if (match.agent_instructions) fields.agent_instructions = match.agent_instructions;
        return this.deny({ status: 403, code: 'wallet_signer_mismatch', message: 'The payment was signed by a wallet of a different operator than the claimed wallet.', reasons: ['wallet_signer_mismatch'], fields }, result, capture);
      }
      if (match.kind === 'wallet_auth_requires_wallet_signing' && who.wallet && !who.operatorToken) {
        const steps = ['This payment rail carries no wallet signature, so a claimed wallet cannot be confirmed.', 'Retry the request with the header X-Operator-Token: <operator credential> from your credential store.'];
        const instructions = { action: 'use_operator_token', steps, user_message: 'Use your operator credential to pay by card with this merchant.' };
        const fields: Record<string, unknown> = { next_steps: { ...instructions, header_name: 'X-Operator-Token' }, agent_instructions: match.agent_instructions ?? JSON.stringify(instructions) };
        return this.deny({ status: 403, code: 'wallet_auth_requires_wallet_signing', message: 'Wallet identity needs a wallet-signed payment; switch to your operator token.', reasons: ['wallet_auth_requires_wallet_signing'], fields }, result, capture);
      }
    }
    result.decision = 'allow';
    return { kind: 'allow', result, capture };
  }

  /** Maps a failed assess call: credential denials, bad identity, misconfiguration, or infrastructure. */
  private async failure(req: Req, outcome: Exclude<CallOutcome<CachedAssess>, { kind: 'ok' }>, result: GateResult, capture: CaptureContext): Promise<Evaluation> {
    if (outcome.kind === 'http_error') {
      const code = outcome.body?.error?.code;
      result.quota = outcome.quota;
      if (outcome.status === 401 && (code === 'token_expired' || code === 'invalid_credential')) {
        const { error: _error, ...top } = (outcome.body ?? {}) as Record<string, unknown>;
        const denial = { status: 401, code, message: bodyMessage(outcome.body, code === 'token_expired' ? 'The operator credential has expired.' : 'The operator credential is not valid.'), reasons: [code], fields: top };
        // token_expired carries the server's auto-minted session: hand it over like one the gate minted.
        if (code === 'token_expired' && typeof top.session_id === 'string') return this.deny(await this.withSessionExtras(req, denial, top as SessionBody), result, capture);
        return this.deny(denial, result, capture);
      }
      if (outcome.status === 400 && (code === 'invalid_identity' || code === 'invalid_address')) {
        return this.deny({ status: 400, code, message: bodyMessage(outcome.body, 'The presented identity is not valid.'), fields: {} }, result, capture);
      }
      if (outcome.status < 500 && !(outcome.status === 429)) {
        // 400/401/402/403 about the merchant's own request (bad key, cancelled account, bad policy): not an
        // outage, so failOpen does not apply — an unconfigured gate must not silently let everyone through.
        this.config.logger.error({ status: outcome.status, code }, 'kya gate: the identity server rejected the gate\'s request; check apiKey, policy and chain');
        return this.deny({ status: 503, code: 'api_error', message: 'The merchant\'s identity check is misconfigured.', fields: { agent_instructions: CONTACT_MERCHANT } }, result, capture);
      }
    }
    const infraReason: InfraReason =
      outcome.kind === 'network' ? (outcome.reason === 'bad_response' ? 'api_error' : 'network_timeout') : outcome.body?.error?.code === 'quota_exceeded' ? 'quota_exceeded' : 'api_error';
    if (this.config.failOpen) {
      result.degraded = true;
      result.infra_reason = infraReason;
      result.decision = 'allow';
      return { kind: 'degraded-allow', result, infraReason, capture };
    }
    const serverInstructions = outcome.kind === 'http_error' ? outcome.body?.agent_instructions : undefined;
    const instructions = serverInstructions ?? (infraReason === 'quota_exceeded' ? CONTACT_MERCHANT : RETRY_WITH_BACKOFF);
    const headers: Record<string, string> = {};
    if (infraReason !== 'quota_exceeded') headers['Retry-After'] = String(outcome.kind === 'http_error' && outcome.retryAfterSeconds !== null ? outcome.retryAfterSeconds : 5);
    return this.deny(
      { status: 503, code: 'api_error', message: infraMessage(infraReason), fields: { infra_reason: infraReason, agent_instructions: instructions }, headers },
      result,
      capture,
    );
  }

  private async missingIdentity(req: Req, result: GateResult, capture: CaptureContext): Promise<Evaluation> {
    const denial = { status: 403, code: 'identity_required', message: 'This route requires a verified operator: present X-Operator-Token or X-Wallet-Address.', reasons: ['identity_required'], fields: { next_steps: PRESENT_IDENTITY } as Record<string, unknown> };
    if (this.config.session) {
      const session = await this.mintSession(req);
      if (session) return this.deny(await this.withSessionExtras(req, denial, session), result, capture);
    }
    // failOpen is about identity-server outages; an anonymous buyer simply passes undegraded (nothing failed).
    if (this.config.failOpen) {
      result.decision = 'allow';
      return { kind: 'allow', result, capture };
    }
    return this.deny(denial, result, capture);
  }

  private async denyWithSession(req: Req, denial: DenialSpec, result: GateResult, capture: CaptureContext): Promise<Evaluation> {
    const session = await this.mintSession(req);
    return this.deny(session ? await this.withSessionExtras(req, denial, session) : denial, result, capture);
  }

  /** POST /v1/sessions; null (logged) when it fails — the denial then goes out without a session. */
  private async mintSession(req: Req): Promise<SessionBody | null> {
    const s = this.config.session!;
    const dynamic: SessionOptions = (s.getSessionOptions ? await s.getSessionOptions(req) : undefined) ?? {};
    const context = dynamic.context ?? s.context;
    const productName = dynamic.productName ?? s.productName;
    const body: Record<string, string> = {};
    if (typeof context === 'string') body.context = context;
    if (typeof productName === 'string') body.product_name = productName;
    const outcome = await this.client.post<SessionBody>('v1/sessions', body, { retry: true });
    if (outcome.kind === 'ok' && typeof outcome.body.session_id === 'string') return outcome.body;
    this.config.logger.warn(
      { outcome: outcome.kind, status: outcome.kind === 'http_error' ? outcome.status : undefined, code: outcome.kind === 'http_error' ? outcome.body?.error?.code : undefined },
      'kya gate: could not create a verification session',
    );
    return null;
  }

  /** Puts the session fields at the top level and lets onBeforeSession add (never replace) fields. */
  private async withSessionExtras(req: Req, denial: DenialSpec, session: SessionBody): Promise<DenialSpec> {
    const fields: Record<string, unknown> = { ...denial.fields };
    for (const [k, v] of Object.entries(session)) if (k !== 'error' && k !== 'decision' && k !== 'reasons') fields[k] = v;
    const hook = this.config.session?.onBeforeSession;
    if (hook) {
      const extras = await hook(req, Object.freeze({ ...session }));
      if (extras && typeof extras === 'object') {
        for (const [k, v] of Object.entries(extras)) if (!RESERVED_FIELDS.has(k) && !(k in fields)) fields[k] = v;
      }
    }
    return { ...denial, fields };
  }

  private deny(spec: DenialSpec, result: GateResult, capture: CaptureContext): Evaluation {
    const reasons = spec.reasons ?? [spec.code];
    const body: Record<string, unknown> = { error: { code: spec.code, message: spec.message }, decision: 'deny', reasons, ...spec.fields };
    // Fields are spread after the gate's own three, so restore them in case the server sent same-named ones.
    body.error = { code: spec.code, message: spec.message };
    body.decision = 'deny';
    body.reasons = reasons;
    result.decision = 'deny';
    result.denial = { status: spec.status, code: spec.code, reasons };
    return { kind: 'deny', result, denial: { status: spec.status, code: spec.code, body, headers: spec.headers ?? {} }, capture };
  }

  close(): void {
    this.client.close();
  }
}

interface DenialSpec {
  status: number;
  code: string;
  message: string;
  reasons?: string[];
  fields: Record<string, unknown>;
  headers?: Record<string, string>;
}

function emptyResult(): GateResult {
  return {
    decision: 'deny',
    degraded: false,
    infra_reason: null,
    identity: { method: null, wallet_address: null, wallet_network: null },
    assess: null,
    operator_handle: null,
    signer: null,
    quota: null,
    cached: false,
    denial: null,
  };
}

const REASON_MESSAGES: Record<string, string> = {
  kyc_required: 'The operator behind this agent has not completed identity verification.',
  kyc_pending: 'The operator\'s identity verification is still in progress.',
  kyc_failed: 'The operator\'s identity verification did not succeed; it can be retried.',
  sanctions_flagged: 'The operator or the paying wallet is flagged by sanctions screening.',
  sanctions_check_unavailable: 'The paying wallet could not be screened right now.',
  age_insufficient: 'The operator does not meet this merchant\'s minimum age.',
  jurisdiction_restricted: 'This merchant does not serve the operator\'s jurisdiction.',
};

function denialMessage(reasons: string[]): string {
  return REASON_MESSAGES[reasons[0]] ?? 'The identity check denied this request.';
}

function infraMessage(reason: InfraReason): string {
  if (reason === 'quota_exceeded') return 'The merchant\'s identity-check quota is exhausted.';
  if (reason === 'network_timeout') return 'The identity service did not answer in time.';
  return 'The identity service is temporarily unavailable.';
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}
