// The `sandbox` KYC provider: our own form, deterministic outcomes for tests and demos (README, "Verification sessions and the verify page"):
//   document number starting with FAIL → failed (document unreadable)
//   document number starting with FLAG → verified, but the provider's watchlist check hits → flagged
//   anything else → verified (then name screening against the configured list may still flag it)
import crypto from 'node:crypto';
import type { FormKycProvider, KycResult, KycWebhookDelivery, SandboxIdentity } from './types';

export class SandboxKycProvider implements FormKycProvider {
  readonly name = 'sandbox' as const;
  readonly kind = 'form' as const;

  /** The sandbox decides when the form is submitted: no webhooks, and nothing to fetch later. */
  parseWebhook(): KycWebhookDelivery | null {
    return null;
  }

  result(): Promise<KycResult | null> {
    return Promise.resolve(null);
  }

  evaluate(identity: SandboxIdentity): KycResult {
    const reference = `sbx_${crypto.randomUUID()}`;
    const upper = identity.documentNumber.toUpperCase();
    if (upper.startsWith('FAIL')) return { outcome: 'failed', reference, reason: 'The identity document could not be read.' };
    return {
      outcome: 'verified',
      reference,
      identity: { ...identity, operatorType: 'individual' },
      watchlistHit: upper.startsWith('FLAG'),
    };
  }
}
