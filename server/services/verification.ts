// What happens on the verify page: a KYC outcome moves the session pending → verified | failed | flagged and
// writes the operator's KYC state (PII encrypted, name screening recorded); a signed wallet-ownership challenge
// links a wallet to the operator. Merchant and public sessions resolve to an operator account (reused when the
// same person or the same wallet verifies again); `self` sessions write to the account that started them.
import type { Knex } from 'knex';
import { verifyMessage } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { ApiError, badRequest } from '../../shared/errors';
import { parseAddressFor, type AddressNetwork } from '../../shared/address';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { encryptJson, hmacSha256, randomBase62 } from '../crypto';
import { ageBracket, type KycResult, type VerifiedIdentity } from '../kyc/types';
import type { OperatorsRepository, OperatorAccountRow, OperatorWalletRow } from '../repositories/operators';
import type { SessionRow, SessionsRepository } from '../repositories/sessions';
import type { WalletChallengeRow, WalletChallengesRepository } from '../repositories/walletChallenges';
import type { KycEventsRepository } from '../repositories/kycEvents';
import type { ScreeningService, StoredIdentity } from '../screening/service';

export const CHALLENGE_TTL_SECONDS = 600;

export type WalletClaimRefusal = 'challenge_used' | 'challenge_expired' | 'bad_signature' | 'claimed_by_other' | 'session_closed';

/** A refused wallet claim: `reason` tells the page which clear message to show. */
export class WalletClaimError extends ApiError {
  constructor(readonly reason: WalletClaimRefusal, message: string) {
    super(reason === 'claimed_by_other' ? 'conflict' : reason === 'session_closed' ? 'forbidden' : 'bad_request', message, {
      details: reason === 'claimed_by_other' || reason === 'session_closed' ? undefined : [{ field: reason === 'bad_signature' ? 'signature' : 'challenge_id', message }],
    });
  }
}

export interface KycApplied {
  session: SessionRow;
  /** false when the session was no longer pending (already completed, or expired). */
  applied: boolean;
}

export class VerificationService {
  constructor(
    private readonly db: Knex,
    private readonly sessions: SessionsRepository,
    private readonly operators: OperatorsRepository,
    private readonly challenges: WalletChallengesRepository,
    private readonly kycEvents: KycEventsRepository,
    private readonly screening: ScreeningService,
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly now: () => Date,
  ) {}

  /** Keyed fingerprint of a verified identity: the same person maps to the same operator without storing PII. */
  fingerprint(identity: VerifiedIdentity): string {
    const norm = (s: string | null) => (s ?? '').normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toUpperCase().replace(/[^A-Z0-9]+/g, '');
    const material = ['identity-v1', norm(identity.fullName), identity.dateOfBirth, identity.country, norm(identity.documentNumber)].join('|');
    return hmacSha256(this.config.serverSecret, material).toString('hex');
  }

  /** Whether a wallet may still be claimed in this session (pending, or verified within the session lifetime). */
  claimWindowOpen(session: SessionRow, now = this.now()): boolean {
    if (session.status === 'pending') return session.expires_at.getTime() > now.getTime();
    if (session.status === 'verified' || session.status === 'consumed') {
      const from = (session.completed_at ?? session.created_at).getTime();
      return now.getTime() < from + this.config.sessions.ttlSeconds * 1000;
    }
    return false;
  }

