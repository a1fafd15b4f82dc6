// POST /v1/assess: resolves the identity (wallet or operator credential) and the payment signer in one
// Postgres round trip, evaluates the policy, checks the signer against the wallet sanctions list, and shapes
// the response. The audit row is committed before the response (group commit; the meter holds the response);
// the scoring job and last_used_at happen behind it.
import { ApiError } from '../../shared/errors';
import { signerMatchCopy } from './agentCopy';
import type {
  AddressFamily,
  AssessResponse,
  AssessWarning,
  DecisionReason,
  Policy,
  SignerMatch,
  SignerSanctions,
  WalletProofVerdict,
} from '../../shared/types';
import { VERIFIABLE_REASONS } from '../../shared/types';
import type { Chain } from '../../shared/chains';
import type { Config } from '../config';
import { decryptJson, encryptJson, hmacSha256, operatorHandle, sha256Hex } from '../crypto';
import type { JobQueue } from '../jobs/queue';
import type { Logger } from '../logger';
import type { AuditLog } from '../repositories/audit';
import type { LookupInput, LookupResult, WalletRef } from '../repositories/operatorLookup';
import type { WalletSanctionsService } from '../sanctions/walletSanctions';
import type { Principal } from './accounts';
import { operatorVerification, resolveOperator, type ResolvedOperator } from './operators';
import { evaluatePolicy, NO_OPERATOR, withExtraReasons, type OperatorState } from './policy';
import type { SessionsService } from './sessions';
import type { CredentialLifecycleService, CredentialsService } from './credentials';
import type { WalletProofInput, WalletProofService } from './walletProof';

export const SCORE_JOB = 'reputation.score';

export interface ScoreJobData {
  address: string;
  network: AddressFamily;
  /** The requested chain; for a new address without one, the family default (base / solana). null = scorer's choice. */
  chain: Chain | null;
  reason: 'new' | 'refresh';
}

/** A validated assess request (see routes/assess.ts). */
export interface AssessInput {
  identity: { kind: 'wallet'; wallet: WalletRef } | { kind: 'token'; token: string };
  chain: Chain | null;
  refresh: boolean;
  policy: Policy | null;
  /** address null: the rail carries no wallet signature. */
  signer: { network: AddressFamily; address: string | null } | null;
  /** Wallet mode only: a Sign-In-With-X proof of control of the wallet. */
  walletProof: WalletProofInput | null;
  warnings: AssessWarning[];
}

export const TEST_FIXTURES: Record<
  string,
  { kyc: OperatorState['kycStatus']; jurisdiction: string | null; age: string | null; sanctions: 'clear' | 'flagged' | null }
> = {
  '0x0000000000000000000000000000000000000001': { kyc: 'verified', jurisdiction: 'US', age: '21+', sanctions: 'clear' },
  '0x0000000000000000000000000000000000000002': { kyc: 'none', jurisdiction: null, age: null, sanctions: null },
  '0x0000000000000000000000000000000000000003': { kyc: 'flagged', jurisdiction: 'US', age: '21+', sanctions: 'flagged' },
  '0x0000000000000000000000000000000000000004': { kyc: 'verified', jurisdiction: 'DE', age: '21+', sanctions: 'clear' },
  '0x0000000000000000000000000000000000000005': { kyc: 'verified', jurisdiction: 'US', age: '18+', sanctions: 'clear' },
  '0x0000000000000000000000000000000000000006': { kyc: 'verified', jurisdiction: 'IR', age: '21+', sanctions: 'clear' },
  '0x0000000000000000000000000000000000000007': { kyc: 'verified', jurisdiction: 'BR', age: '21+', sanctions: 'clear' },
};
const FIXTURE_VERIFIED_AT = new Date('2025-01-15T12:00:00.000Z');
const VERIFY_LINK_TTL_MS = 24 * 3600_000;

export interface AssessServiceDeps {
  config: Config;
  logger: Logger;
  now: () => Date;
  /** The identity cache (answers from memory when it can, else the one lookup statement). */
  lookup: { lookup(input: LookupInput): Promise<LookupResult> };
  sanctions: WalletSanctionsService;
  sessions: SessionsService;
  credentialLifecycle: CredentialLifecycleService;
  jobs: JobQueue;
  audit: AuditLog;
  /** Decides whether a looked-up credential is live, and records its use. */
  credentials: Pick<CredentialsService, 'classify'>;
  walletProofs: WalletProofService;
}

export class AssessService {
  private readonly linkKey: Buffer;

