// What happens on the verify page: a KYC outcome moves the session pending → verified | failed | flagged and
// writes the operator's KYC state (PII encrypted, name screening recorded); a signed wallet-ownership challenge
// links a wallet to the operator. Merchant and public sessions resolve to an operator account (reused when the
// same person or the same wallet verifies again); `self` sessions write to the account that started them.
import type { Knex } from 'knex';
import bs58 from 'bs58';
import { ApiError } from '../../shared/errors';
import type { AddressFamily } from '../../shared/types';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { encryptJson, hmacSha256, randomBase62, safeEqual, sha256Hex, walletSignatureValid } from '../crypto';
import { ageBracket, type KycResult, type VerifiedIdentity } from '../kyc/types';
import type { KycPatch, OperatorsRepository, OperatorAccountRow, OperatorWalletRow } from '../repositories/operators';
import type { SessionRow, SessionsRepository } from '../repositories/sessions';
import type { WalletChallengeRow, WalletChallengesRepository } from '../repositories/walletChallenges';
import type { KycEventsRepository } from '../repositories/kycEvents';
import type { ScreeningOutcome, ScreeningService, StoredIdentity } from '../screening/service';
import type { IdentityChanged } from './identity';
import { emitSessionEvent, type WebhookEmitter } from '../webhooks/events';

export const CHALLENGE_TTL_SECONDS = 600;

export type WalletClaimRefusal = 'challenge_used' | 'challenge_expired' | 'bad_signature' | 'claimed_by_other' | 'session_closed' | 'browser_not_bound';

const FORBIDDEN_REFUSALS: ReadonlySet<WalletClaimRefusal> = new Set(['session_closed', 'browser_not_bound']);

/** A refused wallet claim: `reason` tells the page which clear message to show. */
export class WalletClaimError extends ApiError {
  constructor(
    readonly reason: WalletClaimRefusal,
    message: string,
  ) {
    super(reason === 'claimed_by_other' ? 'conflict' : FORBIDDEN_REFUSALS.has(reason) ? 'forbidden' : 'bad_request', message, {
      details:
        reason === 'claimed_by_other' || FORBIDDEN_REFUSALS.has(reason)
          ? undefined
          : [{ field: reason === 'bad_signature' ? 'signature' : 'challenge_id', message }],
    });
  }
}

export const NOT_THIS_BROWSER = 'Wallets can only be linked from the browser that completed the identity check for this verification.';

/** Compared when a session has no claim key, so a missing binding costs the same time as a wrong one. */
const NO_CLAIM_KEY_HASH = sha256Hex('no claim key');

/** Only the SHA-256 of a claim key is stored with the session. */
export function claimKeyHash(key: string): string {
  return sha256Hex(key);
}

/** One KYC result being applied: the locked pending session and where the result came from. */
interface KycStep {
  trx: Knex.Transaction;
  session: SessionRow;
  provider: string;
  reference: string | null;
  now: Date;
}

/** Name screening of a verified identity; the provider's own watchlist hit is a flag without a list match. */
type KycScreening = ScreeningOutcome | { status: 'flagged' };

type IdentityPatch = Omit<KycPatch, 'kyc_status'>;

export interface KycApplied {
  session: SessionRow;
  /** false when the session was no longer pending (already completed, or expired). */
  applied: boolean;
}

export interface VerificationServiceOptions {
  db: Knex;
  sessions: SessionsRepository;
  operators: OperatorsRepository;
  challenges: WalletChallengesRepository;
  kycEvents: KycEventsRepository;
  screening: ScreeningService;
  config: Config;
  logger: Logger;
  now: () => Date;
  identityChanged: IdentityChanged;
  webhooks?: WebhookEmitter;
}

export class VerificationService {
  private readonly db: Knex;
  private readonly sessions: SessionsRepository;
  private readonly operators: OperatorsRepository;
  private readonly challenges: WalletChallengesRepository;
  private readonly kycEvents: KycEventsRepository;
  private readonly screening: ScreeningService;
  private readonly config: Config;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly identityChanged: IdentityChanged;
  private readonly webhooks: WebhookEmitter | undefined;

