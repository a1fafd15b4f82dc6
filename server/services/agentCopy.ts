// Agent-facing text in one place: the steps, user messages and memory an agent relays or keeps, and what the
// verify page tells a person about the link. Durations are parameters fed from configuration
// (SESSION_TTL_SECONDS), POLL_INTERVAL_SECONDS and the Retry-After a response carries, so the text never
// disagrees with the behaviour.
import type { AgentInstructions } from '../../shared/errors';
import { durationText } from '../../shared/duration';
import { retryWithBackoffAdvice } from '../../shared/retryAdvice';

export { durationText };

/** For a 503: wait what Retry-After says, back off, and give up telling the user after a few minutes. */
export function retryWithBackoff(retryAfterSeconds: number): AgentInstructions {
  return retryWithBackoffAdvice(retryAfterSeconds, {
    giveUp: 'the identity service is unavailable',
    userMessage: 'The identity service is temporarily unavailable. Retrying shortly.',
  });
}

export const sessionCopy = {
  deliverStep: (verifyUrl: string) => `Give the user this link and ask them to complete verification in a browser: ${verifyUrl}`,
  pollStep: (pollUrl: string, pollIntervalSeconds: number, pollSecretHeader: string) =>
    `Poll GET ${pollUrl} every ${pollIntervalSeconds} seconds with the header ${pollSecretHeader}: <poll_secret>. Never put the poll secret in a URL.`,
  storeStep: 'When the status is "verified", store operator_token in your credential store (not in conversation memory).',
  retryStep: 'Retry the original merchant request with the header X-Operator-Token: <operator_token>.',
  userMessage: (sessionTtlSeconds: number) =>
    `To continue, verify your identity once using the link. It takes a few minutes and the link expires in ${durationText(sessionTtlSeconds)}.`,
  /** agent_memory.bootstrap.on_denial_with_verify_url */
  onDenialWithVerifyUrl: (pollIntervalSeconds: number) => `deliver verify_url to the user, poll poll_url with X-Poll-Secret every ${pollIntervalSeconds} s`,
  /** next_steps.user_message of 403 kyc_required when a merchant account must verify itself first. */
  completeKycThenRetry: (verifyUrl: string, sessionTtlSeconds: number) =>
    `Open ${verifyUrl} in a browser and complete identity verification (the link expires in ${durationText(sessionTtlSeconds)}), then create the credential again.`,
  /** The verify page of a link whose session expired. */
  linkExpired: (sessionTtlSeconds: number) =>
    `Verification links are valid for ${durationText(sessionTtlSeconds)}. Ask your agent to start a new verification and open the new link.`,
};

/** next_steps of GET /v1/sessions/{session_id}, per status. */
export const pollCopy = {
  verified: 'Your identity is verified. Continuing with your request now.',
  pendingEta: (expiresAt: Date) =>
    `Waiting for the user to finish verification in the browser (usually 2 to 5 minutes; the link expires at ${expiresAt.toISOString()}).`,
  consumed: 'Verification is complete and the credential was already delivered. Use the operator token you stored.',
  expired: 'The verification link expired before it was completed. Start a new verification.',
  failed: 'Identity verification did not succeed. You can start a new verification and try again with a clear, valid document.',
  flagged: (supportEmail: string, reference: string) =>
    `Your verification needs a manual review before a credential can be issued. Please email ${supportEmail} and quote reference ${reference}.`,
};

export const credentialCopy = {
  /** next_steps.user_message when a sanctions match blocks issuance. */
  screeningReview: (supportEmail: string) => `Identity screening needs a manual review before credentials can be issued. Contact ${supportEmail}.`,
  /** next_steps.user_message of a refused refresh token. */
  refreshEnded: 'Your saved sign-in has ended. Please verify again to continue.',
};

/** signer_match.agent_instructions of an assess answer (a JSON string, as everywhere on the wire). */
export const signerMatchCopy = {
  pass: JSON.stringify({
    action: 'proceed',
    steps: ['The payment signer belongs to the identified operator; no action is needed.'],
    user_message: 'Payment signer verified.',
  } satisfies AgentInstructions),
  useOperatorToken: JSON.stringify({
    action: 'use_operator_token',
    steps: [
      'This payment method carries no wallet signature, so a wallet identity cannot be tied to the payment.',
      'Present your operator credential in the X-Operator-Token header and retry the request.',
      'Without a credential, create a verification session (POST /v1/sessions/public), have your operator complete it, and store the operator_token you receive.',
    ],
    user_message: 'This payment method needs an operator credential instead of a wallet address.',
  } satisfies AgentInstructions),
  mismatch: (linked: string[]) =>
    JSON.stringify({
      action: 'resign_with_linked_wallet',
      steps: [
        linked.length
          ? `Sign the payment again from one of your operator's linked wallets: ${linked.join(', ')}.`
          : 'Sign the payment from the same wallet you presented as your identity.',
        'Or present your operator credential in the X-Operator-Token header instead of a wallet address.',
      ],
      user_message: 'The wallet that signed this payment does not belong to the same operator as the identity presented.',
    } satisfies AgentInstructions),
};

/** agent_memory: what an agent should remember about the pattern (never secrets). */
export const memoryCopy = {
  pattern:
    'Merchants gated by kya need proof that a verified operator stands behind this agent. Present a stored operator credential in X-Operator-Token (or name a wallet the operator claimed in X-Wallet-Address and prove it: pay from it, or send a SIGN-IN-WITH-X proof signed by it). Without one, a 403 carries a verification session: send the user verify_url, poll poll_url with X-Poll-Secret, store the operator_token you receive, and retry.',
  identityPaths: [
    { method: 'operator_token', header: 'X-Operator-Token', when: 'you hold a live opc_ credential in your credential store' },
    {
      method: 'wallet',
      header: 'X-Wallet-Address',
      when: 'you pay from a wallet your operator claimed during verification, or send a SIGN-IN-WITH-X proof signed by it (a wallet address alone proves nothing)',
    },
  ],
  onTokenExpired: 'the 401 body carries a fresh session: repeat the verification bootstrap',
  credential: (header: string, expiresAt: Date) =>
    `This operator credential (opc_…) proves that a verified operator stands behind your requests. Send it in the ${header} header to merchants gated by kya (or as operator_token in POST /v1/assess). It expires at ${expiresAt.toISOString()}. A 401 token_expired carries a verification session to obtain a new one; a 401 invalid_credential means the value is wrong and must not be retried.`,
};