  constructor(private readonly d: AssessServiceDeps) {
    // A key of its own for verify links, derived so it never equals the HMAC or PII keys themselves.
    this.linkKey = hmacSha256(d.config.serverSecret, 'kya:assess-verify-link:v1');
  }

  /** A non-test assess: one Postgres round trip (lookup), no Redis, everything else behind the response. */
  async assess(input: AssessInput, principal: Principal, requestId: string): Promise<AssessResponse> {
    const signerRef: WalletRef | null = input.signer?.address ? { network: input.signer.network, address: input.signer.address } : null;
    let claimed: ResolvedOperator | null;
    let signerOwner: ResolvedOperator | null;
    let handle: string | undefined;
    let identityValue: string;
    let walletProof: WalletProofVerdict | undefined;
    if (input.identity.kind === 'wallet') {
      const wallet = input.identity.wallet;
      // The proof (signature check, then one store write for its nonce) runs beside the lookup, not after it.
      const [found, verdict] = await Promise.all([
        this.d.lookup.lookup({ mode: 'wallet', wallet, signer: signerRef, refresh: input.refresh }),
        input.walletProof ? this.d.walletProofs.verify(input.walletProof, wallet) : undefined,
      ]);
      walletProof = verdict;
      claimed = found.claimed ? resolveOperator(found.claimed) : null;
      signerOwner = found.signer ? resolveOperator(found.signer) : null;
      identityValue = wallet.address;
      if (found.newAddress || input.refresh) this.queueScoring(wallet, input.chain, found.newAddress ? 'new' : 'refresh');
    } else {
      const tokenHash = sha256Hex(input.identity.token);
      const found = await this.d.lookup.lookup({ mode: 'token', tokenHash, signer: signerRef });
      // Same 401s as wallet capture: invalid_credential (never existed), token_expired + a fresh session.
      const resolution = this.d.credentials.classify(found.credential);
      if (resolution.status !== 'live') throw await this.d.credentialLifecycle.rejection(resolution, principal.accountId);
      const cred = resolution.credential;
      claimed = found.claimed ? resolveOperator(found.claimed) : null;
      signerOwner = found.signer ? resolveOperator(found.signer) : null;
      handle = operatorHandle(this.d.config.serverSecret, cred.account_id, principal.accountId);
      identityValue = tokenHash;
    }

    const body = this.decide({
      input,
      principal,
      state: claimed?.state ?? NO_OPERATOR,
      claimed,
      signerOwner,
      handle,
      walletProof,
    });
    this.d.audit.record({
      account_id: principal.accountId,
      request_id: requestId,
      identity_kind: input.identity.kind === 'wallet' ? 'wallet' : 'operator_token',
      identity_value: identityValue,
      decision: body.decision,
      reasons: body.decision_reasons,
      signer_kind: body.signer_match?.kind ?? null,
      signer_sanctions: body.signer_sanctions ? sanctionsVerdict(body.signer_sanctions) : null,
      created_at: this.d.now(),
    });
    return body;
  }

  /** Test mode: reserved fixtures only, evaluated like real operators; no database, no Redis, no audit. */
  assessTest(input: AssessInput, principal: Principal): AssessResponse {
    if (input.identity.kind !== 'wallet')
      throw new ApiError('invalid_test_address', 'Test mode works only with the reserved test addresses (0x…0001 to 0x…0007).', {
        details: [{ field: 'operator_token', message: 'test mode takes a reserved test address, not an operator_token' }],
      });
    const address = input.identity.wallet.address;
    const fixture = TEST_FIXTURES[address];
    if (!fixture)
      throw new ApiError('invalid_test_address', 'Test mode works only with the reserved test addresses (0x…0001 to 0x…0007).', {
        details: [{ field: 'address', message: 'is not a reserved test address' }],
      });
    const state = fixtureState(address, this.d.now());
    const claimed: ResolvedOperator = { accountId: `test:${address}`, state, wallets: [address], resolvedWallet: address };
    const signerAddress = input.signer?.address ?? null;
    const signerOwner: ResolvedOperator | null =
      signerAddress && TEST_FIXTURES[signerAddress]
        ? { accountId: `test:${signerAddress}`, state: fixtureState(signerAddress, this.d.now()), wallets: [signerAddress], resolvedWallet: signerAddress }
        : null;
    return { ...this.decide({ input, principal, state, claimed, signerOwner, handle: undefined }), test: true };
  }

