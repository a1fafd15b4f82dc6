// The gate's decision logic, free of any web framework: reads identity and payment signer, asks the identity
// server (through the cache and in-flight coalescing), and returns a tagged union — allow, degraded-allow or
// deny with the exact status and body — that an adapter (express.ts) turns into a response.
import crypto from 'node:crypto';
import { parseAddress, type ParsedAddress } from '../shared/address';
import { isChain, CHAINS } from '../shared/chains';
import { decodeSiwxHeader, SIWX_HEADER, SIWX_MAX_HEADER_LENGTH, SIWX_MAX_LIFETIME_MS } from '../shared/siwx';
import { cacheKey, ttlFor, VERIFICATION_FIXABLE, DecisionCache, type CachedAssess } from './cache';
import { KyaClient } from './api';
import { IdentityClient, type CallOutcome } from './client';
import type { GateConfig, GateDenial, GateIdentity, SessionOptions } from './options';
import { extractPaymentSigner, type PaymentSigner, type SignerErrorCode } from './signer';
import { sendCapture, type CaptureInput, type CaptureResult } from './capture';
import {
  CONTACT_MERCHANT,
  DEFAULT_RETRY_AFTER_SECONDS,
  PRESENT_IDENTITY,
  SIWX_STATEMENT,
  denialMessage,
  infraMessage,
  proveWalletControl,
  reSignFromLinkedWallet,
  retryWithBackoff,
  useOperatorToken,
  type GateInstructions,
} from './agentCopy';
import type {
  AddressFamily,
  AssessRequestBody,
  AssessResponseBody,
  ErrorResponseBody,
  QuotaInfo,
  SessionBody,
  SignerMatch,
  SignerSanctions,
  WalletProofVerdict,
} from './wire';

export type InfraReason = 'network_timeout' | 'api_error' | 'quota_exceeded';

/**
 * `payment_signature`: the payment in this request was signed by the wallet or a wallet of the same operator;
 * `sign_in_with_x`: a SIGN-IN-WITH-X proof verified by the server; `unverified_header`: trusted without proof
 * because the merchant set trustUnsignedWalletHeader.
 */
export type WalletProofKind = 'payment_signature' | 'sign_in_with_x' | 'unverified_header';

/** Codes the gate itself puts in `error.code` (besides the server's decision reasons it passes through). */
export type GateCode =
  | 'identity_required'
  | 'invalid_address'
  | 'wallet_signer_mismatch'
  | 'wallet_auth_requires_wallet_signing'
  /** A SIGN-IN-WITH-X proof that is well formed but was not accepted (expired, another domain, reused, …). */
  | 'wallet_proof_invalid'
  /** A SIGN-IN-WITH-X header that is not base64 JSON of the expected shape. */
  | 'wallet_proof_malformed'
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
  identity: {
    method: 'operator_token' | 'wallet' | null;
    wallet_address: string | null;
    wallet_network: AddressFamily | null;
    /** How a wallet identity was proven in this request (null for token mode, no identity, or a denial). */
    proof: WalletProofKind | null;
  };
  /** The server's verdict on this request's SIGN-IN-WITH-X proof; null when none was sent. */
  wallet_proof: Readonly<WalletProofVerdict> | null;
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
  'error',
  'decision',
  'reasons',
  'verify_url',
  'session_id',
  'poll_secret',
  'poll_url',
  'expires_at',
  'next_steps',
  'agent_instructions',
  'agent_memory',
  'infra_reason',
  'linked_wallets',
  'expected_signer',
  'actual_signer',
  'extensions',
  'wallet_proof',
  'header',
  'details',
]);

const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
/** EVM chain ids advertised in the challenge (EIP-191 signatures are not chain-bound; the id is informational). */
const EVM_CHAIN_IDS: Readonly<Record<string, number>> = { base: 8453, ethereum: 1, arbitrum: 42161, optimism: 10, polygon: 137 };

