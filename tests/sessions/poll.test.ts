import request from 'supertest';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { decryptJson } from '../../server/crypto';
import { ALICE, completeKyc, createSession, poll, SCREENING_ENV, SESSION_TABLES } from './support';

describe('GET /v1/sessions/:id (polling)', () => {
  let h: Harness;
  let clock: TestClock;
  let apiKey: string;
  beforeAll(async () => {
    clock = new TestClock(new Date('2026-03-01T12:00:00Z'));
    h = await createHarness({ env: { ...SCREENING_ENV, POLL_PER_MINUTE: '1000' }, overrides: { clock } });
  });
  beforeEach(async () => {
    await resetTables(h.deps, SESSION_TABLES);
    clock.set('2026-03-01T12:00:00Z');
    ({ apiKey } = await createMerchant(h.deps, { displayName: 'Acme Books' }));
  });
  afterAll(() => h.close());

  it('returns 401 unauthorized when X-Poll-Secret is missing', async () => {
    const s = await createSession(h, apiKey);
    const res = await poll(h, s.session_id);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: { code: 'unauthorized', message: 'The X-Poll-Secret header is required (the poll_secret returned when the session was created).' },
    });
  });

  it('answers an unknown session id and a wrong poll secret with the same 404', async () => {
    const s = await createSession(h, apiKey);
    const wrong = await poll(h, s.session_id, 'ps_wrong');
    const unknown = await poll(h, 'vs_doesnotexist0000000000000000000', s.poll_secret);
    const malformed = await poll(h, 'not-a-session-id', s.poll_secret);
    for (const res of [wrong, unknown, malformed]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: 'not_found', message: 'Session not found.' } });
    }
  });

  it('returns the pending body, ignoring an X-API-Key, with X-RateLimit headers', async () => {
    const s = await createSession(h, apiKey);
    const res = await poll(h, s.session_id, s.poll_secret).set('X-API-Key', 'as_live_not_a_real_key');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session_id: s.session_id,
      status: 'pending',
      retry_after_seconds: 5,
      next_steps: { action: 'continue_polling', poll_interval_seconds: 5, eta_message: expect.stringContaining('browser') },
    });
    expect(res.headers['x-ratelimit-limit']).toBe('1000');
    expect(res.headers['x-ratelimit-remaining']).toBeDefined();
    expect(res.headers['x-ratelimit-reset']).toBeDefined();
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('delivers the operator token exactly once, then reports consumed', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id);
    clock.advance(10_000);
    const first = await poll(h, s.session_id, s.poll_secret);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      session_id: s.session_id,
      status: 'verified',
      operator_token: expect.stringMatching(/^opc_[0-9A-Za-z]{43}$/),
      completed_at: '2026-03-01T12:00:00.000Z',
      token_ttl_seconds: 86400,
      next_steps: { action: 'retry_merchant_request_with_operator_token', header_name: 'X-Operator-Token', user_message: expect.any(String) },
    });
    expect(first.body.refresh_token).toBeUndefined();
    const second = await poll(h, s.session_id, s.poll_secret);
    expect(second.body).toEqual({
      session_id: s.session_id,
      status: 'consumed',
      next_steps: { action: 'use_stored_operator_token', user_message: expect.any(String) },
    });

    // The token resolves to a KYC-verified operator account (no API key) with encrypted PII.
    const resolved = await h.deps.services.credentials.resolve(first.body.operator_token);
    expect(resolved.status).toBe('live');
    const credential = resolved.status === 'live' ? resolved.credential : null;
    expect(credential!.expires_at.toISOString()).toBe('2026-03-02T12:00:10.000Z');
    expect(credential!.session_id).toBe(s.session_id);
    const operator = await h.deps.db('accounts').where({ id: credential!.account_id }).first();
    expect(operator).toMatchObject({
      kind: 'operator',
      kyc_status: 'verified',
      verification_level: 'kyc_verified',
      operator_type: 'individual',
      jurisdiction: 'DE',
      age_bracket: '21+',
      age_verified: true,
      sanctions_status: 'clear',
    });
    expect(operator.sanctions_checked_at.toISOString()).toBe('2026-03-01T12:00:00.000Z');
    expect(operator.pii_encrypted).not.toContain('Alice');
    expect(decryptJson(h.deps.config.piiKey, operator.pii_encrypted)).toEqual({
      full_name: 'Alice Example',
      date_of_birth: '1990-04-12',
      country: 'DE',
      document_last4: '4567',
    });
    expect(await h.deps.db('api_keys').where({ account_id: operator.id })).toHaveLength(0);
    // The plaintext token is nowhere in the database.
    const dump = JSON.stringify(await h.deps.db('credentials').select('*'));
    expect(dump).not.toContain(first.body.operator_token);
  });

  it('reports expired once the one-hour TTL has elapsed', async () => {
    const s = await createSession(h, apiKey);
    clock.advance(3600_000 - 1000);
    expect((await poll(h, s.session_id, s.poll_secret)).body.status).toBe('pending');
    clock.advance(1000);
    const res = await poll(h, s.session_id, s.poll_secret);
    expect(res.body).toEqual({ session_id: s.session_id, status: 'expired', next_steps: { action: 'create_new_session', user_message: expect.any(String) } });
    // A late identity check cannot revive it.
    const applied = await completeKyc(h, s.session_id);
    expect(applied.applied).toBe(false);
    expect((await poll(h, s.session_id, s.poll_secret)).body.status).toBe('expired');
  });

  it('reports failed with next_steps verification_failed', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id, { ...ALICE, document_number: 'FAIL-0001' });
    const res = await poll(h, s.session_id, s.poll_secret);
    expect(res.body).toEqual({ session_id: s.session_id, status: 'failed', next_steps: { action: 'verification_failed', user_message: expect.any(String) } });
  });

  it('reports flagged with contact_support, support email and subject from config', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id, { full_name: 'Dmitri Vorontsov', date_of_birth: '1971-03-14', country: 'RU', document_number: 'RU778899' });
    const res = await poll(h, s.session_id, s.poll_secret);
    expect(res.body).toEqual({
      session_id: s.session_id,
      status: 'flagged',
      next_steps: {
        action: 'contact_support',
        support_email: 'compliance@kya.dev',
        support_subject: 'Verification review',
        user_message: expect.stringContaining(s.session_id),
      },
    });
    const session = await h.deps.db('sessions').where({ id: s.session_id }).first();
    const operator = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(operator).toMatchObject({ kyc_status: 'flagged', sanctions_status: 'flagged', verification_level: 'none' });
    expect(operator.sanctions_checked_at).not.toBeNull();
    expect(await h.deps.db('credentials')).toHaveLength(0);
  });
});