  private decide(ctx: {
    input: AssessInput;
    principal: Principal;
    state: OperatorState;
    claimed: ResolvedOperator | null;
    signerOwner: ResolvedOperator | null;
    handle: string | undefined;
    walletProof?: WalletProofVerdict;
  }): AssessResponse {
    const { input, principal, state, claimed, signerOwner } = ctx;
    let evaluation = evaluatePolicy(input.policy, state, { now: this.d.now(), freshnessDays: principal.sanctionsFreshnessDays });
    let signerMatch: SignerMatch | undefined;
    let signerSanctions: SignerSanctions | undefined;
    if (input.signer) {
      signerMatch = this.signerMatch(input, claimed, signerOwner);
      signerSanctions = input.signer.address ? this.d.sanctions.check(input.signer.network, input.signer.address) : { status: 'clear' };
      const extra: DecisionReason[] = [];
      if ('sanctioned' in signerSanctions) extra.push('sanctions_flagged');
      else if (signerSanctions.status === 'unavailable') extra.push('sanctions_check_unavailable');
      evaluation = withExtraReasons(evaluation, extra);
    }
    // Built field by field so the JSON keys come out in the documented order.
    const body = { decision: evaluation.decision, decision_reasons: evaluation.reasons } as AssessResponse;
    if (evaluation.policyResult) body.policy_result = evaluation.policyResult;
    if (evaluation.explanation) body.explanation = evaluation.explanation;
    body.identity_method = input.identity.kind === 'wallet' ? 'wallet' : 'operator_token';
    body.operator_verification = operatorVerification(state);
    if (input.identity.kind === 'wallet') {
      const own = input.identity.wallet.address;
      // An unlinked wallet is an operator group of one: itself.
      body.resolved_operator = claimed?.resolvedWallet ?? own;
      body.linked_wallets = claimed?.wallets.length ? claimed.wallets : [own];
    }
    if (ctx.handle) body.operator_handle = ctx.handle;
    if (body.decision === 'deny' && body.decision_reasons.some((r) => VERIFIABLE_REASONS.includes(r))) {
      body.verify_url = this.verifyLink(principal.accountId, input.identity.kind === 'wallet' ? input.identity.wallet : null);
    }
    if (signerMatch) body.signer_match = signerMatch;
    if (signerSanctions) body.signer_sanctions = signerSanctions;
    if (ctx.walletProof) body.wallet_proof = ctx.walletProof;
    if (input.warnings.length) body.warnings = input.warnings;
    return body;
  }

  /**
   * Wallet mode: the signer must be the claimed wallet or a wallet of the same operator. Token mode: the
   * credential proves the operator, so a signer linked to nobody passes (the merchant's wallet capture links
   * it after payment) and only a wallet of a different operator is a mismatch; no signature is needed.
   */
  private signerMatch(input: AssessInput, claimed: ResolvedOperator | null, signerOwner: ResolvedOperator | null): SignerMatch {
    const claimedOperator = claimed?.resolvedWallet ?? null;
    const signerOperator = signerOwner?.resolvedWallet ?? null;
    const signer = input.signer!;
    const base = { claimed_operator: claimedOperator, signer_operator: signerOperator };
    if (signer.address === null) {
      if (input.identity.kind === 'token') return { kind: 'pass', ...base, agent_instructions: signerMatchCopy.pass };
      return { kind: 'wallet_auth_requires_wallet_signing', ...base, agent_instructions: signerMatchCopy.useOperatorToken };
    }
    const sameOperator = Boolean(claimed && signerOwner && claimed.accountId === signerOwner.accountId);
    if (input.identity.kind === 'wallet') {
      const claimedWallet = input.identity.wallet;
      const same = (claimedWallet.network === signer.network && claimedWallet.address === signer.address) || sameOperator;
      if (same) return { kind: 'pass', ...base, agent_instructions: signerMatchCopy.pass };
      const linked = claimed?.wallets ?? [];
      const out: SignerMatch = {
        kind: 'wallet_signer_mismatch',
        ...base,
        expected_signer: claimedWallet.address,
        actual_signer: signer.address,
        agent_instructions: signerMatchCopy.mismatch(linked),
      };
      if (linked.length) out.linked_wallets = linked;
      return out;
    }
    if (!signerOwner || sameOperator) return { kind: 'pass', ...base, agent_instructions: signerMatchCopy.pass };
    const linked = claimed?.wallets ?? [];
    const out: SignerMatch = { kind: 'wallet_signer_mismatch', ...base, actual_signer: signer.address, agent_instructions: signerMatchCopy.mismatch(linked) };
    if (claimedOperator) out.expected_signer = claimedOperator;
    if (linked.length) out.linked_wallets = linked;
    // Key order as documented: expected before actual.
    return reorder(out);
  }

