// What every dashboard page shares: the session cookie and its attributes, the form parser, and `authed`, which
// resumes the signed-in session (or redirects to sign-in), checks the CSRF token of a POST and hands the page
// its frame (account name, tab, notice).
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { rejectNulInBody } from '../http/inputGuard';
import { hmacSha256 } from '../crypto';
import { presentedTokenMatches, readCookie } from '../verify/csrf';
import { pageHeaders } from '../verify/errorPage';
import { messageDoc, type Frame, type Tab } from './views';

export const SESSION_COOKIE = 'kya_dashboard';

/** A signed-in page's request: who is signed in, the page's CSP nonce, and its frame. */
export interface Ctx {
  req: Request;
  res: Response;
  nonce: string;
  accountId: string;
  sessionId: string;
  frame: (tab: Tab, notice?: Frame['notice']) => Promise<Frame>;
}

export interface DashboardKit {
  deps: Deps;
  /** Signs the CSRF tokens of the signed-out forms. */
  secret: string;
  /** Cookies get `Secure` when the dashboard is served over https. */
  secure: boolean;
  /** Parses a form body (urlencoded, 16 kB, 30 fields) and refuses NUL characters. */
  form: RequestHandler[];
  /** Attributes of the session cookie. */
  cookieAttrs: string;
  /** A signed-in page: the handler runs only for a live session, and for a POST only with its CSRF token. */
  authed: (handler: (ctx: Ctx) => Promise<void>) => RequestHandler;
}

export function dashboardKit(deps: Deps): DashboardKit {
  const { dashboard, accounts } = deps.services;
  const secret = deps.config.serverSecret;
  const secure = deps.config.publicBaseUrl.startsWith('https://');
  const form = [express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 30 }), rejectNulInBody];
  const cookieAttrs = `Path=/dashboard; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;

  const sessionCsrf = (sessionId: string) => hmacSha256(secret, `dashboard-csrf|${sessionId}`).toString('base64url');

  /** Signed-in pages: headers, session resumed (or a redirect to sign-in), CSRF checked on POST. */
  function authed(handler: (ctx: Ctx) => Promise<void>) {
    return route(async (req: Request, res: Response) => {
      const nonce = pageHeaders(res);
      const sessionId = readCookie(req, SESSION_COOKIE);
      const accountId = await dashboard.resume(sessionId);
      if (!accountId || !sessionId) {
        res.append('Set-Cookie', `${SESSION_COOKIE}=; ${cookieAttrs}; Max-Age=0`);
        res.redirect(303, '/dashboard/signin');
        return;
      }
      if (req.method === 'POST') {
        if (!presentedTokenMatches(req, sessionCsrf(sessionId))) {
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

  return { deps, secret, secure, form, cookieAttrs, authed };
}
