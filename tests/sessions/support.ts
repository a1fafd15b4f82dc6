// Helpers shared by the session tests: harness env with the screening fixtures, session creation, and
// completing the sandbox KYC step through the service (the page itself is covered in tests/verify).
import path from 'node:path';
import request from 'supertest';
import type { Harness } from '../support/harness';
import { parseIdentityForm, type IdentityFormFields } from '../../server/verify/forms';

export const FIXTURES = path.resolve(__dirname, '../fixtures/screening');
export const SCREENING_ENV = {
  SANCTIONS_NAME_SOURCE: path.join(FIXTURES, 'SDN.CSV'),
  SANCTIONS_NAME_ALT_SOURCE: path.join(FIXTURES, 'ALT.CSV'),
};

export const SESSION_TABLES = ['accounts', 'sessions', 'refresh_tokens', 'credentials', 'operator_wallets', 'wallet_challenges', 'kyc_webhook_events'];

export const ALICE: IdentityFormFields = { full_name: 'Alice Example', date_of_birth: '1990-04-12', country: 'DE', document_number: 'P1234567' };

export async function createSession(h: Harness, apiKey: string, body: Record<string, unknown> = {}) {
  const res = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send(body);
  if (res.status !== 200) throw new Error(`session creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { session_id: string; poll_secret: string; verify_url: string; poll_url: string; expires_at: string };
}

/** Completes the identity step as the verify page does; `claimKey` is the cookie that browser receives. */
export async function completeKyc(h: Harness, sessionId: string, form: IdentityFormFields = ALICE) {
  const kyc = h.deps.services.kyc;
  if (kyc.kind !== 'form') throw new Error('sandbox provider expected');
  const identity = parseIdentityForm(form, h.deps.clock.now());
  if (!identity.ok) throw new Error(`invalid identity form: ${JSON.stringify(identity.errors)}`);
  const claimKey = h.deps.services.verification.newClaimKey();
  const applied = await h.deps.services.verification.applyKycResult(sessionId, kyc.evaluate(identity.value), 'sandbox', undefined, { claimKey });
  return { ...applied, claimKey };
}

export function poll(h: Harness, sessionId: string, secret?: string) {
  const req = request(h.app).get(`/v1/sessions/${sessionId}`);
  return secret === undefined ? req : req.set('X-Poll-Secret', secret);
}
