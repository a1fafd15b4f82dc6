// POST /v1/kyc/stripe/webhook: Stripe Identity events. The `Stripe-Signature` is verified over the raw body
// (mounted before the JSON parser), each event id is processed once, and a finished VerificationSession moves
// its verification session (the result is fetched from Stripe; webhook payloads omit verified outputs).
import express, { Router } from 'express';
import { ApiError } from '../../shared/errors';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { StripeIdentityProvider, verifyStripeSignature, type StripeEvent } from './stripe';

const FINAL_TYPES = new Set([
  'identity.verification_session.verified',
  'identity.verification_session.requires_input',
  'identity.verification_session.canceled',
]);

export function kycWebhookRouter(deps: Deps): Router {
  const router = Router();
  const secret = deps.config.kyc.stripeWebhookSecret;
  const provider = deps.services.kyc;

  router.post(
    '/v1/kyc/stripe/webhook',
    express.raw({ type: () => true, limit: '256kb' }),
    route(async (req, res) => {
      if (!secret || !(provider instanceof StripeIdentityProvider)) throw new ApiError('not_found', 'Stripe Identity is not configured.');
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (!verifyStripeSignature(raw, req.header('stripe-signature'), secret, deps.clock.now())) {
        throw new ApiError('bad_request', 'Invalid Stripe-Signature.', { details: [{ field: 'Stripe-Signature', message: 'missing, malformed, outside the 300 s tolerance, or not matching the payload' }] });
      }
      let event: StripeEvent;
      try {
        event = JSON.parse(raw.toString('utf8')) as StripeEvent;
      } catch {
        throw new ApiError('bad_request', 'Malformed JSON in request body.', { details: [{ field: 'body', message: 'is not valid JSON' }] });
      }
      if (typeof event?.id !== 'string' || typeof event.type !== 'string') {
        throw new ApiError('bad_request', 'Not a Stripe event.', { details: [{ field: 'body', message: 'id and type are required' }] });
      }
      const object = event.data?.object ?? {};
      const reference = object.object === 'identity.verification_session' && typeof object.id === 'string' ? object.id : null;
      // Fetch before the transaction: the network call must not hold row locks.
      const result = reference && FINAL_TYPES.has(event.type) ? await provider.result(reference) : null;
      const outcome = await deps.services.verification.processProviderEvent({
        provider: 'stripe',
        eventId: event.id,
        eventType: event.type,
        reference,
        result,
      });
      res.json({ received: true, outcome });
    }),
  );
  return router;
}
