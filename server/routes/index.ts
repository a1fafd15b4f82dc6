// Every router of the API, mounted in one place. Routes validate, call a service and shape the response.
import type { Express } from 'express';
import type { Deps } from '../deps';
import { credentialsRouter } from './credentials';
import { walletsRouter } from './wallets';
import { sessionsRouter } from './sessions';
import { verifyRouter } from '../verify/router';
import { kycWebhookRouter } from '../kyc/webhook';
import { telemetryRouter } from './telemetry';
import { reputationRouter } from './reputation';
import { dashboardRouter } from '../dashboard/router';

/** Routes that need the raw body (webhook signatures) — mounted before the JSON parser. */
export function mountRawRoutes(app: Express, deps: Deps): void {
  app.use(kycWebhookRouter(deps));
  app.use(telemetryRouter(deps)); // lenient body parsing of its own: telemetry never fails the caller
}

/** JSON API and pages (assess, the hot path, is mounted ahead of these by createApp). */
export function mountRoutes(app: Express, deps: Deps): void {
  // wallets before credentials: /v1/credentials/wallets must never be read as a credential id.
  app.use(walletsRouter(deps));
  app.use(credentialsRouter(deps));
  app.use(sessionsRouter(deps));
  app.use(verifyRouter(deps));
  app.use(reputationRouter(deps));
  app.use(dashboardRouter(deps));
}
