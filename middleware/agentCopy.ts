// The gate's agent-facing text in one place: the instructions and messages its own denials carry (the server's
// are passed through unchanged). Waits are parameters: the Retry-After the denial sends, the proof lifetime the
// challenge states, so the text never disagrees with the headers and fields next to it.
import { durationText } from '../shared/duration';
import { retryWithBackoffAdvice } from '../shared/retryAdvice';
import type { ParsedAddress } from '../shared/address';
import type { AgentInstructions } from '../shared/errors';
import type { InfraReason } from './core';

/** The instructions a gate denial carries: the server's `agent_instructions` envelope. */
export type GateInstructions = AgentInstructions;

/** The default Retry-After of a gate 503 when the identity server sent none. */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;
/** For a 503 the agent may retry: wait what Retry-After says, back off, and give up telling the user after a few minutes. */
export function retryWithBackoff(retryAfterSeconds: number): GateInstructions {
  return retryWithBackoffAdvice(retryAfterSeconds, {
    giveUp: 'the merchant cannot verify identity right now',
    userMessage: 'The merchant cannot check identity right now. Retrying shortly.',
  });
}

export const CONTACT_MERCHANT: GateInstructions = {
  action: 'contact_merchant',
  steps: ['Do not retry: the problem is on the merchant side.', 'Tell the user the merchant cannot accept agent purchases right now.'],
  user_message: 'This merchant cannot verify agent identity at the moment. Please contact the merchant.',
};

export const PRESENT_IDENTITY: GateInstructions = {
  action: 'present_identity',
  steps: [
    'Retry with the header X-Operator-Token: <operator credential> from your credential store,',
    'or with X-Wallet-Address: <wallet your operator claimed> and a proof that you control it: a payment signed by that wallet, or a SIGN-IN-WITH-X header.',
    'Without either, ask your operator to verify once and obtain an operator credential.',
  ],
  user_message: 'This merchant requires a verified operator behind the agent.',
};

/** A fresh object per denial (merchant hooks may change the body they are handed). */
export function reSignFromLinkedWallet(): GateInstructions {
  return {
    action: 're_sign_from_linked_wallet',
    steps: ['Sign the payment again from one of linked_wallets (a wallet of the same operator),', 'or present X-Operator-Token instead of X-Wallet-Address.'],
    user_message: 'The paying wallet does not belong to the operator this agent claimed.',
  };
}

export function useOperatorToken(): GateInstructions {
  return {
    action: 'use_operator_token',
    steps: [
      'This payment rail carries no wallet signature, so a claimed wallet cannot be confirmed.',
      'Retry the request with the header X-Operator-Token: <operator credential> from your credential store.',
    ],
    user_message: 'Use your operator credential to pay by card with this merchant.',
  };
}

/**
 * How to prove control of a named wallet: a SIGN-IN-WITH-X proof (when the merchant set publicOrigin; its
 * expirationTime at most `proofLifetimeSeconds` after issuedAt) or a payment signed by it, or a credential instead.
 */
export function proveWalletControl(wallet: ParsedAddress, options: { siwxHeader: string; siwx: boolean; proofLifetimeSeconds: number }): GateInstructions {
  const steps: string[] = [];
  if (options.siwx) {
    steps.push(
      `Prove control of ${wallet.address}: sign the message built from extensions["sign-in-with-x"].info (${wallet.network === 'evm' ? 'EIP-4361, personal_sign' : 'Sign-In-With-Solana, ed25519'}) with that wallet, using a fresh nonce and an expirationTime at most ${durationText(options.proofLifetimeSeconds)} after issuedAt, and retry with the header ${options.siwxHeader}: <base64 of the JSON proof>,`,
      'or pay with a payment signed by that wallet (or another wallet of the same operator) in PAYMENT-SIGNATURE, X-PAYMENT or Authorization: Payment,',
    );
  } else {
    steps.push(
      `Pay with a payment signed by ${wallet.address} (or another wallet of the same operator) in PAYMENT-SIGNATURE, X-PAYMENT or Authorization: Payment,`,
    );
  }
  steps.push('or retry with the header X-Operator-Token: <operator credential> from your credential store instead of X-Wallet-Address.');
  return { action: 'prove_wallet_control', steps, user_message: 'This merchant needs proof that the agent controls the wallet it named.' };
}

/** The statement a SIGN-IN-WITH-X challenge asks the wallet to sign. */
export const SIWX_STATEMENT = 'Sign in to prove you control this wallet.';

const REASON_MESSAGES: Record<string, string> = {
  kyc_required: 'The operator behind this agent has not completed identity verification.',
  kyc_pending: "The operator's identity verification is still in progress.",
  kyc_failed: "The operator's identity verification did not succeed; it can be retried.",
  sanctions_flagged: 'The operator or the paying wallet is flagged by sanctions screening.',
  sanctions_check_unavailable: 'The paying wallet could not be screened right now.',
  age_insufficient: "The operator does not meet this merchant's minimum age.",
  jurisdiction_restricted: "This merchant does not serve the operator's jurisdiction.",
};

/** error.message of a policy denial, after its first reason. */
export function denialMessage(reasons: string[]): string {
  return REASON_MESSAGES[reasons[0]] ?? 'The identity check denied this request.';
}

/** error.message of a 503 the gate answers itself. */
export function infraMessage(reason: InfraReason): string {
  if (reason === 'quota_exceeded') return "The merchant's identity-check quota is exhausted.";
  if (reason === 'network_timeout') return 'The identity service did not answer in time.';
  return 'The identity service is temporarily unavailable.';
}
