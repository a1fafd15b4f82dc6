// Wire shapes the gate reads from and sends to the identity server: assess types come from shared/types.ts
// (types only, shared with the server); sessions, wallet capture, errors and quota headers are declared here
// from the API description (/openapi.json). The gate only talks HTTP, so fields the server may omit are optional.

import type { AssessRequest, AssessResponse, AddressFamily, Policy } from '../shared/types';
import type { AgentInstructions } from '../shared/errors';

export type { AddressFamily, SignerMatch, SignerSanctions, WalletProofVerdict, WalletProofReason, AssessWalletProof } from '../shared/types';
export type WirePolicy = Policy;
export type AssessRequestBody = Pick<AssessRequest, 'address' | 'operator_token' | 'chain' | 'policy' | 'signer' | 'wallet_proof'>;

/** The assess answer as the gate reads it: `decision` may be null (the ecosystem treats null as allow). */
export type AssessResponseBody = Omit<AssessResponse, 'decision' | 'decision_reasons' | 'identity_method' | 'operator_verification'> & {
  decision: AssessResponse['decision'] | null;
  decision_reasons?: string[];
  identity_method?: AssessResponse['identity_method'];
  operator_verification?: AssessResponse['operator_verification'];
};

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
  error: { code: string; message: string; details?: Array<{ field: string; message: string }>; [extra: string]: unknown };
  agent_instructions?: string | Partial<AgentInstructions>;
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
