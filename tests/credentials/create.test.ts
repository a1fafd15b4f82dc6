import request from 'supertest';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { DAY_MS, verifyAccount } from './fixtures';

describe('POST /v1/credentials', () => {
  let h: Harness;
  const clock = new TestClock(new Date('2026-03-01T12:00:00.000Z'));
  beforeAll(async () => {
    h = await createHarness({ overrides: { clock } });
  });
  beforeEach(() => resetTables(h.deps, ['accounts']));
  afterAll(() => h.close());

  it('mints a one-day credential by default and shows the value once', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId);
    const res = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ label: 'shopping agent' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['agent_memory', 'created_at', 'credential', 'expires_at', 'id', 'label', 'prefix']);
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.credential).toMatch(/^opc_[0-9A-Za-z]{43}$/);
    expect(res.body.credential.startsWith(res.body.prefix)).toBe(true);
    expect(res.body.prefix).toMatch(/^opc_.{4}$/);
    expect(res.body.label).toBe('shopping agent');
    expect(res.body.expires_at).toBe(new Date(clock.now().getTime() + DAY_MS).toISOString());
    expect(Number.isNaN(Date.parse(res.body.created_at))).toBe(false);
    expect(res.body.agent_memory).toMatchObject({
      credential_header: 'X-Operator-Token',
      do_not_persist_in_memory: expect.arrayContaining(['credential', 'operator_token']),
      persist_in_credential_store: expect.arrayContaining(['credential']),
      identity_check_endpoint: 'http://kya.test/v1/assess',
    });
    expect(JSON.stringify(res.body.agent_memory)).not.toContain(res.body.credential);

    // The plaintext is never stored and never listed again; it resolves as a live credential of this account.
    const row = await h.deps.db('credentials').where({ id: res.body.id }).first();
    expect(JSON.stringify(row)).not.toContain(res.body.credential);
    const resolved = await h.deps.services.credentials.resolve(res.body.credential);
    expect(resolved).toMatchObject({ status: 'live', credential: { id: res.body.id, account_id: m.accountId, source: 'api' } });
    const list = await request(h.app).get('/v1/credentials').set('X-API-Key', m.apiKey);
    expect(JSON.stringify(list.body)).not.toContain(res.body.credential);
  });

  it('honours ttl_days at both ends of 1..365 and accepts an empty request', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId);
    for (const ttl of [1, 365]) {
      const res = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ ttl_days: ttl });
      expect(res.status).toBe(200);
      expect(res.body.expires_at).toBe(new Date(clock.now().getTime() + ttl * DAY_MS).toISOString());
      expect(res.body.label).toBeNull();
    }
    const empty = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey);
    expect(empty.status).toBe(200);
    expect(empty.body.expires_at).toBe(new Date(clock.now().getTime() + DAY_MS).toISOString());
  });

  it.each([
    [0, 'ttl_days must be greater than or equal to 1'],
    [366, 'ttl_days must be less than or equal to 365'],
    [1.5, 'ttl_days must be an integer'],
    ['7', 'ttl_days must be a number'],
    [null, 'ttl_days must be a number'],
  ])('rejects ttl_days %p with 400 naming the field', async (ttl, message) => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId);
    const res = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ ttl_days: ttl });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'bad_request', message: 'Invalid request: ttl_days', details: [{ field: 'ttl_days', message }] },
    });
    expect(await h.deps.db('credentials').count({ n: '*' }).first()).toEqual({ n: 0 });
  });

  it('rejects a label over 100 characters and a non-string label, naming the field', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId);
    const long = await request(h.app)
      .post('/v1/credentials')
      .set('X-API-Key', m.apiKey)
      .send({ label: 'x'.repeat(101) });
    expect(long.status).toBe(400);
    expect(long.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Invalid request: label',
        details: [{ field: 'label', message: 'label length must be less than or equal to 100 characters long' }],
      },
    });
    const typed = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ label: 5, ttl_days: 0 });
    expect(typed.status).toBe(400);
    expect(typed.body.error.details.map((d: { field: string }) => d.field)).toEqual(['label', 'ttl_days']);
    const exact = await request(h.app)
      .post('/v1/credentials')
      .set('X-API-Key', m.apiKey)
      .send({ label: 'y'.repeat(100) });
    expect(exact.status).toBe(200);
  });

  it('returns 409 kyc_required with a self-verification session when the account has not completed verification', async () => {
    const m = await createMerchant(h.deps);
    const res = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ label: 'a' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: { code: 'kyc_required', message: 'This account must complete identity verification before it can create operator credentials.' },
      verify_url: expect.stringMatching(/^http:\/\/kya\.test\/verify\/vs_[0-9A-Za-z]+$/),
      next_steps: { action: 'complete_kyc_then_retry', user_message: expect.stringContaining(res.body.verify_url) },
    });
    const sessionId = res.body.verify_url.split('/').pop();
    const session = await h.deps.db('sessions').where({ id: sessionId }).first();
    expect(session).toMatchObject({ kind: 'self', status: 'pending', merchant_account_id: m.accountId, operator_account_id: m.accountId });
    expect(await h.deps.db('credentials').count({ n: '*' }).first()).toEqual({ n: 0 });
  });

  it.each(['pending', 'failed'] as const)('treats kyc_status %s as not verified (409 kyc_required)', async (status) => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId, { kyc_status: status, kyc_verified_at: null });
    const res = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({});
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('kyc_required');
  });

  it('refuses issuance with 403 forbidden (contact support) when screening flagged the account', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId, { sanctions_status: 'flagged' });
    const res = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({});
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: { code: 'forbidden', message: 'Credential issuance is blocked for this account pending a manual compliance review.' },
      next_steps: {
        action: 'contact_support',
        support_email: 'compliance@kya.dev',
        support_subject: 'Verification review',
        user_message: 'Identity screening needs a manual review before credentials can be issued. Contact compliance@kya.dev.',
      },
    });
    expect(await h.deps.db('sessions').count({ n: '*' }).first()).toEqual({ n: 0 });
  });

  it('requires an API key (401 signup_required) and honours a disabled credentials endpoint (402)', async () => {
    const res = await request(h.app).post('/v1/credentials').send({});
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: { code: 'signup_required', message: 'A valid API key is required (X-API-Key header).', signup_url: 'https://kya.dev/signup' },
    });
    const m = await createMerchant(h.deps);
    await h.deps.services.accounts.setEndpoint(m.accountId, 'credentials', false);
    const off = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({});
    expect(off.status).toBe(402);
    expect(off.body.error.code).toBe('payment_required');
  });

  it('applies the per-second rate limit with X-RateLimit headers', async () => {
    const m = await createMerchant(h.deps, { tier: 'free', rps: 2 });
    await verifyAccount(h.deps, m.accountId);
    // Five at once fall into at most two one-second windows, so at least one must be over a limit of 2.
    const responses = await Promise.all(Array.from({ length: 5 }, () => request(h.app).get('/v1/credentials').set('X-API-Key', m.apiKey)));
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(responses.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    expect(limited[0].body.error.code).toBe('rate_limited');
    expect(limited[0].headers['retry-after']).toBeDefined();
    expect(limited[0].headers['x-ratelimit-limit']).toBe('2');
  });
});
