// Signing in to the dashboard: with an API key, or with a one-time link (GET shows a button, POST uses the link),
// both limited per client address; and signing out.
import type { Request, Response, Router } from 'express';
import { route } from '../../http/asyncRoute';
import { csrfValid, issueCsrf } from '../../verify/csrf';
import { pageHeaders } from '../../verify/errorPage';
import { SESSION_COOKIE, type DashboardKit } from '../kit';
import { parseKeySignIn, parseLinkSignIn } from '../forms';
import { linkPage, signInPage } from '../views';
import { SIGN_IN_WINDOW_MS } from '../service';

/** The address failed sign-ins are counted against (the client's, behind the configured trusted proxies). */
const clientOf = (req: Request) => req.ip ?? 'unknown';

export function signInPages(router: Router, kit: DashboardKit): void {
  const { deps, secret, secure, form, cookieAttrs, authed } = kit;
  const { dashboard } = deps.services;

  function startSession(res: Response, sessionId: string) {
    res.append('Set-Cookie', `${SESSION_COOKIE}=${sessionId}; ${cookieAttrs}`);
    res.redirect(303, '/dashboard');
  }

  /**
   * A sign-in form's POST: CSRF checked, refused for 15 minutes after too many failures from this address, and
   * on success a new session. Every answer but the redirect is the form again with the message.
   */
  function signInPost(options: {
    csrfScope: string;
    render: (nonce: string, csrf: string, error: string) => string;
    expired: string;
    invalid: string;
    signIn: (body: unknown) => Promise<{ sessionId: string } | null>;
  }) {
    return route(async (req, res) => {
      const nonce = pageHeaders(res);
      const csrf = issueCsrf(req, res, secret, options.csrfScope, secure, '/dashboard');
      if (!csrfValid(req, secret, options.csrfScope)) {
        res.status(403).send(options.render(nonce, csrf, options.expired));
        return;
      }
      if (await dashboard.signInBlocked(clientOf(req))) {
        res.setHeader('Retry-After', String(SIGN_IN_WINDOW_MS / 1000));
        res.status(429).send(options.render(nonce, csrf, 'Too many failed sign-ins. Try again in 15 minutes.'));
        return;
      }
      const signedIn = await options.signIn(req.body);
      if (!signedIn) {
        await dashboard.recordFailedSignIn(clientOf(req));
        res.status(401).send(options.render(nonce, csrf, options.invalid));
        return;
      }
      startSession(res, signedIn.sessionId);
    });
  }

  router.get(
    '/dashboard/signin',
    route(async (req, res) => {
      const nonce = pageHeaders(res);
      res.send(signInPage(nonce, issueCsrf(req, res, secret, 'dashboard-signin', secure, '/dashboard'), null));
    }),
  );

  router.post(
    '/dashboard/signin',
    form,
    signInPost({
      csrfScope: 'dashboard-signin',
      render: (nonce, csrf, error) => signInPage(nonce, csrf, error),
      expired: 'This form has expired. Please try again.',
      invalid: 'That API key is not valid.',
      signIn: async (body) => {
        const apiKey = parseKeySignIn(body);
        return apiKey ? dashboard.signInWithKey(apiKey) : null;
      },
    }),
  );

  // GET only shows a button: link scanners that prefetch URLs must not use up the single-use link.
  router.get(
    '/dashboard/login/:token',
    route(async (req, res) => {
      const nonce = pageHeaders(res);
      res.send(linkPage(nonce, issueCsrf(req, res, secret, 'dashboard-link', secure, '/dashboard'), String(req.params.token), null));
    }),
  );

  router.post(
    '/dashboard/login',
    form,
    signInPost({
      csrfScope: 'dashboard-link',
      render: (nonce, csrf, error) => linkPage(nonce, csrf, '', error),
      expired: 'This form has expired. Open the sign-in link again.',
      invalid: 'This sign-in link is not valid: it was already used, has expired, or is incomplete. Ask for a new one.',
      signIn: async (body) => {
        const token = parseLinkSignIn(body);
        return token ? dashboard.signInWithLink(token) : null;
      },
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
