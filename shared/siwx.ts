// SIGN-IN-WITH-X (x402's wallet-proof header) as both sides read it: the gate checks a header's shape before
// spending an assess call, and the server verifies it. The limits are one promise to agents, so they live here.

export const SIWX_HEADER = 'SIGN-IN-WITH-X';
/** Longest header accepted. */
export const SIWX_MAX_HEADER_LENGTH = 8 * 1024;
/** Longest validity window a proof may claim (and the window of the challenges the gate issues). */
export const SIWX_MAX_LIFETIME_MS = 5 * 60_000;

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** The JSON a header carries (base64, standard or URL-safe alphabet); throws when it is not base64-encoded JSON. */
export function decodeSiwxHeader(value: string): unknown {
  if (!BASE64.test(value)) throw new SyntaxError('not base64');
  return JSON.parse(Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8'));
}