  constructor(options: VerificationServiceOptions) {
    this.db = options.db;
    this.sessions = options.sessions;
    this.operators = options.operators;
    this.challenges = options.challenges;
    this.kycEvents = options.kycEvents;
    this.screening = options.screening;
    this.config = options.config;
    this.logger = options.logger;
    this.now = options.now;
    this.identityChanged = options.identityChanged;
    this.webhooks = options.webhooks;
  }

  /** The session's new status and its webhook event, in the same transaction. */
  private async completed(trx: Knex.Transaction, row: SessionRow | undefined): Promise<SessionRow | undefined> {
    await emitSessionEvent(this.webhooks, trx, this.config.serverSecret, row);
    return row;
  }

  /** Keyed fingerprint of a verified identity: the same person maps to the same operator without storing PII. */
  fingerprint(identity: VerifiedIdentity): string {
    const norm = (s: string | null) =>
      (s ?? '')
        .normalize('NFKD')
        .replace(/[\u0300-\u036f]/g, '')
        .toUpperCase()
        .replace(/[^A-Z0-9]+/g, '');
    const material = ['identity-v1', norm(identity.fullName), identity.dateOfBirth, identity.country, norm(identity.documentNumber)].join('|');
    return hmacSha256(this.config.serverSecret, material).toString('hex');
  }

  /**
   * Whether wallets may be linked through this session at all: only once the identity step has verified the
   * person, and only until the session expires.
   */
  claimWindowOpen(session: SessionRow, now = this.now()): boolean {
    if (session.status !== 'verified' && session.status !== 'consumed') return false;
    return now.getTime() < session.expires_at.getTime();
  }

  /** A fresh random claim key for the browser completing the identity step (its hash goes on the session). */
  newClaimKey(): string {
    return randomBase62(32);
  }

  /** Whether `claimKey` (the browser's cookie) is the one bound to the session; constant-time. */
  claimKeyMatches(session: SessionRow, claimKey: string | null): boolean {
    const expected = session.claim_key_hash ?? NO_CLAIM_KEY_HASH;
    const matches = safeEqual(claimKeyHash(claimKey ?? ''), expected);
    return matches && Boolean(claimKey) && session.claim_key_hash !== null;
  }

  /** Whether the browser holding `claimKey` may link a wallet through this session now. */
  browserMayClaim(session: SessionRow, claimKey: string | null, now = this.now()): boolean {
    return this.claimRefusal(session, claimKey, now) === null;
  }

  /** Why a claim from this browser is refused now, or null when it may claim. */
  claimRefusal(session: SessionRow | undefined, claimKey: string | null, now = this.now()): WalletClaimError | null {
    if (!session || !this.claimWindowOpen(session, now)) {
      return new WalletClaimError('session_closed', 'This verification is closed; wallets can no longer be linked through it.');
    }
    if (!this.claimKeyMatches(session, claimKey)) return new WalletClaimError('browser_not_bound', NOT_THIS_BROWSER);
    return null;
  }

  /**
   * Redeems the return key a hosted identity check carries back to this browser: the session's binding moves to
   * a fresh claim key (returned, for the cookie). Null when the key is wrong or was already redeemed.
   */
  async redeemReturnKey(session: SessionRow, returnKey: string): Promise<string | null> {
    if (!returnKey || !this.claimKeyMatches(session, returnKey)) return null;
    const claimKey = this.newClaimKey();
    const swapped = await this.sessions.swapClaimKeyHash({ id: session.id, from: claimKeyHash(returnKey), to: claimKeyHash(claimKey) });
    return swapped ? claimKey : null;
  }