/** A SIGN-IN-WITH-X header as the gate reads it: checked for shape only; the server verifies it. */
type SiwxRead = { header: string; address: ParsedAddress | null } | { malformed: string } | null;

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
  /** The typed API client every identity-server call goes through. */
  private readonly api: KyaClient;
  /** Sessions minted under createSessionOnMissing's own apiKey/baseUrl, when it sets them. */
  private readonly sessionApi: KyaClient;
  private readonly cache: DecisionCache<CachedAssess>;

  constructor(readonly config: Readonly<GateConfig<Req, Res>>) {
    this.api = new KyaClient({
      transport: new IdentityClient({ baseUrl: config.baseUrl, apiKey: config.apiKey, timeoutMs: config.timeoutMs, userAgent: config.userAgent }),
    });
    const session = config.session;
    this.sessionApi =
      session && (session.apiKey !== undefined || session.baseUrl !== undefined)
        ? new KyaClient({
            transport: new IdentityClient({
              baseUrl: session.baseUrl ? new URL(session.baseUrl) : config.baseUrl,
              apiKey: session.apiKey ?? config.apiKey,
              timeoutMs: config.timeoutMs,
              userAgent: config.userAgent,
            }),
          })
        : this.api;
    this.cache = new DecisionCache<CachedAssess>({ maxEntries: config.cacheMaxEntries, enabled: config.cacheTtlMs > 0, now: config.now });
  }

  /**
   * Decides one request. Synchronous when the answer is cached (the hot path: no promise, no microtask hop),
   * a promise when the identity server has to be asked or a session minted.
   */
  evaluate(req: Req, headers: Headers, path?: string): Evaluation | Promise<Evaluation> {
    const identity = this.readIdentity(req, headers);
    if ('invalid' in identity) {
      return this.deny(
        { status: 400, code: 'invalid_address', message: `${identity.invalid} is not a valid EVM or Solana address.`, fields: {} },
        emptyResult(),
        { operatorToken: null, signer: null },
      );
    }
    const siwx = this.readSiwx(headers);
    if (siwx && 'malformed' in siwx) {
      return this.deny({ status: 400, code: 'wallet_proof_malformed', message: siwx.malformed, fields: { header: SIWX_HEADER } }, emptyResult(), {
        operatorToken: null,
        signer: null,
      });
    }
    const { operatorToken } = identity;
    if (siwx && !siwx.address && !identity.wallet && !operatorToken) {
      return this.deny(
        {
          status: 400,
          code: 'wallet_proof_malformed',
          message: `${SIWX_HEADER}.address must be the EVM or Solana address that signed the proof.`,
          fields: { header: SIWX_HEADER },
        },
        emptyResult(),
        { operatorToken: null, signer: null },
      );
    }
    // An agent that sends only a SIGN-IN-WITH-X proof names its wallet inside it.
    const wallet = identity.wallet ?? (!operatorToken && siwx?.address ? siwx.address : null);
    const result = emptyResult();
    result.identity = {
      method: operatorToken ? 'operator_token' : wallet ? 'wallet' : null,
      wallet_address: wallet?.address ?? null,
      wallet_network: wallet?.network ?? null,
      proof: null,
    };

    const extraction = this.readSigner(req, headers);
    const capture: CaptureContext = { operatorToken, signer: extraction.kind === 'signer' ? extraction.signer : null };
    if (extraction.kind === 'invalid') {
      return this.deny({ status: 400, code: extraction.code, message: extraction.message, fields: { header: extraction.header } }, result, capture);
    }
    const signer = capture.signer;
    if (signer) result.signer = { signer, match: null, sanctions: null };

    if (!operatorToken && !wallet) return this.missingIdentity(req, result, capture);

    const chain = this.chainFor(req);
    const walletMode = wallet !== null && !operatorToken;
    const proofHeader = walletMode && siwx ? siwx.header : null;
    const paymentProof = signer !== null && signer.verified && signer.address !== null;
    if (walletMode && !proofHeader && !paymentProof && !this.config.trustUnsignedWalletHeader) {
      // Nothing in this request can prove the wallet: no call is made, whatever the server would say about it.
      return this.deny(this.proofRequired(wallet, chain, path), result, capture);
    }
    // A rail without a wallet signature only means something against a claimed wallet; with a token it is
    // simply a card payment, so no signer is sent (and no wallet_auth_requires_wallet_signing verdict).
    const wireSigner = !signer
      ? null
      : signer.address !== null
        ? { address: signer.address, network: signer.network }
        : !operatorToken && wallet
          ? { address: null, network: wallet.network }
          : null;
    const who: Who = { operatorToken, wallet, proofSent: proofHeader !== null, chain, path };
    const body: AssessRequestBody = {};
    if (wallet) body.address = wallet.address;
    if (operatorToken) body.operator_token = operatorToken;
    if (chain) body.chain = chain;
    if (this.config.policy) body.policy = this.config.policy;
    if (wireSigner) body.signer = wireSigner;
    if (proofHeader) {
      // A proof is single-use: its request is never answered from the cache, never shares an in-flight call,
      // and its answer is never stored (a replay within the cache TTL would otherwise pass without the server).
      const origin = this.config.publicOrigin!;
      body.wallet_proof = { type: 'siwx', header: proofHeader, domain: origin.domain, uri: origin.origin };
      return this.api.outcome
        .assess(body)
        .then((outcome) =>
          outcome.kind === 'ok' ? this.decide(req, frozenEntry(outcome), result, capture, who) : this.failure(req, outcome, result, capture),
        );
    }
    const key = cacheKey({ operatorToken, walletAddress: wallet?.address ?? null, policyKey: this.config.policyKey, chain, signer: wireSigner });
    const hit = this.cache.get(key);
    if (hit) {
      result.cached = true;
      return this.decide(req, hit, result, capture, who);
    }
    return this.cache
      .coalesce(key, () => this.assess(key, body))
      .promise.then((outcome) => (outcome.kind === 'ok' ? this.decide(req, outcome.body, result, capture, who) : this.failure(req, outcome, result, capture)));
  }

  /** Reads SIGN-IN-WITH-X (only when the merchant configured publicOrigin; otherwise proofs are not accepted). */
  private readSiwx(headers: Headers): SiwxRead {
    if (!this.config.publicOrigin) return null;
    const value = header(headers, 'sign-in-with-x');
    if (value === null) return null;
    // Shape only, so a broken header costs no assess call; everything else is the server's to verify.
    if (value.length > SIWX_MAX_HEADER_LENGTH) return { malformed: `${SIWX_HEADER} is longer than ${SIWX_MAX_HEADER_LENGTH} characters.` };
    let parsed: unknown;
    try {
      parsed = decodeSiwxHeader(value);
    } catch {
      return { malformed: `${SIWX_HEADER} is not base64-encoded JSON.` };
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { malformed: `${SIWX_HEADER} must decode to a JSON object.` };
    const address = (parsed as { address?: unknown }).address;
    return { header: value, address: typeof address === 'string' ? parseAddress(address) : null };
  }

  /** Calls assess and caches a usable answer; errors are returned (never cached). */
  private async assess(key: string, body: AssessRequestBody): Promise<CallOutcome<CachedAssess>> {
    const outcome = await this.api.outcome.assess(body);
    if (outcome.kind !== 'ok') return outcome;
    const entry = frozenEntry(outcome);
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
      // `address` is the ecosystem's name for the claimed wallet.
      const claimed = found.walletAddress ?? found.address;
      walletRaw = typeof claimed === 'string' && claimed.trim() ? claimed.trim() : null;
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
  private decide(req: Req, entry: CachedAssess, result: GateResult, capture: CaptureContext, who: Who): Evaluation | Promise<Evaluation> {
    const body = entry.body;
    result.assess = body;
    result.quota = entry.quota;
    result.operator_handle = typeof body.operator_handle === 'string' ? body.operator_handle : null;
    if (result.signer) result.signer = { ...result.signer, match: body.signer_match ?? null, sanctions: body.signer_sanctions ?? null };

    // Proof before policy: an unproven caller learns nothing about the wallet it named (KYC state, sanctions).
    let proofByWallet = false;
    if (who.wallet && !who.operatorToken) {
      // Only a verdict on a proof this request sent counts (cached answers never carry one).
      const verdict = who.proofSent ? (body.wallet_proof ?? null) : null;
      result.wallet_proof = verdict;
      const signer = result.signer?.signer;
      proofByWallet = verdict?.verified === true;
      const byPayment = signer !== undefined && signer.verified && signer.address !== null && body.signer_match?.kind === 'pass';
      result.identity.proof = proofByWallet
        ? 'sign_in_with_x'
        : byPayment
          ? 'payment_signature'
          : this.config.trustUnsignedWalletHeader
            ? 'unverified_header'
            : null;
      if (verdict && !verdict.verified) {
        // A proof that was presented and failed is never overlooked, not even when unsigned headers are trusted.
        result.identity.proof = null;
        return this.deny(this.proofRejected(who, verdict), result, capture);
      }
      if (result.identity.proof === null) {
        if (body.signer_match?.kind === 'wallet_signer_mismatch') return this.deny(signerMismatch(body.signer_match), result, capture);
        // A proof header sent to a server that does not verify proofs yet: no verdict, so no proof.
        return this.deny(this.proofRequired(who.wallet, who.chain, who.path), result, capture);
      }
    }

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
        return this.deny(signerMismatch(match), result, capture);
      }
      // A wallet proven by SIGN-IN-WITH-X may pay by card: the identity no longer rests on the payment.
      if (match.kind === 'wallet_auth_requires_wallet_signing' && who.wallet && !who.operatorToken && !proofByWallet) {
        const instructions = useOperatorToken();
        const fields: Record<string, unknown> = {
          next_steps: { ...instructions, header_name: 'X-Operator-Token' },
          agent_instructions: match.agent_instructions ?? JSON.stringify(instructions),
        };
        return this.deny(
          {
            status: 403,
            code: 'wallet_auth_requires_wallet_signing',
            message: 'Wallet identity needs a wallet-signed payment; switch to your operator token.',
            reasons: ['wallet_auth_requires_wallet_signing'],
            fields,
          },
          result,
          capture,
        );
      }
    }
    result.decision = 'allow';
    return { kind: 'allow', result, capture };
  }

  /** Maps a failed assess call: credential denials, bad identity, misconfiguration, or infrastructure. */
  private async failure(
    req: Req,
    outcome: Exclude<CallOutcome<CachedAssess>, { kind: 'ok' }>,
    result: GateResult,
    capture: CaptureContext,
  ): Promise<Evaluation> {
    if (outcome.kind === 'http_error') {
      const code = outcome.body?.error?.code;
      result.quota = outcome.quota;
      if (outcome.status === 401 && (code === 'token_expired' || code === 'invalid_credential')) {
        const { error: _error, ...top } = (outcome.body ?? {}) as Record<string, unknown>;
        const denial = {
          status: 401,
          code,
          message: bodyMessage(outcome.body, code === 'token_expired' ? 'The operator credential has expired.' : 'The operator credential is not valid.'),
          reasons: [code],
          fields: top,
        };
        // token_expired carries the server's auto-minted session: hand it over like one the gate minted.
        if (code === 'token_expired' && typeof top.session_id === 'string')
          return this.deny(await this.withSessionExtras(req, denial, top as SessionBody), result, capture);
        return this.deny(denial, result, capture);
      }
      if (outcome.status === 400 && (code === 'invalid_identity' || code === 'invalid_address')) {
        return this.deny({ status: 400, code, message: bodyMessage(outcome.body, 'The presented identity is not valid.'), fields: {} }, result, capture);
      }
      const proofProblems = outcome.status === 400 ? siwxProblems(outcome.body) : null;
      if (proofProblems) {
        const message = `${SIWX_HEADER} is malformed: ${proofProblems.map((d) => `${d.field} ${d.message}`).join('; ')}.`;
        return this.deny({ status: 400, code: 'wallet_proof_malformed', message, fields: { header: SIWX_HEADER, details: proofProblems } }, result, capture);
      }
      if (outcome.status === 429 && code !== 'quota_exceeded') {
        // A per-second limit is the merchant's traffic, not an outage: failOpen does not forgive it.
        const retryAfter = outcome.retryAfterSeconds ?? 1;
        return this.deny(
          {
            status: 503,
            code: 'api_error',
            message: 'The merchant is checking identities faster than its plan allows.',
            fields: { infra_reason: 'api_error', agent_instructions: JSON.stringify(retryWithBackoff(retryAfter)) },
            headers: { 'Retry-After': String(retryAfter) },
          },
          result,
          capture,
        );
      }
      if (outcome.status < 500 && !(outcome.status === 429)) {
        // 400/401/402/403 about the merchant's own request (bad key, cancelled account, bad policy): not an
        // outage, so failOpen does not apply — an unconfigured gate must not silently let everyone through.
        this.config.logger.error({ status: outcome.status, code }, "kya gate: the identity server rejected the gate's request; check apiKey, policy and chain");
        return this.deny(
          {
            status: 503,
            code: 'api_error',
            message: "The merchant's identity check is misconfigured.",
            fields: { agent_instructions: JSON.stringify(CONTACT_MERCHANT) },
          },
          result,
          capture,
        );
      }
    }
    const infraReason: InfraReason =
      outcome.kind === 'network'
        ? outcome.reason === 'bad_response'
          ? 'api_error'
          : 'network_timeout'
        : outcome.body?.error?.code === 'quota_exceeded'
          ? 'quota_exceeded'
          : 'api_error';
    if (this.config.failOpen) {
      result.degraded = true;
      result.infra_reason = infraReason;
      result.decision = 'allow';
      return { kind: 'degraded-allow', result, infraReason, capture };
    }
    const retryAfter = outcome.kind === 'http_error' && outcome.retryAfterSeconds !== null ? outcome.retryAfterSeconds : DEFAULT_RETRY_AFTER_SECONDS;
    const serverInstructions = outcome.kind === 'http_error' ? outcome.body?.agent_instructions : undefined;
    // One shape for agents: the JSON-encoded string, whether the server sent a string or (older servers) an object.
    const instructions =
      typeof serverInstructions === 'string'
        ? serverInstructions
        : JSON.stringify(serverInstructions ?? (infraReason === 'quota_exceeded' ? CONTACT_MERCHANT : retryWithBackoff(retryAfter)));
    const headers: Record<string, string> = {};
    if (infraReason !== 'quota_exceeded') headers['Retry-After'] = String(retryAfter);
    return this.deny(
      { status: 503, code: 'api_error', message: infraMessage(infraReason), fields: { infra_reason: infraReason, agent_instructions: instructions }, headers },
      result,
      capture,
    );
  }

  private async missingIdentity(req: Req, result: GateResult, capture: CaptureContext): Promise<Evaluation> {
    const denial = {
      status: 403,
      code: 'identity_required',
      message: 'This route requires a verified operator: present X-Operator-Token or X-Wallet-Address.',
      reasons: ['identity_required'],
      fields: { next_steps: PRESENT_IDENTITY } as Record<string, unknown>,
    };
    if (this.config.session) {
      const session = await this.mintSession(req);
      if (session) return this.deny(await this.withSessionExtras(req, denial, session), result, capture);
    }
    // No identity is denied with failOpen on too: failOpen forgives outages, and nothing failed here.
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
    const outcome = await this.sessionApi.outcome.createSession(body);
    if (outcome.kind === 'ok' && typeof outcome.body.session_id === 'string') return outcome.body;
    this.config.logger.warn(
      {
        outcome: outcome.kind,
        status: outcome.kind === 'http_error' ? outcome.status : undefined,
        code: outcome.kind === 'http_error' ? outcome.body?.error?.code : undefined,
      },
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

  /** 403 wallet_auth_requires_wallet_signing: the wallet was named but nothing in the request proves it. */
  private proofRequired(wallet: ParsedAddress, chain: string | undefined, path: string | undefined): DenialSpec {
    const instructions = this.proveWalletInstructions(wallet);
    const fields: Record<string, unknown> = { next_steps: instructions, agent_instructions: JSON.stringify(instructions) };
    const challenge = this.challenge(wallet, chain, path);
    if (challenge) fields.extensions = { 'sign-in-with-x': challenge };
    const message = `X-Wallet-Address is only a claim: prove control of ${wallet.address}${challenge ? ` with a ${SIWX_HEADER} proof or` : ' with'} a payment signed by it, or present X-Operator-Token.`;
    return { status: 403, code: 'wallet_auth_requires_wallet_signing', message, reasons: ['wallet_auth_requires_wallet_signing'], fields };
  }

  /** 403 wallet_proof_invalid: a well-formed proof the server did not accept, with the reason and a fresh challenge. */
  private proofRejected(who: Who, verdict: WalletProofVerdict): DenialSpec {
    const instructions = this.proveWalletInstructions(who.wallet!);
    const fields: Record<string, unknown> = { wallet_proof: verdict, next_steps: instructions, agent_instructions: JSON.stringify(instructions) };
    const challenge = this.challenge(who.wallet!, who.chain, who.path);
    if (challenge) fields.extensions = { 'sign-in-with-x': challenge };
    const message = `The ${SIWX_HEADER} proof was not accepted: ${'message' in verdict ? verdict.message : 'it could not be verified.'}`;
    return { status: 403, code: 'wallet_proof_invalid', message, reasons: ['wallet_proof_invalid'], fields };
  }

  private proveWalletInstructions(wallet: ParsedAddress): GateInstructions {
    return proveWalletControl(wallet, { siwxHeader: SIWX_HEADER, siwx: Boolean(this.config.publicOrigin), proofLifetimeSeconds: SIWX_MAX_LIFETIME_MS / 1000 });
  }

  /** The x402 sign-in-with-x challenge (fresh nonce, 5-minute window); null when the merchant set no publicOrigin. */
  private challenge(wallet: ParsedAddress, chain: string | undefined, path: string | undefined): Record<string, unknown> | null {
    const origin = this.config.publicOrigin;
    if (!origin) return null;
    let uri = `${origin.origin}/`;
    if (path) {
      try {
        // Resolved against the configured origin, never the Host header; the query is left out.
        const url = new URL(path, origin.origin);
        if (url.origin === origin.origin) uri = `${url.origin}${url.pathname}`;
      } catch {
        // An unparsable path keeps the origin: only the origin is compared.
      }
    }
    const issuedAt = new Date();
    const supportedChains =
      wallet.network === 'solana'
        ? [{ chainId: SOLANA_MAINNET, type: 'ed25519' }]
        : [{ chainId: `eip155:${EVM_CHAIN_IDS[chain ?? ''] ?? EVM_CHAIN_IDS.base}`, type: 'eip191' }];
    return {
      info: {
        domain: origin.domain,
        uri,
        version: '1',
        nonce: crypto.randomBytes(16).toString('hex'),
        issuedAt: issuedAt.toISOString(),
        expirationTime: new Date(issuedAt.getTime() + SIWX_MAX_LIFETIME_MS).toISOString(),
        statement: SIWX_STATEMENT,
      },
      supportedChains,
    };
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
    const denial: GateDenial = { status: spec.status, code: spec.code, message: spec.message, reasons, body, headers: spec.headers ?? {} };
    for (const field of ['verify_url', 'session_id', 'poll_secret', 'poll_url'] as const) if (typeof body[field] === 'string') denial[field] = body[field];
    return { kind: 'deny', result, denial, capture };
  }

  /** Reports the wallet that paid under the request's operator credential; resolves (never rejects) with what happened. */
  capture(capture: CaptureContext, input: CaptureInput): Promise<CaptureResult> {
    return sendCapture(this.api, this.config.logger, capture.operatorToken, input);
  }

  /** Whether a 2xx answer to this request captures its paying wallet (captureOn 'success', a credential, a recovered signer). */
  capturesOnSuccess(capture: CaptureContext): capture is CaptureContext & { signer: PaymentSigner & { address: string } } {
    const signer = capture.signer;
    return this.config.captureOn === 'success' && Boolean(capture.operatorToken) && signer !== null && signer.address !== null;
  }

  /** Fire-and-forget capture of the paying wallet once the handler answered `status` (only a 2xx captures). */
  captureAfter(capture: CaptureContext, status: number): void {
    if (!this.capturesOnSuccess(capture) || status < 200 || status >= 300) return;
    const { signer } = capture;
    void this.capture(capture, { walletAddress: signer.address, network: signer.network, idempotencyKey: signer.idempotencyKey });
  }

  close(): void {
    this.api.close();
    if (this.sessionApi !== this.api) this.sessionApi.close();
  }
}

/** What decide() knows about the request beyond the assess answer. */
interface Who {
  operatorToken: string | null;
  wallet: ParsedAddress | null;
  /** This request sent a SIGN-IN-WITH-X proof to assess. */
  proofSent: boolean;
  chain: string | undefined;
  path: string | undefined;
}

function signerMismatch(match: SignerMatch): DenialSpec {
  const fields: Record<string, unknown> = {};
  if (Array.isArray(match.linked_wallets) && match.linked_wallets.length > 0) fields.linked_wallets = match.linked_wallets;
  if (match.expected_signer) fields.expected_signer = match.expected_signer;
  if (match.actual_signer) fields.actual_signer = match.actual_signer;
  fields.next_steps = reSignFromLinkedWallet();
  if (match.agent_instructions) fields.agent_instructions = match.agent_instructions;
  return {
    status: 403,
    code: 'wallet_signer_mismatch',
    message: 'The payment was signed by a wallet of a different operator than the claimed wallet.',
    reasons: ['wallet_signer_mismatch'],
    fields,
  };
}

/** The server's 400 problems with the forwarded SIGN-IN-WITH-X header, renamed after the header; null if none. */
function siwxProblems(body: ErrorResponseBody | null): Array<{ field: string; message: string }> | null {
  const details = body?.error?.details;
  if (!Array.isArray(details) || details.length === 0) return null;
  const prefix = 'wallet_proof.header';
  const ok = details.every((d) => d && typeof d.field === 'string' && typeof d.message === 'string' && d.field.startsWith(prefix));
  if (!ok) return null;
  return details.map((d: { field: string; message: string }) => ({ field: SIWX_HEADER + d.field.slice(prefix.length), message: d.message }));
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
    identity: { method: null, wallet_address: null, wallet_network: null, proof: null },
    wallet_proof: null,
    assess: null,
    operator_handle: null,
    signer: null,
    quota: null,
    cached: false,
    denial: null,
  };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}

/** An assess answer frozen once: every request that reuses it reads it, none can alter it for the others. */
function frozenEntry(outcome: { body: AssessResponseBody; quota: CachedAssess['quota'] }): CachedAssess {
  return Object.freeze({ body: deepFreeze(outcome.body), quota: outcome.quota ? Object.freeze({ ...outcome.quota }) : null });
}
