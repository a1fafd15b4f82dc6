// Wire types of POST /v1/assess (request and response), shared by the server and the gate. Types and a few
// constant lists only, no runtime imports, so the gate can depend on this file without pulling in joi or the server.
import type { AgentInstructions } from './errors';

export type AddressFamily = 'evm' | 'solana';
export type Decision = 'allow' | 'deny';
export type IdentityMethod = 'wallet' | 'operator_token';

/** Reasons on `decision_reasons`, in the order the engine emits them. */
export const DECISION_REASONS = [
  'no_policy_applied',
  'kyc_required',
  'kyc_pending',
  'kyc_failed',
  'sanctions_flagged',
  'sanctions_check_unavailable',
  'age_insufficient',
  'jurisdiction_restricted',
] as const;
export type DecisionReason = (typeof DECISION_REASONS)[number];

/** Denial reasons a verification session can fix: only these carry `verify_url`. */
export const VERIFIABLE_REASONS: readonly DecisionReason[] = ['kyc_required', 'kyc_failed'];

/** The request's policy object; every field optional. */
export interface Policy {
  require_kyc?: boolean;
  require_sanctions_clear?: boolean;
  /** 18 or 21. */
  min_age?: 18 | 21;
  /** ISO 3166-1 alpha-2, uppercase. */
  blocked_jurisdictions?: string[];
  /** ISO 3166-1 alpha-2, uppercase. An empty list restricts nothing. */
  allowed_jurisdictions?: string[];
}

export type PolicyRule = keyof Policy;

/** `actual` of require_kyc: the account's KYC status. */
export type KycActual = 'verified' | 'none' | 'pending' | 'failed' | 'flagged';
/** `actual` of require_sanctions_clear. `unscreened` also covers a clear screening older than the window. */
export type SanctionsActual = 'clear' | 'flagged' | 'unscreened' | 'none';

export interface PolicyCheck {
  rule: PolicyRule;
  passed: boolean;
  /** What the policy asked for: true, 18 | 21, or the country list. */
  required: boolean | number | string[];
  /** What the operator has: a KYC/sanctions status, an age bracket (`18+`, `21+`, `under_18`), a country, or `none`. */
  actual: string;
}

export interface PolicyResult {
  all_passed: boolean;
  checks: PolicyCheck[];
}

export interface Explanation extends PolicyCheck {
  message: string;
  /** null when the rule passed or the denial cannot be fixed (e.g. verified age below the minimum). */
  how_to_remedy: string | null;
}

export interface AssessSigner {
  /** Recovered payment-signer wallet; null when the rail carries no wallet signature (card, shared payment token). */
  address: string | null;
  network: AddressFamily;
}

/** A proof of control of the `address` wallet, checked by the server (Sign-In-With-X, CAIP-122). */
export interface AssessWalletProof {
  type: 'siwx';
  /** The agent's SIGN-IN-WITH-X header value, verbatim (base64-encoded JSON). */
  header: string;
  /** The host the proof must be signed for: the merchant's public host, never a request's Host header. */
  domain: string;
  /** The merchant's public origin; the proof's uri must be on the same scheme, host and port. */
  uri: string;
}

/** Why a well-formed wallet proof was not accepted. */
export const WALLET_PROOF_REASONS = [
  'domain_mismatch',
  'uri_mismatch',
  'issued_in_future',
  'not_yet_valid',
  'expired',
  'expiry_too_long',
  'address_mismatch',
  'signature_invalid',
  'nonce_reused',
] as const;
export type WalletProofReason = (typeof WALLET_PROOF_REASONS)[number];

/** The server's verdict on `wallet_proof`; the decision itself is unchanged by it (callers enforce it). */
export type WalletProofVerdict =
  | { type: 'siwx'; verified: true; address: string; chain_id: string; /** ISO 8601. */ expires_at: string }
  | { type: 'siwx'; verified: false; address: string; chain_id: string; reason: WalletProofReason; message: string };

