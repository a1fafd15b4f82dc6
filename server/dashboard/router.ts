// The merchant dashboard (/dashboard): sign-in with the API key or a one-time link, then Overview, API keys,
// Settings, Activity (with CSV export) and Webhooks. Server-rendered, plain forms, the verify page's strict
// headers, a CSRF token on every form, and a session cookie that holds only a random id.
import { Router } from 'express';
import type { Deps } from '../deps';
import { dashboardKit } from './kit';
import { activityPages } from './pages/activity';
import { keyPages } from './pages/keys';
import { settingsPages } from './pages/settings';
import { signInPages } from './pages/signin';
import { webhookPages } from './pages/webhooks';

export { SESSION_COOKIE } from './kit';

export function dashboardRouter(deps: Deps): Router {
  const router = Router();
  const kit = dashboardKit(deps);
  signInPages(router, kit);
  settingsPages(router, kit);
  keyPages(router, kit);
  activityPages(router, kit);
  webhookPages(router, kit);
  return router;
}
