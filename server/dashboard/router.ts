// The merchant dashboard (/dashboard): sign-in with the API key or a one-time link, then Overview, API keys,
// Settings, Activity (with CSV export) and Webhooks. Server-rendered, plain forms, the verify page's strict
// headers, a CSRF token on every form, and a session cookie that holds only a random id.
import crypto from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { rejectNulInBody } from '../http/inputGuard';
import { hmacSha256, safeEqual } from '../crypto';
import { csrfValid, issueCsrf, readCookie } from '../verify/csrf';
import { pageHeaders } from '../verify/errorPage';
import { submittedValues } from '../http/forms';
import { parseActivityFilter, parseKeySignIn, parseLinkSignIn, parseResendForm, parseSettingsForm, parseWebhookForm, SETTINGS_FIELDS } from './forms';
import {
  activityBody,
  endpointBody,
  keysBody,
  removeEndpointBody,
  revokeKeyBody,
  linkPage,
  messageDoc,
  overviewBody,
  page,
  settingsBody,
  signInPage,
  webhooksBody,
  type ActivityQuery,
  type Frame,
  type Tab,
} from './views';
import type { Flash } from './service';
import { ApiError } from '../../shared/errors';

export const SESSION_COOKIE = 'kya_dashboard';
const FAILED_SIGNINS_PER_15_MIN = 10;
const PAGE_SIZE = 50;
const CSV_MAX_ROWS = 100_000;

function csvCell(value: string): string {
  // Quote everything; neutralise spreadsheet formulas in merchant-controlled text.
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return `"${safe.replace(/"/g, '""')}"`;
}

