// Signing in to the dashboard: with an API key, or with a one-time link (GET shows a button, POST uses the link),
// both limited per client address; and signing out.
import crypto from 'node:crypto';
import type { Request, Response, Router } from 'express';
import { route } from '../../http/asyncRoute';
import { csrfValid, issueCsrf } from '../../verify/csrf';
import { pageHeaders } from '../../verify/errorPage';
import { SESSION_COOKIE, type DashboardKit } from '../kit';
import { parseKeySignIn, parseLinkSignIn } from '../forms';
import { linkPage, signInPage } from '../views';

const FAILED_SIGNINS_PER_15_MIN = 10;

export function signInPages(router: Router, kit: DashboardKit): void {
  const { deps, secret, secure, form, cookieAttrs, authed } = kit;
  const { dashboard } = deps.services;

  function startSession(res: Response, sessionId: string) {
    res.append('Set-Cookie', `${SESSION_COOKIE}=${sessionId}; ${cookieAttrs}`);
    res.redirect(303, '/dashboard');
  }

  const failKey = (req: Request) => `dashboard-signin-fail:${req.ip}`;
  async function tooManyFailures(req: Request) {
    return Number((await deps.kv.get(failKey(req))) ?? 0) >= FAILED_SIGNINS_PER_15_MIN;
  }
  const recordFailure = (req: Request) => deps.kv.incr(failKey(req), 15 * 60_000);

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
}