  /**
   * Applies a provider result to a session in one transaction. Verified identities are screened by name;
   * a match (or the provider's own watchlist hit) gives `flagged` and records the operator as flagged.
   * Inside a caller's transaction (`outerTrx`), the caller publishes the identity change after its commit.
   */
  async applyKycResult(
    sessionId: string,
    result: KycResult,
    provider: string,
    outerTrx?: Knex.Transaction,
    options: { claimKey?: string } = {},
  ): Promise<KycApplied> {
    const work = async (trx: Knex.Transaction): Promise<KycApplied> => {
      const now = this.now();
      const session = await this.sessions.findById({ id: sessionId, forUpdate: true }, trx);
      if (!session) throw new ApiError('not_found', 'Session not found.');
      if (session.status !== 'pending') return { session, applied: false };
      if (session.expires_at.getTime() <= now.getTime()) {
        const expired = await this.completed(trx, await this.sessions.expireIfDue({ id: session.id, now }, trx));
        return { session: expired ?? session, applied: false };
      }
      const kyc: KycStep = { trx, session, provider, reference: result.reference, now };
      if (result.outcome === 'failed') return this.kycFailed(kyc);

      const identity = result.identity;
      const fingerprint = this.fingerprint(identity);
      const operator = await this.resolveOperatorForKyc(session, fingerprint, trx);
      if (!operator) {
        // The session is bound (by a claimed wallet) to an operator whose verified identity is someone else.
        const mismatch = await this.complete(kyc, 'failed', session.operator_account_id);
        this.logger.info({ session: session.id }, 'verified identity does not match the operator of the claimed wallet');
        return mismatch;
      }
      const screening: KycScreening = result.watchlistHit
        ? { status: 'flagged' }
        : this.screening.screen({
            fullName: identity.fullName,
            dobYear: Number(identity.dateOfBirth.slice(0, 4)),
            country: identity.country,
          });
      const patch = this.identityPatch(kyc, identity, fingerprint);
      if (screening.status === 'flagged') return this.kycFlagged(kyc, operator, patch, screening);
      return this.kycVerified(kyc, operator, patch, screening, options.claimKey);
    };
    if (outerTrx) return work(outerTrx);
    const applied = await this.db.transaction(work);
    await this.kycChanged(applied);
    return applied;
  }

  /** The provider could not verify the person: the session fails; an operator verified before stays verified. */
  private async kycFailed(kyc: KycStep): Promise<KycApplied> {
    const { trx, session } = kyc;
    if (session.operator_account_id) {
      const current = await this.operators.findAccount({ id: session.operator_account_id, forUpdate: true }, trx);
      // A failed retry never downgrades an identity that was verified before.
      if (current && current.kyc_status !== 'verified') {
        await this.operators.applyKyc({ id: current.id, patch: { kyc_status: 'failed', kyc_provider: kyc.provider, kyc_reference: kyc.reference } }, trx);
      }
    }
    return this.complete(kyc, 'failed', session.operator_account_id);
  }

  /** A sanctions name match (or the provider's own watchlist hit): operator and session flagged for review. */
  private async kycFlagged(
    kyc: KycStep,
    operator: OperatorAccountRow,
    patch: IdentityPatch,
    screening: Extract<KycScreening, { status: 'flagged' }>,
  ): Promise<KycApplied> {
    const match = 'best' in screening ? JSON.stringify(screening.best) : JSON.stringify({ provider_watchlist_hit: true });
    await this.operators.applyKyc(
      { id: operator.id, patch: { ...patch, kyc_status: 'flagged', sanctions_status: 'flagged', sanctions_checked_at: kyc.now, sanctions_match: match } },
      kyc.trx,
    );
    if ('best' in screening) {
      this.logger.warn(
        { session: kyc.session.id, operator: operator.id, list_uid: screening.best.uid, score: screening.best.score },
        'name screening match; session flagged for review',
      );
    }
    return this.complete(kyc, 'flagged', operator.id);
  }