  /**
   * Applies a provider result to a session in one transaction. Verified identities are screened by name;
   * a match (or the provider's own watchlist hit) gives `flagged` and records the operator as flagged.
   */
  async applyKycResult(sessionId: string, result: KycResult, provider: string, outerTrx?: Knex.Transaction): Promise<KycApplied> {
    const work = async (trx: Knex.Transaction): Promise<KycApplied> => {
      const now = this.now();
      const session = await this.sessions.findById({ id: sessionId, forUpdate: true }, trx);
      if (!session) throw new ApiError('not_found', 'Session not found.');
      if (session.status !== 'pending') return { session, applied: false };
      if (session.expires_at.getTime() <= now.getTime()) {
        const expired = await this.sessions.expireIfDue({ id: session.id, now }, trx);
        return { session: expired ?? session, applied: false };
      }

      if (result.outcome === 'failed') {
        if (session.operator_account_id) {
          const current = await this.operators.findAccount({ id: session.operator_account_id, forUpdate: true }, trx);
          // A failed retry never downgrades an identity that was verified before.
          if (current && current.kyc_status !== 'verified') {
            await this.operators.applyKyc({ id: current.id, patch: { kyc_status: 'failed', kyc_provider: provider, kyc_reference: result.reference } }, trx);
          }
        }
        const row = await this.sessions.completeIfPending({ id: session.id, status: 'failed', at: now, operatorAccountId: session.operator_account_id }, trx);
        return { session: row!, applied: true };
      }

      const identity = result.identity;
      const fingerprint = this.fingerprint(identity);
      const operator = await this.resolveOperatorForKyc(session, fingerprint, trx);
      if (!operator) {
        // The session is bound (by a claimed wallet) to an operator whose verified identity is someone else.
        const row = await this.sessions.completeIfPending({ id: session.id, status: 'failed', at: now, operatorAccountId: session.operator_account_id }, trx);
        this.logger.info({ session: session.id }, 'verified identity does not match the operator of the claimed wallet');
        return { session: row!, applied: true };
      }

      const screening = result.watchlistHit ? ({ status: 'flagged' } as const) : this.screening.screen({
        fullName: identity.fullName,
        dobYear: Number(identity.dateOfBirth.slice(0, 4)),
        country: identity.country,
      });
      const stored: StoredIdentity = {
        full_name: identity.fullName,
        date_of_birth: identity.dateOfBirth,
        country: identity.country,
        document_last4: identity.documentNumber ? identity.documentNumber.slice(-4) : null,
      };
      const common = {
        operator_type: identity.operatorType,
        jurisdiction: identity.country,
        age_bracket: ageBracket(identity.dateOfBirth, now),
        age_verified: true,
        kyc_provider: provider,
        kyc_reference: result.reference,
        pii_encrypted: encryptJson(this.config.piiKey, stored),
        identity_fingerprint: fingerprint,
      };
      if (screening.status === 'flagged') {
        await this.operators.applyKyc(
          { id: operator.id, patch: { ...common, kyc_status: 'flagged', sanctions_status: 'flagged', sanctions_checked_at: now } },
          trx,
        );
        if (screening.status === 'flagged' && 'best' in screening) {
          this.logger.warn({ session: session.id, operator: operator.id, list_uid: screening.best.uid, score: screening.best.score }, 'name screening match; session flagged for review');
        }
        const row = await this.sessions.completeIfPending({ id: session.id, status: 'flagged', at: now, operatorAccountId: operator.id }, trx);
        return { session: row!, applied: true };
      }
      const screened = screening.status === 'clear';
      if (!screened) this.logger.warn({ session: session.id }, 'no sanctions name list loaded; identity verified but left unscreened');
      await this.operators.applyKyc(
        {
          id: operator.id,
          patch: {
            ...common,
            kyc_status: 'verified',
            kyc_verified_at: now,
            sanctions_status: screened ? 'clear' : null,
            sanctions_checked_at: screened ? now : null,
          },
        },
        trx,
      );
      await this.operators.raiseLevel({ id: operator.id, level: 'kyc_verified' }, trx);
      const row = await this.sessions.completeIfPending({ id: session.id, status: 'verified', at: now, operatorAccountId: operator.id }, trx);
      return { session: row!, applied: true };
    };
    return outerTrx ? work(outerTrx) : this.db.transaction(work);
  }

  /** The account a verified identity belongs to; null when the bound operator is a different verified person. */
  private async resolveOperatorForKyc(session: SessionRow, fingerprint: string, trx: Knex.Transaction): Promise<OperatorAccountRow | null> {
    if (session.operator_account_id) {
      const bound = await this.operators.findAccount({ id: session.operator_account_id, forUpdate: true }, trx);
      if (!bound) throw new ApiError('not_found', 'The account of this session no longer exists.');
      if (session.kind === 'self') return bound;
      if (bound.identity_fingerprint && bound.identity_fingerprint !== fingerprint) return null;
      return bound;
    }
    const existing = await this.operators.findByFingerprint({ fingerprint }, trx);
    if (existing) return existing;
    return this.operators.insertOperator({ name: `operator ${session.id.slice(3, 11)}` }, trx);
  }

  // ---- wallet claims -------------------------------------------------------------------------------------

  private domain(): string {
    return new URL(this.config.publicBaseUrl).host;
  }

