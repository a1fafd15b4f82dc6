// CSRF protection for the verify page's forms: a random HttpOnly, SameSite=Strict cookie plus a hidden form
// token = HMAC(server secret, session id ‖ cookie). A POST without both, or with a token for another session
// or another browser, is refused.
import type { Request, Response } from 'express';
import { hmacSha256, randomBase62, safeEqual } from '../crypto';

const CSRF_COOKIE = 'kya_verify_csrf';
const COOKIE_RE = /^[0-9A-Za-z]{20,64}$/;

export function readCookie(req: Request, name: string): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

export function csrfToken(secret: string, sessionId: string, cookie: string): string {
  return hmacSha256(secret, `verify-csrf|${sessionId}|${cookie}`).toString('base64url');
}

/** The browser's CSRF cookie, set now when missing; returns the form token for this session. */
export function issueCsrf(req: Request, res: Response, secret: string, sessionId: string, secure: boolean, path = '/verify'): string {
  let cookie = readCookie(req, CSRF_COOKIE);
  if (!cookie || !COOKIE_RE.test(cookie)) {
    cookie = randomBase62(24);
    res.append('Set-Cookie', `${CSRF_COOKIE}=${cookie}; Path=${path}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`);
    // Make the cookie visible to this same request's rendering.
    req.headers.cookie = `${req.headers.cookie ? req.headers.cookie + '; ' : ''}${CSRF_COOKIE}=${cookie}`;
  }
  return csrfToken(secret, sessionId, cookie);
}

/** Whether the form's `csrf` field is present and equals `expected` (compared in constant time). */
export function presentedTokenMatches(req: Request, expected: string): boolean {
  const presented = (req.body as Record<string, unknown> | undefined)?.csrf;
  return typeof presented === 'string' && presented !== '' && safeEqual(presented, expected);
}

export function csrfValid(req: Request, secret: string, sessionId: string): boolean {
  const cookie = readCookie(req, CSRF_COOKIE);
  if (!cookie || !COOKIE_RE.test(cookie)) return false;
  return presentedTokenMatches(req, csrfToken(secret, sessionId, cookie));
}