  /**
   * Verified (screened clear, or unscreened when no name list is loaded): the operator reaches kyc_verified, and
   * the browser that completed the identity step (when it is a browser) becomes the only one that may link wallets.
   */
  private async kycVerified(
    kyc: KycStep,
    operator: OperatorAccountRow,
    patch: IdentityPatch,
    screening: Exclude<KycScreening, { status: 'flagged' }>,
    claimKey: string | undefined,
  ): Promise<KycApplied> {
    const { trx, now } = kyc;
    const screened = screening.status === 'clear';
    if (!screened) this.logger.warn({ session: kyc.session.id }, 'no sanctions name list loaded; identity verified but left unscreened');
    await this.operators.applyKyc(
      {
        id: operator.id,
        patch: {
          ...patch,
          kyc_status: 'verified',
          kyc_verified_at: now,
          sanctions_status: screened ? 'clear' : null,
          sanctions_checked_at: screened ? now : null,
          sanctions_match: null,
        },
      },
      trx,
    );
    await this.operators.raiseLevel({ id: operator.id, level: 'kyc_verified' }, trx);
    return this.complete(kyc, 'verified', operator.id, claimKey ? claimKeyHash(claimKey) : undefined);
  }

  /** The operator columns every verified identity writes, whatever screening decides. */
  private identityPatch(kyc: KycStep, identity: VerifiedIdentity, fingerprint: string): IdentityPatch {
    const stored: StoredIdentity = {
      full_name: identity.fullName,
      date_of_birth: identity.dateOfBirth,
      country: identity.country,
      document_last4: identity.documentNumber ? identity.documentNumber.slice(-4) : null,
    };
    return {
      operator_type: identity.operatorType,
      jurisdiction: identity.country,
      age_bracket: ageBracket(identity.dateOfBirth, kyc.now),
      age_verified: true,
      kyc_provider: kyc.provider,
      kyc_reference: kyc.reference,
      pii_encrypted: encryptJson(this.config.piiKey, stored),
      identity_fingerprint: fingerprint,
    };
  }

  /** Moves the still-pending session to its final status (with its webhook event) in the KYC transaction. */
  private async complete(
    kyc: KycStep,
    status: 'verified' | 'failed' | 'flagged',
    operatorAccountId: string | null,
    claimKeyHash?: string,
  ): Promise<KycApplied> {
    const row = await this.sessions.completeIfPending({ id: kyc.session.id, status, at: kyc.now, operatorAccountId, claimKeyHash }, kyc.trx);
    return { session: (await this.completed(kyc.trx, row))!, applied: true };
  }

  private async kycChanged(applied: KycApplied): Promise<void> {
    if (applied.applied && applied.session.operator_account_id) await this.identityChanged({ operatorId: applied.session.operator_account_id });
  }

  /** The account a verified identity belongs to; null when the bound operator is a different verified person. */
  private async resolveOperatorForKyc(session: SessionRow, fingerprint: string, trx: Knex.Transaction): Promise<OperatorAccountRow | null> {
    if (session.operator_account_id) {
      const bound = await this.operators.findAccount({ id: session.operator_account_id, forUpdate: true }, trx);
      if (!bound) throw new ApiError('not_found', 'The account of this session no longer exists.');
      if (session.kind === 'self') return bound;
      if (bound.identity_fingerprint && bound.identity_fingerprint !== fingerprint) return null;
      if (!bound.identity_fingerprint && bound.kind === 'operator') {
        // A wallet-only operator verified as a person who already has an operator: that operator is the person's.
        const existing = await this.operators.findByFingerprint({ fingerprint }, trx);
        if (existing && existing.id !== bound.id) return existing;
      }
      return bound;
    }
    // Insert-or-find on the unique fingerprint: concurrent verifications of one person on any number of
    // instances all end on the same operator (the losers wait for the winner's commit, then read its row).
    return this.operators.insertOrFindByFingerprint({ name: `operator ${session.id.slice(3, 11)}`, fingerprint }, trx);
  }

  // ---- wallet claims -------------------------------------------------------------------------------------

  private domain(): string {
    return new URL(this.config.publicBaseUrl).host;
  }

