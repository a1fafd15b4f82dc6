// The claim cookie: proof that this browser completed a session's identity step, the only browser that may
// link wallets through that session. HttpOnly, SameSite=Strict, scoped to the session's page path, gone when
// the session expires; the value is random and only its hash is stored with the session.
import type { Request, Response } from 'express';
import type { SessionRow } from '../repositories/sessions';
import { readCookie } from './csrf';

const CLAIM_COOKIE = 'kya_verify_claim';
const VALUE_RE = /^[0-9A-Za-z]{20,64}$/;

function cookiePath(sessionId: string): string {
  return `/verify/${encodeURIComponent(sessionId)}`;
}

/** The claim key this browser presents, or null when absent or malformed. */
export function presentedClaimKey(req: Request): string | null {
  const value = readCookie(req, CLAIM_COOKIE);
  return value && VALUE_RE.test(value) ? value : null;
}

export function setClaimCookie(res: Response, session: SessionRow, claimKey: string, secure: boolean, now: Date): void {
  const maxAge = Math.max(0, Math.floor((session.expires_at.getTime() - now.getTime()) / 1000));
  res.append(
    'Set-Cookie',
    `${CLAIM_COOKIE}=${claimKey}; Path=${cookiePath(session.id)}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`,
  );
}
