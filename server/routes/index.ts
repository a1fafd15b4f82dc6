// Every router of the API, mounted in one place. Routes validate, call a service and shape the response.
import type { Express } from 'express';
import type { Deps } from '../deps';
import { credentialsRouter } from './credentials';
import { walletsRouter } from './wallets';
import { sessionsRouter } from './sessions';
import { verifyRouter } from '../verify/router';
import { kycWebhookRouter } from '../kyc/webhook';
import { assessRouter } from './assess';
import { telemetryRouter } from './telemetry';
import { reputationRouter } from './reputation';

/** Routes that need the raw body (webhook signatures) — mounted before the JSON parser. */
export function mountRawRoutes(_app: Express, _deps: Deps): void {
  // (KYC provider webhooks are mounted here.)
  _app.use(kycWebhookRouter(_deps));
  _app.use(telemetryRouter(_deps)); // lenient body parsing of its own: telemetry never fails the caller
}

/** JSON API and pages. */
export function mountRoutes(_app: Express, _deps: Deps): void {
  // assess first: it is the hot path, and its paths (/v1/assess…) overlap no other router, so it is matched
  // without walking the others' layers.
  _app.use(assessRouter(_deps));
  // wallets before credentials: /v1/credentials/wallets must never be read as a credential id.
  _app.use(walletsRouter(_deps));
  _app.use(credentialsRouter(_deps));
  _app.use(sessionsRouter(_deps));
  _app.use(verifyRouter(_deps));
  _app.use(reputationRouter(_deps));
}