  /** An unused challenge valid for at least two more minutes, or a new one. */
  async challengeFor(session: SessionRow): Promise<WalletChallengeRow> {
    const now = this.now();
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
  async claimWallet(input: { sessionId: string; challengeId: string; network: string; address: string; signature: string }): Promise<{ wallet: OperatorWalletRow; operatorId: string; alreadyLinked: boolean }> {
    const problems = [];
    if (input.network !== 'evm' && input.network !== 'solana') problems.push({ field: 'network', message: 'Choose EVM or Solana.' });
    const parsed = input.network === 'evm' || input.network === 'solana' ? parseAddressFor(input.network, input.address) : null;
    if (!parsed) problems.push({ field: 'address', message: `Enter a valid ${input.network === 'solana' ? 'Solana' : 'EVM'} wallet address.` });
    if (!input.signature) problems.push({ field: 'signature', message: 'Paste the signature your wallet produced.' });
    if (!/^[0-9a-f-]{36}$/i.test(input.challengeId)) problems.push({ field: 'challenge_id', message: 'The challenge is missing; reload the page.' });
    if (problems.length) throw badRequest(problems);
    const network = input.network as AddressNetwork;
    const address = parsed!.address;

    const now = this.now();
    const challenge = await this.challenges.findById({ id: input.challengeId });
    if (!challenge || challenge.session_id !== input.sessionId) {
      throw new WalletClaimError('challenge_expired', 'This challenge does not belong to this verification; reload the page and sign the new message.');
    }
    if (challenge.used_at) throw new WalletClaimError('challenge_used', 'This challenge was already used. Reload the page and sign the new message.');
    if (challenge.expires_at.getTime() <= now.getTime()) throw new WalletClaimError('challenge_expired', 'This challenge has expired. Reload the page and sign the new message.');
    if (!this.signatureValid(network, address, challenge.message, input.signature.trim())) {
      throw new WalletClaimError('bad_signature', 'The signature does not match this wallet address and message.');
    }

    return this.db.transaction(async (trx) => {
      const session = await this.sessions.findById({ id: input.sessionId, forUpdate: true }, trx);
      if (!session || !this.claimWindowOpen(session, now)) {
        throw new WalletClaimError('session_closed', 'This verification is closed; wallets can no longer be linked through it.');
      }
      // Single use, decided by the database: a concurrent or later replay finds used_at already set.
      if (!(await this.challenges.markUsed({ id: challenge.id, at: now }, trx))) {
        throw new WalletClaimError('challenge_used', 'This challenge was already used. Reload the page and sign the new message.');
      }
      const owner = await this.operators.findWallet({ network, address }, trx);
      if (owner) {
        if (session.operator_account_id && owner.account_id !== session.operator_account_id) {
          throw new WalletClaimError('claimed_by_other', 'This wallet is already linked to a different verified operator, so it cannot be linked here. Use another wallet, or contact support if you believe this is a mistake.');
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
  }

  /** EIP-191 personal_sign (ethers) for EVM; ed25519 over the UTF-8 message (tweetnacl) for Solana. */
  signatureValid(network: AddressNetwork, address: string, message: string, signature: string): boolean {
    try {
      if (network === 'evm') {
        if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return false;
        return verifyMessage(message, signature).toLowerCase() === address.toLowerCase();
      }
      const sig = /^(0x)?[0-9a-fA-F]{128}$/.test(signature) ? Buffer.from(signature.replace(/^0x/, ''), 'hex') : decodeBase58OrBase64(signature);
      if (!sig || sig.length !== 64) return false;
      return nacl.sign.detached.verify(new TextEncoder().encode(message), sig, bs58.decode(address));
    } catch {
      return false;
    }
  }

  /** The name the verify page shows as the requester: the merchant's display name from account settings. */
  async requesterName(session: SessionRow): Promise<string> {
    if (session.kind === 'public' || !session.merchant_account_id) return 'Your AI agent';
    const account = await this.operators.findAccount({ id: session.merchant_account_id });
    return account?.display_name || account?.name || 'Your AI agent';
  }

  async walletsForSession(session: SessionRow): Promise<OperatorWalletRow[]> {
    if (!session.operator_account_id) return [];
    return this.operators.listWallets({ accountId: session.operator_account_id });
  }

  // ---- provider webhooks ---------------------------------------------------------------------------------

  /**
   * Processes a provider event once: the event id is recorded in the same transaction that applies its result,
   * so a crash before commit leaves the event unrecorded and the provider's retry processes it.
   */
  async processProviderEvent(input: { provider: string; eventId: string; eventType: string; reference: string | null; result: KycResult | null }): Promise<'processed' | 'duplicate' | 'ignored'> {
    return this.db.transaction(async (trx) => {
      if (!(await this.kycEvents.recordOnce({ provider: input.provider, eventId: input.eventId, eventType: input.eventType }, trx))) return 'duplicate';
      if (!input.reference || !input.result) return 'ignored';
      const session = await this.sessions.findByKycReference({ provider: input.provider, reference: input.reference }, trx);
      if (!session) return 'ignored';
      const { applied } = await this.applyKycResult(session.id, input.result, input.provider, trx);
      return applied ? 'processed' : 'ignored';
    });
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
