// Chooses the configured KYC provider (KYC_PROVIDER): `sandbox` (default) or `stripe`.
import type { Config } from '../config';
import { SandboxKycProvider } from './sandbox';
import { StripeIdentityProvider } from './stripe';
import type { KycProvider } from './types';

export function createKycProvider(config: Config, options: { fetch?: typeof fetch } = {}): KycProvider {
  if (config.kyc.provider === 'stripe') {
    return new StripeIdentityProvider({
      apiBase: config.kyc.stripeApiBase,
      // Config validation requires the key when the provider is stripe.
      secretKey: config.kyc.stripeSecretKey!,
      webhookSecret: config.kyc.stripeWebhookSecret,
      timeoutMs: Math.max(config.dependencyTimeoutMs, 5000),
      fetch: options.fetch,
    });
  }
  return new SandboxKycProvider();
}

export type { KycProvider, KycResult, VerifiedIdentity } from './types';
