// Wire shapes the gate reads from and sends to the identity server (spec "POST /v1/assess", "POST
// /v1/sessions", "POST /v1/credentials/wallets"). Declared here from the spec because the gate only talks
// HTTP; every field the server may omit is optional, and unknown fields are tolerated.

export type AddressFamily = 'evm' | 'solana';

export interface WirePolicy {
  require_kyc?: boolean;
  require_sanctions_clear?: boolean;
  min_age?: 18 | 21;
  blocked_jurisdictions?: string[];
  allowed_jurisdictions?: string[];
}

export interface AssessRequestBody {
  address?: string;
  operator_token?: string;
  chain?: string;
  policy?: WirePolicy;
  signer?: { address: string | null; network: AddressFamily };
}

export type SignerMatchKind = 'pass' | 'wallet_signer_mismatch' | 'wallet_auth_requires_wallet_signing';

export interface SignerMatch {
  kind: SignerMatchKind | string;
  claimed_operator?: string | null;
  signer_operator?: string | null;
  expected_signer?: string;
  actual_signer?: string;
  linked_wallets?: string[];
  /** JSON-encoded {action, steps, user_message}. */
  agent_instructions?: string;
}

export type SignerSanctions =
  | { status: 'clear' }
  | { status: 'unavailable' }
  | { sanctioned: true; ofac_label: string; sdn_uid: string; listed_at: string | null };

export interface AssessResponseBody {
  /** `allow`, `deny`, or null (treated as allow by every gate in the ecosystem). */
  decision: 'allow' | 'deny' | null;
  decision_reasons?: string[];
  policy_result?: { all_passed: boolean; checks: Array<{ rule: string; passed: boolean; required: unknown; actual: unknown }> };
  explanation?: Array<{ rule: string; passed: boolean; required: unknown; actual: unknown; message: string; how_to_remedy: string | null }>;
  identity_method?: 'wallet' | 'operator_token';
  operator_verification?: { level: string; operator_type?: string; verified_at?: string };
  resolved_operator?: string;
  linked_wallets?: string[];
  operator_handle?: string;
  verify_url?: string;
  signer_match?: SignerMatch;
  signer_sanctions?: SignerSanctions;
  test?: boolean;
  [extra: string]: unknown;
}

/** `POST /v1/sessions` create response (and the session fields a 401 token_expired carries). */
export interface SessionBody {
  session_id: string;
  poll_secret: string;
  verify_url: string;
  poll_url: string;
  expires_at?: string;
  next_steps?: Record<string, unknown>;
  agent_memory?: Record<string, unknown>;
  agent_instructions?: string | Record<string, unknown>;
  [extra: string]: unknown;
}

export interface ErrorResponseBody {
  error: { code: string; message: string; [extra: string]: unknown };
  agent_instructions?: string | { action?: string; steps?: string[]; user_message?: string };
  [topLevel: string]: unknown;
}

export interface WalletCaptureBody {
  operator_token: string;
  wallet_address: string;
  network: AddressFamily;
  idempotency_key?: string;
}

export interface WalletCaptureResponse {
  associated: boolean;
  first_seen: boolean;
  deduped?: boolean;
}

/** Quota headers of an assess response (absent for accounts without a quota). */
export interface QuotaInfo {
  limit: number | null;
  used: number | null;
  /** A date (`2026-05-01`) or `never`. */
  reset: string | null;
}