  /** An unused challenge valid for at least two more minutes, or a new one; only for the bound browser. */
  async challengeFor(session: SessionRow, claimKey: string | null): Promise<WalletChallengeRow> {
    const now = this.now();
    const refusal = this.claimRefusal(session, claimKey, now);
    if (refusal) throw refusal;
    const reusable = await this.challenges.findReusable({ sessionId: session.id, validUntil: new Date(now.getTime() + 120_000) });
    if (reusable) return reusable;
    const nonce = randomBase62(16);
    const expires = new Date(now.getTime() + CHALLENGE_TTL_SECONDS * 1000);
    const message = [
      `${this.domain()} asks you to prove that you control this wallet.`,
      '',
      'Signing links the wallet to your verified identity. It does not move funds or cost gas.',
      '',
      `Domain: ${this.domain()}`,
      `Session: ${session.id}`,
      `Nonce: ${nonce}`,
      `Issued At: ${now.toISOString()}`,
      `Expiration Time: ${expires.toISOString()}`,
    ].join('\n');
    return this.challenges.insert({ challenge: { session_id: session.id, nonce, message, issued_at: now, expires_at: expires } });
  }

  /** Verifies the signature over the challenge and links the wallet to the session's operator. */
  async claimWallet(input: {
    sessionId: string;
    /** The claim key cookie of the browser asking; only the browser bound to the session may link. */
    claimKey: string | null;
    challengeId: string;
    network: AddressFamily;
    /** Canonical form for its network (lowercase EVM, verbatim Solana). */
    address: string;
    signature: string;
  }): Promise<{ wallet: OperatorWalletRow; operatorId: string; alreadyLinked: boolean }> {
    const { network, address } = input;
    // Checked before the challenge, so a browser that may not claim learns nothing else about the session.
    const early = this.claimRefusal(await this.sessions.findById({ id: input.sessionId }), input.claimKey);
    if (early) throw early;
    const now = this.now();
    const challenge = await this.challenges.findById({ id: input.challengeId });
    if (!challenge || challenge.session_id !== input.sessionId) {
      throw new WalletClaimError('challenge_expired', 'This challenge does not belong to this verification; reload the page and sign the new message.');
    }
    if (challenge.used_at) throw new WalletClaimError('challenge_used', 'This challenge was already used. Reload the page and sign the new message.');
    if (challenge.expires_at.getTime() <= now.getTime())
      throw new WalletClaimError('challenge_expired', 'This challenge has expired. Reload the page and sign the new message.');
    if (!this.signatureValid(network, address, challenge.message, input.signature)) {
      throw new WalletClaimError('bad_signature', 'The signature does not match this wallet address and message.');
    }

    const claimed = await this.db.transaction(async (trx) => {
      const session = await this.sessions.findById({ id: input.sessionId, forUpdate: true }, trx);
      const refusal = this.claimRefusal(session, input.claimKey, now);
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- claimRefusal returns an error whenever the session is missing
      if (refusal || !session) throw refusal;
      // Single use, decided by the database: a concurrent or later replay finds used_at already set.
      if (!(await this.challenges.markUsed({ id: challenge.id, at: now }, trx))) {
        throw new WalletClaimError('challenge_used', 'This challenge was already used. Reload the page and sign the new message.');
      }
      const owner = await this.operators.findWallet({ network, address }, trx);
      if (owner) {
        if (session.operator_account_id && owner.account_id !== session.operator_account_id) {
          throw new WalletClaimError(
            'claimed_by_other',
            'This wallet is already linked to a different verified operator, so it cannot be linked here. Use another wallet, or contact support if you believe this is a mistake.',
          );
        }
        // Same wallet again: this is the same operator; bind the session to it (reuse, never a duplicate).
        if (!session.operator_account_id) await this.sessions.bindOperator({ id: session.id, operatorAccountId: owner.account_id }, trx);
        await this.operators.raiseLevel({ id: owner.account_id, level: 'wallet_claimed' }, trx);
        return { wallet: owner, operatorId: owner.account_id, alreadyLinked: true };
      }
      let operatorId = session.operator_account_id;
      if (!operatorId) {
        operatorId = (await this.operators.insertOperator({ name: `operator ${session.id.slice(3, 11)}` }, trx)).id;
        await this.sessions.bindOperator({ id: session.id, operatorAccountId: operatorId }, trx);
      }
      const wallet = await this.operators.insertWallet({ accountId: operatorId, network, address, sessionId: session.id, claimedAt: now }, trx);
      if (!wallet) {
        // Claimed by someone else between our read and insert (unique (network, address)).
        throw new WalletClaimError('claimed_by_other', 'This wallet is already linked to a different verified operator, so it cannot be linked here.');
      }
      await this.operators.raiseLevel({ id: operatorId, level: 'wallet_claimed' }, trx);
      return { wallet, operatorId, alreadyLinked: false };
    });
    // The wallet's owner (it may have been a capture of another operator) and the operator's level and wallets.
    await this.identityChanged({ operatorId: claimed.operatorId, wallets: [{ network, address }] });
    return claimed;
  }