describe('exactly-once delivery under concurrency', () => {
  it('hands the token to exactly one of 20 concurrent polls across two app instances', async () => {
    const prefix = `kya:test:concurrency:${Date.now()}:`;
    const a = await createHarness({ redisPrefix: prefix });
    const b = await createHarness({ redisPrefix: prefix });
    try {
      await resetTables(a.deps, SESSION_TABLES);
      const { apiKey } = await createMerchant(a.deps);
      const s = await createSession(a, apiKey);
      await completeKyc(b, s.session_id);
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          request((i % 2 ? a : b).app)
            .get(`/v1/sessions/${s.session_id}`)
            .set('X-Poll-Secret', s.poll_secret),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
      const withToken = responses.filter((r) => r.body.operator_token);
      expect(withToken).toHaveLength(1);
      expect(withToken[0].body.status).toBe('verified');
      expect(responses.filter((r) => r.body.status === 'consumed')).toHaveLength(19);
      expect(await a.deps.db('credentials').where({ session_id: s.session_id })).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('poll rate limit', () => {
  it('allows 30 polls per minute per IP and answers the 31st with 429 rate_limited', async () => {
    const h = await createHarness();
    try {
      await resetTables(h.deps, SESSION_TABLES);
      const { apiKey } = await createMerchant(h.deps);
      const s = await createSession(h, apiKey);
      let last;
      for (let i = 0; i < 30; i++) {
        last = await poll(h, s.session_id, s.poll_secret);
        expect(last.status).toBe(200);
      }
      expect(last?.headers['x-ratelimit-limit']).toBe('30');
      expect(last?.headers['x-ratelimit-remaining']).toBe('0');
      const limited = await poll(h, s.session_id, s.poll_secret);
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await h.close();
    }
  });
});