  private queueScoring(wallet: WalletRef, chain: Chain | null, reason: 'new' | 'refresh') {
    const data: ScoreJobData = {
      address: wallet.address,
      network: wallet.network,
      chain: chain ?? (reason === 'new' ? (wallet.network === 'solana' ? 'solana' : 'base') : null),
      reason,
    };
    // Never awaited: the response must not wait for the queue, and a queue outage must not fail assess.
    this.d.jobs.add(SCORE_JOB, data, { jobId: `${wallet.network}:${wallet.address}` }).catch((err: Error) => {
      this.d.logger.warn({ err: err.message }, 'could not queue a scoring job');
    });
  }

  /**
   * verify_url on denials: a link that starts a verification session for this merchant when a person opens
   * it (GET /v1/assess/verify/:ticket). Stateless, so a denial costs no extra database write and test mode
   * can return one too. The ticket is encrypted and authenticated (AES-256-GCM): it reveals nothing.
   */
  verifyLink(merchantAccountId: string, wallet: WalletRef | null = null): string {
    // Expiry rounded to the hour so repeated denials produce the same link within an hour.
    const hour = Math.floor(this.d.now().getTime() / 3600_000) * 3600_000;
    // A wallet-mode denial names its wallet, so the verify page can ask the person to link that wallet.
    const payload: { m: string; x: number; w?: string } = { m: merchantAccountId, x: hour + VERIFY_LINK_TTL_MS };
    if (wallet) payload.w = `${wallet.network}:${wallet.address}`;
    const ticket = encryptJson(this.linkKey, payload);
    return `${this.d.config.publicBaseUrl}/v1/assess/verify/${toBase64Url(ticket)}`;
  }

  /** Opens a verify link: a new merchant session, whose verify_url the caller redirects to. */
  async openVerifyLink(ticket: string): Promise<string> {
    let payload: { m?: unknown; x?: unknown; w?: unknown };
    try {
      payload = decryptJson(this.linkKey, fromBase64Url(ticket));
    } catch {
      throw new ApiError('not_found', 'This verification link is not valid.');
    }
    if (typeof payload.m !== 'string' || typeof payload.x !== 'number' || payload.x <= this.d.now().getTime()) {
      throw new ApiError('not_found', 'This verification link has expired. Retry the purchase to get a new one.');
    }
    const wallet = typeof payload.w === 'string' && /^(evm|solana):[A-Za-z0-9]{20,64}$/.test(payload.w) ? payload.w : null;
    const context = wallet ? `assess:verify_url:wallet:${wallet}` : 'assess:verify_url';
    const { body } = await this.d.sessions.create({ kind: 'merchant', merchantAccountId: payload.m, context });
    return body.verify_url;
  }
}

function reorder(m: SignerMatch): SignerMatch {
  const { kind, claimed_operator, signer_operator, expected_signer, actual_signer, linked_wallets, agent_instructions } = m;
  const out: SignerMatch = { kind, claimed_operator, signer_operator } as SignerMatch;
  if (expected_signer !== undefined) out.expected_signer = expected_signer;
  if (actual_signer !== undefined) out.actual_signer = actual_signer;
  if (linked_wallets !== undefined) out.linked_wallets = linked_wallets;
  out.agent_instructions = agent_instructions;
  return out;
}

function sanctionsVerdict(s: SignerSanctions): string {
  return 'sanctioned' in s ? 'sanctioned' : s.status;
}

function fixtureState(address: string, now: Date): OperatorState {
  const f = TEST_FIXTURES[address];
  const verified = f.kyc === 'verified' || f.kyc === 'flagged';
  return {
    kycStatus: f.kyc,
    kycVerifiedAt: verified ? FIXTURE_VERIFIED_AT : null,
    operatorType: verified ? 'individual' : null,
    jurisdiction: f.jurisdiction,
    ageBracket: f.age,
    ageVerified: verified,
    sanctionsStatus: f.sanctions,
    sanctionsCheckedAt: f.sanctions ? new Date(now.getTime() - 86_400_000) : null,
    verificationLevel: verified ? 'kyc_verified' : 'none',
  };
}

function toBase64Url(b64: string): string {
  return b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(value: string): string {
  if (!/^[A-Za-z0-9_-]{20,400}$/.test(value)) throw new Error('malformed ticket');
  return value.replace(/-/g, '+').replace(/_/g, '/');
}
