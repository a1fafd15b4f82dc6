// The answer of the pages people use (the verify page and the dashboard) to a request that failed before or
// outside their handlers (an unreadable or oversized form, a NUL in a field, an unexpected error): an HTML page
// with the pages' headers, carrying only general wording, never a JSON body in a browser tab.
import crypto from 'node:crypto';
import type { Response } from 'express';
import type { ApiError } from '../../shared/errors';
import { messagePage } from './views';

/** Which page surface a path belongs to, or null for the JSON API. */
export type PageSurface = 'verify' | 'dashboard';

export function pageSurface(path: string): PageSurface | null {
  if (path === '/verify' || path.startsWith('/verify/')) return 'verify';
  if (path === '/dashboard' || path.startsWith('/dashboard/')) return 'dashboard';
  return null;
}

/**
 * The verify page's headers: its own strict CSP (nonce'd style and script, forms only to this origin).
 * Returns the page's fresh CSP nonce.
 */
export function pageHeaders(res: Response): string {
  const nonce = crypto.randomBytes(16).toString('base64');
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'self' data: https:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.type('html');
  return nonce;
}

function wording(status: number, surface: PageSurface): { heading: string; text: string; id: string } {
  const thePage = surface === 'verify' ? 'the verification page' : 'the dashboard page';
  if (status >= 500) return { heading: 'Something went wrong', text: `Please wait a minute and reload ${thePage}.`, id: 'server-error' };
  if (status === 404) {
    const text =
      surface === 'verify' ? 'Check that you opened the whole link your agent gave you.' : 'Go back to the dashboard and choose a page from its menu.';
    return { heading: 'Page not found', text, id: 'not-found' };
  }
  if (status === 429) return { heading: 'Too many attempts', text: `Please wait a minute, then reload ${thePage}.`, id: 'rate-limited' };
  if (status === 413) {
    return {
      heading: 'This form could not be processed',
      text: `The form you sent was larger than this page accepts. Reload ${thePage} and submit it again.`,
      id: 'request-error',
    };
  }
  return {
    heading: 'This form could not be processed',
    text: `The form you sent could not be read. Reload ${thePage} and submit it again.`,
    id: 'request-error',
  };
}

export function sendErrorPage(res: Response, error: ApiError, surface: PageSurface): void {
  const nonce = pageHeaders(res);
  const { heading, text: general, id } = wording(error.status, surface);
  // A 4xx names the fields that were refused (their names only: never the values sent).
  const fields = error.status < 500 ? (error.details ?? []).map((d) => `${d.field} ${d.message}`) : [];
  const text = fields.length ? `${general} Refused: ${fields.join('; ')}.` : general;
  res.status(error.status).send(messagePage(nonce, heading, heading, text, id));
}
