// Page-test helpers: read the CSRF cookie and form token a GET of the verify page hands out.
import type { Response } from 'supertest';

export function csrfFrom(res: Response): { cookie: string; token: string } {
  const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const cookie = setCookie.map((c) => c.split(';')[0]).find((c) => c.startsWith('kya_verify_csrf='));
  const token = /name="csrf" value="([^"]+)"/.exec(res.text)?.[1];
  if (!cookie || !token) throw new Error('no CSRF cookie/token on the page');
  return { cookie, token };
}

export function challengeFrom(html: string): { id: string; message: string } {
  const id = /name="challenge_id" value="([^"]+)"/.exec(html)?.[1];
  const raw = /<textarea id="challenge-message"[^>]*>([\s\S]*?)<\/textarea>/.exec(html)?.[1];
  if (!id || raw === undefined) throw new Error('no wallet challenge on the page');
  const message = raw
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#96;/g, '`')
    .replace(/&amp;/g, '&');
  return { id, message };
}

/** The `kya_verify_claim=…` pair a response sets (the browser that completed the identity step), or null. */
export function claimCookieFrom(res: Response): string | null {
  const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  return setCookie.map((c) => c.split(';')[0]).find((c) => c.startsWith('kya_verify_claim=')) ?? null;
}