  /**
   * The wallet's signature over a claim challenge, as pasted into the verify page: a 65-byte hex signature for
   * EVM; for Solana 64 bytes in hex, base58 or base64 (wallets differ).
   */
  signatureValid(network: AddressFamily, address: string, message: string, signature: string): boolean {
    if (network === 'evm') return /^0x[0-9a-fA-F]{130}$/.test(signature) && walletSignatureValid(network, address, message, signature);
    const sig = /^(0x)?[0-9a-fA-F]{128}$/.test(signature) ? Buffer.from(signature.replace(/^0x/, ''), 'hex') : decodeBase58OrBase64(signature);
    return sig !== null && sig.length === 64 && walletSignatureValid(network, address, message, sig);
  }

  /**
   * Who the verify page shows as the requester, from the merchant's account settings: display name, logo
   * (https only, checked when saved) and support email. Agent-started sessions have no merchant.
   */
  async requester(session: SessionRow): Promise<{ name: string; logoUrl: string | null; supportEmail: string | null }> {
    const none = { name: 'Your AI agent', logoUrl: null, supportEmail: null };
    if (session.kind === 'public' || !session.merchant_account_id) return none;
    const account = await this.operators.findAccount({ id: session.merchant_account_id });
    if (!account) return none;
    const logoUrl = account.logo_url && account.logo_url.startsWith('https://') ? account.logo_url : null;
    return { name: account.display_name || account.name || none.name, logoUrl, supportEmail: account.support_email || null };
  }

  async walletsForSession(session: SessionRow): Promise<OperatorWalletRow[]> {
    if (!session.operator_account_id) return [];
    return this.operators.listWallets({ accountId: session.operator_account_id });
  }

  // ---- provider webhooks ---------------------------------------------------------------------------------

  /** Whether a provider reference belongs to a session of this server (only those are fetched from the provider). */
  async startedHere(provider: string, reference: string): Promise<boolean> {
    return Boolean(await this.sessions.findByKycReference({ provider, reference }));
  }

  /**
   * Processes a provider event once: the event id is recorded in the same transaction that applies its result,
   * so a crash before commit leaves the event unrecorded and the provider's retry processes it.
   */
  async processProviderEvent(input: {
    provider: string;
    eventId: string;
    eventType: string;
    reference: string | null;
    result: KycResult | null;
  }): Promise<'processed' | 'duplicate' | 'ignored'> {
    let applied: KycApplied | null = null;
    const outcome = await this.db.transaction(async (trx) => {
      if (!(await this.kycEvents.recordOnce({ provider: input.provider, eventId: input.eventId, eventType: input.eventType }, trx))) return 'duplicate';
      if (!input.reference || !input.result) return 'ignored';
      const session = await this.sessions.findByKycReference({ provider: input.provider, reference: input.reference }, trx);
      if (!session) return 'ignored';
      applied = await this.applyKycResult(session.id, input.result, input.provider, trx);
      return applied.applied ? 'processed' : 'ignored';
    });
    if (applied) await this.kycChanged(applied);
    return outcome;
  }
}

function decodeBase58OrBase64(value: string): Uint8Array | null {
  try {
    if (/^[1-9A-HJ-NP-Za-km-z]+$/.test(value)) return bs58.decode(value);
  } catch {
    /* fall through to base64 */
  }
  const buf = Buffer.from(value, 'base64');
  return buf.length ? buf : null;
}