export function dashboardRouter(deps: Deps): Router {
  const router = Router();
  const { dashboard, accounts, webhooks } = deps.services;
  const secret = deps.config.serverSecret;
  const secure = deps.config.publicBaseUrl.startsWith('https://');
  const production = deps.config.env === 'production';
  const form = [express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 30 }), rejectNulInBody];
  const cookieAttrs = `Path=/dashboard; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;

  const sessionCsrf = (sessionId: string) => hmacSha256(secret, `dashboard-csrf|${sessionId}`).toString('base64url');

  interface Ctx {
    req: Request;
    res: Response;
    nonce: string;
    accountId: string;
    sessionId: string;
    frame: (tab: Tab, notice?: Frame['notice']) => Promise<Frame>;
  }

  /** Signed-in pages: headers, session resumed (or a redirect to sign-in), CSRF checked on POST. */
  function authed(handler: (ctx: Ctx) => Promise<void>) {
    return route(async (req: Request, res: Response) => {
      const nonce = crypto.randomBytes(16).toString('base64');
      pageHeaders(res, nonce);
      const sessionId = readCookie(req, SESSION_COOKIE);
      const accountId = await dashboard.resume(sessionId);
      if (!accountId || !sessionId) {
        res.append('Set-Cookie', `${SESSION_COOKIE}=; ${cookieAttrs}; Max-Age=0`);
        res.redirect(303, '/dashboard/signin');
        return;
      }
      if (req.method === 'POST') {
        const presented = (req.body as Record<string, unknown> | undefined)?.csrf;
        if (typeof presented !== 'string' || !presented || !safeEqual(presented, sessionCsrf(sessionId))) {
          res.status(403).send(messageDoc(nonce, 'Form expired', 'This form has expired. Go back, reload the page and try again.'));
          return;
        }
      }
      const frame = async (tab: Tab, notice: Frame['notice'] = null): Promise<Frame> => {
        const account = await accounts.show(accountId);
        return { nonce, csrf: sessionCsrf(sessionId), accountName: account.display_name || account.name, tab, notice };
      };
      await handler({ req, res, nonce, accountId, sessionId, frame });
    });
  }

  function startSession(res: Response, sessionId: string) {
    res.append('Set-Cookie', `${SESSION_COOKIE}=${sessionId}; ${cookieAttrs}`);
    res.redirect(303, '/dashboard');
  }

  const failKey = (req: Request) => `dashboard-signin-fail:${req.ip}`;
  async function tooManyFailures(req: Request) {
    return Number((await deps.kv.get(failKey(req))) ?? 0) >= FAILED_SIGNINS_PER_15_MIN;
  }
  const recordFailure = (req: Request) => deps.kv.incr(failKey(req), 15 * 60_000);

  // ---- sign-in ----

  router.get(
    '/dashboard/signin',
    route(async (req, res) => {
      const nonce = crypto.randomBytes(16).toString('base64');
      pageHeaders(res, nonce);
      res.send(signInPage(nonce, issueCsrf(req, res, secret, 'dashboard-signin', secure, '/dashboard'), null));
    }),
  );

  router.post(
    '/dashboard/signin',
    form,
    route(async (req, res) => {
      const nonce = crypto.randomBytes(16).toString('base64');
      pageHeaders(res, nonce);
      const csrf = issueCsrf(req, res, secret, 'dashboard-signin', secure, '/dashboard');
      if (!csrfValid(req, secret, 'dashboard-signin')) {
        res.status(403).send(signInPage(nonce, csrf, 'This form has expired. Please try again.'));
        return;
      }
      if (await tooManyFailures(req)) {
        res.setHeader('Retry-After', '900');
        res.status(429).send(signInPage(nonce, csrf, 'Too many failed sign-ins. Try again in 15 minutes.'));
        return;
      }
      const apiKey = parseKeySignIn(req.body);
      const signedIn = apiKey ? await dashboard.signInWithKey(apiKey) : null;
      if (!signedIn) {
        await recordFailure(req);
        res.status(401).send(signInPage(nonce, csrf, 'That API key is not valid.'));
        return;
      }
      startSession(res, signedIn.sessionId);
    }),
  );

  // GET only shows a button: link scanners that prefetch URLs must not use up the single-use link.
  router.get(
    '/dashboard/login/:token',
    route(async (req, res) => {
      const nonce = crypto.randomBytes(16).toString('base64');
      pageHeaders(res, nonce);
      res.send(linkPage(nonce, issueCsrf(req, res, secret, 'dashboard-link', secure, '/dashboard'), String(req.params.token), null));
    }),
  );

  router.post(
    '/dashboard/login',
    form,
    route(async (req, res) => {
      const nonce = crypto.randomBytes(16).toString('base64');
      pageHeaders(res, nonce);
      const csrf = issueCsrf(req, res, secret, 'dashboard-link', secure, '/dashboard');
      if (!csrfValid(req, secret, 'dashboard-link')) {
        res.status(403).send(linkPage(nonce, csrf, '', 'This form has expired. Open the sign-in link again.'));
        return;
      }
      if (await tooManyFailures(req)) {
        res.status(429).send(linkPage(nonce, csrf, '', 'Too many failed sign-ins. Try again in 15 minutes.'));
        return;
      }
      const token = parseLinkSignIn(req.body);
      const signedIn = token ? await dashboard.signInWithLink(token) : null;
      if (!signedIn) {
        await recordFailure(req);
        res
          .status(401)
          .send(linkPage(nonce, csrf, '', 'This sign-in link is not valid: it was already used, has expired, or is incomplete. Ask for a new one.'));
        return;
      }
      startSession(res, signedIn.sessionId);
    }),
  );

  router.post(
    '/dashboard/signout',
    form,
    authed(async ({ res, sessionId }) => {
      await dashboard.signOut(sessionId);
      res.append('Set-Cookie', `${SESSION_COOKIE}=; ${cookieAttrs}; Max-Age=0`);
      res.redirect(303, '/dashboard/signin');
    }),
  );

  // ---- pages ----

  router.get(
    '/dashboard',
    authed(async ({ res, accountId, frame }) => {
      res.send(page(await frame('overview'), 'Overview', overviewBody(await dashboard.overview(accountId))));
    }),
  );

  async function keysPage(ctx: Ctx, status: number, notice: Frame['notice'], newKey: Flash['newKey'] = undefined) {
    const f = await ctx.frame('keys', notice);
    ctx.res.status(status).send(page(f, 'API keys', keysBody(f.csrf, await accounts.show(ctx.accountId), newKey ?? null)));
  }

  router.get(
    '/dashboard/keys',
    authed(async (ctx) => {
      const flash = await dashboard.takeFlash(ctx.sessionId);
      await keysPage(ctx, 200, flash?.notice ?? null, flash?.newKey);
    }),
  );

  // Post/Redirect/Get: the new key travels to the next page in a one-time server-side flash, so a reload
  // neither re-posts the form nor shows the key again, and the key never appears in a URL.
  router.post(
    '/dashboard/keys/rotate',
    form,
    authed(async ({ res, accountId, sessionId }) => {
      const rotated = await accounts.rotateKey(accountId);
      await dashboard.setFlash(sessionId, { newKey: { key: rotated.api_key, others: 'revoked' } });
      res.redirect(303, '/dashboard/keys');
    }),
  );

  /** Several keys are an Enterprise feature: elsewhere the controls are absent and their routes answer 403. */
  async function enterpriseOnly(ctx: Ctx): Promise<boolean> {
    if ((await accounts.show(ctx.accountId)).tier === 'enterprise') return true;
    await keysPage(ctx, 403, {
      kind: 'alert',
      text: 'Adding and revoking single API keys is available on the Enterprise plan only. Use Rotate API key to replace your key.',
    });
    return false;
  }

  const LAST_KEY = 'This is your only active API key, so it cannot be revoked. Rotate it instead: that issues a new key and revokes this one.';

  router.post(
    '/dashboard/keys/add',
    form,
    authed(async (ctx) => {
      if (!(await enterpriseOnly(ctx))) return;
      const added = await accounts.addKey(ctx.accountId);
      await dashboard.setFlash(ctx.sessionId, { newKey: { key: added.api_key, others: 'kept' } });
      ctx.res.redirect(303, '/dashboard/keys');
    }),
  );

  router.get(
    '/dashboard/keys/:id/revoke',
    authed(async (ctx) => {
      if (!(await enterpriseOnly(ctx))) return;
      const active = (await accounts.show(ctx.accountId)).keys.filter((k) => !k.revoked_at);
      const key = active.find((k) => k.id === String(ctx.req.params.id));
      if (!key) return keysPage(ctx, 404, { kind: 'alert', text: 'No such active key.' });
      if (active.length === 1) return keysPage(ctx, 409, { kind: 'alert', text: LAST_KEY });
      const f = await ctx.frame('keys');
      ctx.res.send(page(f, 'Revoke API key', revokeKeyBody(f.csrf, key)));
    }),
  );

  router.post(
    '/dashboard/keys/:id/revoke',
    form,
    authed(async (ctx) => {
      if (!(await enterpriseOnly(ctx))) return;
      try {
        const revoked = await accounts.revokeKey(ctx.accountId, String(ctx.req.params.id));
        await dashboard.setFlash(ctx.sessionId, { notice: { kind: 'ok', text: `Key ${revoked.prefix} revoked: requests that present it are refused.` } });
        ctx.res.redirect(303, '/dashboard/keys');
      } catch (err) {
        if (!(err instanceof ApiError) || (err.code !== 'not_found' && err.code !== 'conflict')) throw err;
        await keysPage(ctx, err.status, { kind: 'alert', text: err.code === 'conflict' ? LAST_KEY : 'No such active key.' });
      }
    }),
  );

  router.get(
    '/dashboard/settings',
    authed(async ({ res, accountId, frame }) => {
      const f = await frame('settings');
      res.send(page(f, 'Settings', settingsBody(f.csrf, await accounts.show(accountId), await accounts.branding(accountId), {})));
    }),
  );

  router.post(
    '/dashboard/settings',
    form,
    authed(async ({ req, res, accountId, frame }) => {
      const settings = parseSettingsForm(req.body);
      if (!settings.ok) {
        const f = await frame('settings', { kind: 'alert', text: 'Please correct the fields below.' });
        const values = submittedValues(req.body, SETTINGS_FIELDS);
        res.status(400).send(page(f, 'Settings', settingsBody(f.csrf, await accounts.show(accountId), values, settings.errors, values)));
        return;
      }
      const values = settings.value;
      await accounts.setBranding(accountId, values);
      const f = await frame('settings', { kind: 'ok', text: 'Settings saved.' });
      res.send(page(f, 'Settings', settingsBody(f.csrf, await accounts.show(accountId), values, {})));
    }),
  );

  function activityFilter(req: Request, accountId: string) {
    const { before, ...q } = parseActivityFilter(req.query);
    const date = (s: string, plusDays = 0) => (s ? new Date(Date.parse(`${s}T00:00:00Z`) + plusDays * 86_400_000) : undefined);
    return {
      q,
      filter: {
        accountId,
        decision: q.decision || undefined,
        reason: q.reason || undefined,
        identityKind: q.kind || undefined,
        from: date(q.from),
        to: date(q.to, 1),
        before: before ?? undefined,
      },
    };
  }

  const queryString = (q: ActivityQuery, extra: Record<string, string> = {}) =>
    new URLSearchParams(Object.entries({ ...q, ...extra }).filter(([, v]) => v !== '')).toString();

  router.get(
    '/dashboard/activity',
    authed(async ({ req, res, accountId, frame }) => {
      const { q, filter } = activityFilter(req, accountId);
      const rows = await dashboard.activity({ ...filter, limit: PAGE_SIZE + 1 });
      const more = rows.length > PAGE_SIZE;
      const shown = rows.slice(0, PAGE_SIZE);
      const next = more ? `/dashboard/activity?${queryString(q, { before: String(shown[shown.length - 1].id) })}` : null;
      const qs = queryString(q);
      const [sessions, credentials] = await Promise.all([dashboard.sessions(accountId), dashboard.credentials(accountId)]);
      res.send(page(await frame('activity'), 'Activity', activityBody(q, shown, next, `/dashboard/activity.csv${qs ? '?' + qs : ''}`, sessions, credentials)));
    }),
  );

  router.get(
    '/dashboard/activity.csv',
    authed(async ({ req, res, accountId }) => {
      const { filter } = activityFilter(req, accountId);
      res.type('text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', 'attachment; filename="kya-activity.csv"');
      res.write('time,decision,reasons,identity_kind,identity_value,request_id,signer_kind,signer_sanctions\r\n');
      let before = filter.before;
      let written = 0;
      while (written < CSV_MAX_ROWS) {
        const rows = await dashboard.activity({ ...filter, before, limit: 2000 });
        if (rows.length === 0) break;
        res.write(
          rows
            .map((r) =>
              [
                r.created_at.toISOString(),
                r.decision,
                r.reasons.join(' '),
                r.identity_kind,
                r.identity_value,
                r.request_id,
                r.signer_kind ?? '',
                r.signer_sanctions ?? '',
              ]
                .map(csvCell)
                .join(','),
            )
            .join('\r\n') + '\r\n',
        );
        written += rows.length;
        before = rows[rows.length - 1].id;
        if (rows.length < 2000) break;
      }
      res.end();
    }),
  );

  async function webhooksPage(
    ctx: Ctx,
    status: number,
    errors: Record<string, string>,
    values: { url?: string; types?: string[] },
    created: { id: string; secret: string } | null,
    notice: Frame['notice'] = null,
  ) {
    const f = await ctx.frame('webhooks', notice);
    ctx.res.status(status).send(page(f, 'Webhooks', webhooksBody(f.csrf, await webhooks.listEndpoints(ctx.accountId), errors, values, created)));
  }

  router.get(
    '/dashboard/webhooks',
    authed(async (ctx) => webhooksPage(ctx, 200, {}, {}, null, (await dashboard.takeFlash(ctx.sessionId))?.notice ?? null)),
  );

  router.post(
    '/dashboard/webhooks',
    form,
    authed(async (ctx) => {
      const input = parseWebhookForm(ctx.req.body, production);
      const types = ([] as unknown[]).concat((ctx.req.body as Record<string, unknown>).event_types ?? []).filter((t): t is string => typeof t === 'string');
      const values = { url: submittedValues(ctx.req.body, ['url']).url, types };
      if (!input.ok) return webhooksPage(ctx, 400, input.errors, values, null);
      try {
        const { endpoint, secret: signing } = await webhooks.addEndpoint(ctx.accountId, input.value);
        await webhooksPage(ctx, 200, {}, {}, { id: endpoint.id, secret: signing });
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 'conflict') throw err;
        await webhooksPage(ctx, 409, { url: err.message }, values, null);
      }
    }),
  );

  async function endpointPage(ctx: Ctx, id: string, notice: Frame['notice'] = null) {
    const endpoint = (await webhooks.listEndpoints(ctx.accountId)).find((e) => e.id === id);
    const signing = endpoint && (await webhooks.secret(ctx.accountId, id));
    if (!endpoint || !signing) {
      await webhooksPage(ctx, 404, {}, {}, null, { kind: 'alert', text: 'No such endpoint.' });
      return;
    }
    const f = await ctx.frame('webhooks', notice);
    ctx.res.send(page(f, 'Webhook endpoint', endpointBody(f.csrf, endpoint, signing, await webhooks.deliveries(ctx.accountId, id))));
  }

  router.get(
    '/dashboard/webhooks/:id',
    authed((ctx) => endpointPage(ctx, String(ctx.req.params.id))),
  );

  router.post(
    '/dashboard/webhooks/:id/roll',
    form,
    authed(async (ctx) => {
      await webhooks.rollSecret(ctx.accountId, String(ctx.req.params.id));
      await endpointPage(ctx, String(ctx.req.params.id), { kind: 'ok', text: 'New signing secret in effect for the next delivery.' });
    }),
  );

  // Removing is a two-step action: the endpoint page links to this confirmation, whose form does the removal.
  router.get(
    '/dashboard/webhooks/:id/remove',
    authed(async (ctx) => {
      const endpoint = (await webhooks.listEndpoints(ctx.accountId)).find((e) => e.id === String(ctx.req.params.id));
      if (!endpoint) return webhooksPage(ctx, 404, {}, {}, null, { kind: 'alert', text: 'No such endpoint.' });
      const f = await ctx.frame('webhooks');
      ctx.res.send(page(f, 'Remove webhook endpoint', removeEndpointBody(f.csrf, endpoint)));
    }),
  );

  router.post(
    '/dashboard/webhooks/:id/delete',
    form,
    authed(async (ctx) => {
      const removed = await webhooks.removeEndpoint(ctx.accountId, String(ctx.req.params.id));
      if (!removed) return webhooksPage(ctx, 404, {}, {}, null, { kind: 'alert', text: 'No such endpoint.' });
      await dashboard.setFlash(ctx.sessionId, { notice: { kind: 'ok', text: 'Endpoint removed.' } });
      ctx.res.redirect(303, '/dashboard/webhooks');
    }),
  );

  router.post(
    '/dashboard/webhooks/deliveries/:id/resend',
    form,
    authed(async (ctx) => {
      const ok = await webhooks.resend(ctx.accountId, String(ctx.req.params.id));
      await endpointPage(
        ctx,
        parseResendForm(ctx.req.body) ?? '',
        ok ? { kind: 'ok', text: 'Delivery queued again.' } : { kind: 'alert', text: 'No such delivery.' },
      );
    }),
  );

  return router;
}
