import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { SESSION_TABLES } from './support';

describe('POST /v1/sessions and POST /v1/sessions/public', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  beforeEach(() => resetTables(h.deps, SESSION_TABLES));
  afterAll(() => h.close());

  it('creates a pending merchant session with the full create body', async () => {
    const { apiKey, accountId } = await createMerchant(h.deps);
    const before = Date.now();
    const res = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({ context: 'checkout #42', product_name: 'Premium API' });
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b.session_id).toMatch(/^vs_[0-9A-Za-z]{33}$/);
    expect(b.poll_secret).toMatch(/^ps_[0-9A-Za-z]{43}$/);
    expect(b.verify_url).toBe(`http://kya.test/verify/${b.session_id}`);
    expect(b.poll_url).toBe(`http://kya.test/v1/sessions/${b.session_id}`);
    expect(b.verify_url).not.toContain(b.poll_secret);
    expect(b.poll_url).not.toContain(b.poll_secret);
    const expires = Date.parse(b.expires_at) - before;
    expect(expires).toBeGreaterThan(3595_000);
    expect(expires).toBeLessThanOrEqual(3600_000 + 5_000);
    expect(b.next_steps).toEqual({
      action: 'deliver_verify_url_and_poll',
      poll_interval_seconds: 5,
      poll_secret_header: 'X-Poll-Secret',
      steps: expect.arrayContaining([expect.stringContaining(b.verify_url)]),
      user_message: expect.any(String),
    });
    expect(b.agent_memory.do_not_persist_in_memory).toEqual(expect.arrayContaining(['operator_token', 'poll_secret']));
    expect(b.agent_memory.persist_in_credential_store).toContain('operator_token');
    expect(b.agent_memory.identity_check_endpoint).toBe('http://kya.test/v1/assess');
    expect(typeof b.agent_memory.pattern_summary).toBe('string');
    expect(b.agent_memory.identity_paths).toBeDefined();
    expect(b.agent_memory.bootstrap).toBeDefined();
    const instructions = JSON.parse(b.agent_instructions);
    expect(instructions).toEqual({ action: 'deliver_verify_url_and_poll', steps: b.next_steps.steps, user_message: b.next_steps.user_message });

    const row = await h.deps.db('sessions').where({ id: b.session_id }).first();
    expect(row).toMatchObject({
      kind: 'merchant',
      merchant_account_id: accountId,
      status: 'pending',
      context: 'checkout #42',
      product_name: 'Premium API',
      issue_refresh_token: false,
    });
    expect(row.poll_secret_hash).not.toContain(b.poll_secret);
  });

  it('returns 400 naming each invalid field', async () => {
    const { apiKey } = await createMerchant(h.deps);
    const res = await request(h.app)
      .post('/v1/sessions')
      .set('X-API-Key', apiKey)
      .send({ context: 7, product_name: 'x'.repeat(201) });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Invalid request: context, product_name',
        details: [
          { field: 'context', message: 'context must be a string' },
          { field: 'product_name', message: 'product_name length must be less than or equal to 200 characters long' },
        ],
      },
    });
  });

  it('accepts a product_name of exactly 200 characters and an empty body', async () => {
    const { apiKey } = await createMerchant(h.deps);
    expect(
      (
        await request(h.app)
          .post('/v1/sessions')
          .set('X-API-Key', apiKey)
          .send({ product_name: 'p'.repeat(200) })
      ).status,
    ).toBe(200);
    expect((await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey)).status).toBe(200);
  });

  it('requires an API key (401 signup_required) and accepts Authorization: Bearer', async () => {
    const res = await request(h.app).post('/v1/sessions').send({});
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: { code: 'signup_required', message: 'A valid API key is required (X-API-Key header).', signup_url: 'https://kya.dev/signup' },
    });
    const { apiKey } = await createMerchant(h.deps);
    expect((await request(h.app).post('/v1/sessions').set('Authorization', `Bearer ${apiKey}`).send({})).status).toBe(200);
  });

  it('is gated by the monthly quota', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'free', quota: 1 });
    const first = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({});
    expect(first.status).toBe(200);
    expect(first.headers['x-quota-limit']).toBe('1');
    const second = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({});
    expect(second.status).toBe(429);
    expect(second.body.error.code).toBe('quota_exceeded');
  });

  it('creates an agent-started public session without an API key, recording X-Client-Id', async () => {
    const res = await request(h.app).post('/v1/sessions/public').set('X-Client-Id', 'agent-7.alpha').send({ product_name: 'My agent' });
    expect(res.status).toBe(200);
    const row = await h.deps.db('sessions').where({ id: res.body.session_id }).first();
    expect(row).toMatchObject({ kind: 'public', merchant_account_id: null, client_id: 'agent-7.alpha', issue_refresh_token: true, product_name: 'My agent' });
  });

  it('rejects a malformed X-Client-Id naming the header', async () => {
    const res = await request(h.app).post('/v1/sessions/public').set('X-Client-Id', 'bad id with spaces').send({});
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: 'X-Client-Id', message: expect.any(String) }]);
  });

  it('limits public session creation per IP per hour', async () => {
    const fresh = await createHarness({ env: { PUBLIC_SESSIONS_PER_IP_PER_HOUR: '3' } });
    try {
      for (let i = 0; i < 3; i++) expect((await request(fresh.app).post('/v1/sessions/public').send({})).status).toBe(200);
      const res = await request(fresh.app).post('/v1/sessions/public').send({});
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
    } finally {
      await fresh.close();
    }
  });
});