export interface AssessRequest {
  address?: string;
  operator_token?: string;
  chain?: string;
  refresh?: boolean;
  policy?: Policy;
  signer?: AssessSigner;
  /** Older name of `signer` (still accepted). */
  resolve_signer?: AssessSigner;
  /** Wallet mode only: a proof that the caller controls `address`. */
  wallet_proof?: AssessWalletProof;
  test?: boolean;
}

/** A merchant account's plan: it sets the monthly quota and the requests per second. */
export type Tier = 'free' | 'paid' | 'enterprise';

export type VerificationLevel = 'none' | 'wallet_claimed' | 'kyc_verified';

/** Only `level` when the operator has no verification. */
export interface OperatorVerification {
  level: VerificationLevel;
  operator_type?: string;
  /** ISO 8601. */
  verified_at?: string;
}

export type SignerMatchKind = 'pass' | 'wallet_signer_mismatch' | 'wallet_auth_requires_wallet_signing';

export interface SignerMatch {
  kind: SignerMatchKind;
  /** Resolved operator wallet of the claimed identity; null when unlinked. */
  claimed_operator: string | null;
  /** Resolved operator wallet of the signer; null when unlinked (or no signer wallet). */
  signer_operator: string | null;
  /** Mismatch only: the claimed wallet, normalised. */
  expected_signer?: string;
  /** Mismatch only: the signer wallet, normalised. */
  actual_signer?: string;
  /** Mismatch only, omitted when empty: wallets the agent could re-sign from. */
  linked_wallets?: string[];
  /** JSON-encoded AgentInstructions. */
  agent_instructions: string;
}

export type SignerMatchInstructions = AgentInstructions;

export type SignerSanctions =
  { status: 'clear' } | { sanctioned: true; ofac_label: string; sdn_uid: string; listed_at: string | null } | { status: 'unavailable' };

export interface AssessWarning {
  field: string;
  message: string;
}

export interface AssessResponse {
  decision: Decision;
  decision_reasons: DecisionReason[];
  /** Present when a policy with at least one rule was supplied. */
  policy_result?: PolicyResult;
  /** One per evaluated rule when a policy was supplied. */
  explanation?: Explanation[];
  identity_method: IdentityMethod;
  operator_verification: OperatorVerification;
  /** Wallet mode only. */
  resolved_operator?: string;
  /** Wallet mode only. */
  linked_wallets?: string[];
  /** operator_token mode only (on denials too). */
  operator_handle?: string;
  /** Only on denials a verification can fix (kyc_required, kyc_failed). */
  verify_url?: string;
  signer_match?: SignerMatch;
  signer_sanctions?: SignerSanctions;
  /** Present when `wallet_proof` was sent in wallet mode. */
  wallet_proof?: WalletProofVerdict;
  /** Unknown policy keys that were ignored. */
  warnings?: AssessWarning[];
  test?: true;
}

/** 401 token_expired on assess: the error plus a freshly minted verification session at the top level. */
export interface TokenExpiredBody {
  error: { code: 'token_expired'; message: string };
  verify_url: string;
  session_id: string;
  poll_secret: string;
  poll_url: string;
  expires_at: string;
  next_steps: Record<string, unknown>;
}

/** POST /v1/telemetry/signer-match body (older gates report verdicts they enforced). */
export interface SignerMatchTelemetry {
  kind: string;
  claimed_wallet?: string;
  signer?: string;
  network?: string;
}

/** The answer to `POST /v1/credentials`: the secret, shown this once, and what the agent should remember. */
export interface CreatedCredential {
  id: string;
  credential: string;
  prefix: string;
  label: string | null;
  expires_at: string;
  created_at: string;
  agent_memory: Record<string, unknown>;
}

/** One credential in `GET /v1/credentials` (the secret itself is never listed). */
export interface CredentialSummary {
  id: string;
  prefix: string;
  label: string | null;
  expires_at: string;
  created_at: string;
  last_used_at: string | null;
  refreshable: boolean;
}
