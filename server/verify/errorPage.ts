// The verify page's answer to a request that failed before or outside its handlers (an unreadable or oversized
// form, an unexpected error): an HTML page with the page's headers, carrying only the error's public message.
import crypto from 'node:crypto';
import type { Response } from 'express';
import type { ApiError } from '../../shared/errors';
import { messagePage } from './views';

export function isPagePath(path: string): boolean {
  return path === '/verify' || path.startsWith('/verify/');
}

/** The verify page's headers: its own strict CSP (nonce'd style and script, forms only to this origin). */
export function pageHeaders(res: Response, nonce: string): void {
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'self' data: https:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.type('html');
}

function wording(status: number): { heading: string; text: string; id: string } {
  if (status >= 500) return { heading: 'Something went wrong', text: 'Please wait a minute and reload the verification page.', id: 'server-error' };
  if (status === 404) return { heading: 'Page not found', text: 'Check that you opened the whole link your agent gave you.', id: 'not-found' };
  if (status === 429) return { heading: 'Too many attempts', text: 'Please wait a minute, then reload the verification page.', id: 'rate-limited' };
  if (status === 413) {
    return {
      heading: 'This form could not be processed',
      text: 'The form you sent was larger than this page accepts. Reload the verification page and submit it again.',
      id: 'request-error',
    };
  }
  return {
    heading: 'This form could not be processed',
    text: 'The form you sent could not be read. Reload the verification page and submit it again.',
    id: 'request-error',
  };
}

export function sendErrorPage(res: Response, error: ApiError): void {
  const nonce = crypto.randomBytes(16).toString('base64');
  pageHeaders(res, nonce);
  const { heading, text, id } = wording(error.status);
  res.status(error.status).send(messagePage(nonce, heading, heading, text, id));
}
