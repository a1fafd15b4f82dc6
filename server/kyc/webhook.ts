// POST /v1/kyc/stripe/webhook: events of the hosted KYC provider. The provider verifies the signature over the
// raw body (mounted before the JSON parser) and reads the event; each event id is processed once, and a finished
// verification moves its session (the result is fetched from the provider: webhook payloads omit verified outputs).
import express, { Router } from 'express';
import { ApiError } from '../../shared/errors';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { retryWithBackoff } from '../services/agentCopy';
import { KycProviderError, type KycResult } from './types';

/** How long the provider is asked to wait before delivering an event again that could not be processed. */
const PROVIDER_RETRY_AFTER_SECONDS = 30;

export function kycWebhookRouter(deps: Deps): Router {
  const router = Router();
  const provider = deps.services.kyc;
  const { verification } = deps.services;

  router.post(
    '/v1/kyc/stripe/webhook',
    express.raw({ type: () => true, limit: '256kb' }),
    route(async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const delivery = provider.parseWebhook(raw, (name) => req.header(name), deps.clock.now());
      if (!delivery) throw new ApiError('not_found', 'Stripe Identity is not configured.');
      if (delivery.kind === 'unusable') {
        // Signed, so it came from the provider; answering 2xx stops the retries of an event nobody could process.
        req.log.warn({ idLength: delivery.idLength }, 'KYC provider event with an unusable id or type ignored');
        res.json({ received: true, outcome: 'ignored' });
        return;
      }
      const { event } = delivery;
      // Only a verification this server started is looked up at the provider; any other is recorded as ignored.
      const reference = event.reference && (await verification.startedHere(provider.name, event.reference)) ? event.reference : null;
      // Fetch before the transaction: the network call must not hold row locks.
      let result: KycResult | null = null;
      if (reference && event.final) {
        try {
          result = await provider.result(reference);
        } catch (err) {
          if (!(err instanceof KycProviderError) || err.retryable) {
            // The provider unreachable or failing: a 503 makes it deliver the event again later.
            req.log.warn({ err: (err as Error).message }, 'fetching the verification from the KYC provider failed');
            throw new ApiError('api_error', 'Stripe is temporarily unavailable.', {
              top: { agent_instructions: retryWithBackoff(PROVIDER_RETRY_AFTER_SECONDS) },
              headers: { 'Retry-After': String(PROVIDER_RETRY_AFTER_SECONDS) },
            });
          }
          // The provider does not know the verification (or refuses it): nothing to apply, ever.
          req.log.warn({ status: err.status }, 'the KYC provider refused the verification of an event; ignored');
        }
      }
      const outcome = await verification.processProviderEvent({ provider: provider.name, eventId: event.id, eventType: event.type, reference, result });
      res.json({ received: true, outcome });
    }),
  );
  return router;
}
