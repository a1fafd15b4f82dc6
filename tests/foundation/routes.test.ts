// The foundation's contract on the real metered routes (POST /v1/sessions, POST /v1/assess) mounted by
// createApp: authentication, rate-limit and quota headers, quota exhaustion, and no charge for 4xx.
import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { nextMonthStart } from '../../server/services/quota';

describe('foundation behaviour on the real metered routes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(() => h.close());

  const reset = () => nextMonthStart(new Date()).toISOString().slice(0, 10);

  it('POST /v1/sessions: key in either header, quota headers, no charge for a 400, 429 quota_exceeded at the cap', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'free', quota: 2, rps: 50 });

    const anonymous = await request(h.app).post('/v1/sessions').send({});
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({
      error: { code: 'signup_required', message: 'A valid API key is required (X-API-Key header).', signup_url: 'https://kya.dev/signup' },
    });

    const first = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({ product_name: 'Wine club' });
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('50');
    expect([first.headers['x-quota-limit'], first.headers['x-quota-used'], first.headers['x-quota-reset']]).toEqual(['2', '1', reset()]);

    const invalid = await request(h.app)
      .post('/v1/sessions')
      .set('Authorization', `Bearer ${apiKey}`)
      .send({ product_name: 'x'.repeat(201) });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('bad_request');
    expect(invalid.body.error.details.map((d: { field: string }) => d.field)).toEqual(['product_name']);

    const second = await request(h.app).post('/v1/sessions').set('Authorization', `Bearer ${apiKey}`).send({});
    expect(second.status).toBe(200);
    expect(second.headers['x-quota-used']).toBe('2');

    const over = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({});
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ code: 'quota_exceeded', quota_reset: reset() });
    expect(over.headers['retry-after']).toBeUndefined();
    expect([over.headers['x-quota-limit'], over.headers['x-quota-used']]).toEqual(['2', '2']);
  });

  it('POST /v1/assess: metered like sessions; a 400 invalid_identity does not consume quota; Enterprise is unlimited', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'paid', quota: 10 });
    const address = '0x' + 'ab'.repeat(20);
    const ok = await request(h.app).post('/v1/assess').set('X-API-Key', apiKey).send({ address });
    expect(ok.status).toBe(200);
    expect([ok.headers['x-ratelimit-limit'], ok.headers['x-quota-limit'], ok.headers['x-quota-used']]).toEqual(['20', '10', '1']);

    const invalid = await request(h.app).post('/v1/assess').set('X-API-Key', apiKey).send({ policy: {} });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('invalid_identity');
    expect((await request(h.app).post('/v1/assess').set('X-API-Key', apiKey).send({ address })).headers['x-quota-used']).toBe('2');

    const ent = await createMerchant(h.deps, { tier: 'enterprise' });
    const unlimited = await request(h.app).post('/v1/assess').set('X-API-Key', ent.apiKey).send({ address });
    expect(unlimited.status).toBe(200);
    expect(unlimited.headers['x-ratelimit-limit']).toBe('unlimited');
    expect(unlimited.headers['x-ratelimit-remaining']).toBeUndefined();
    expect(unlimited.headers['x-quota-limit']).toBeUndefined();
  });

  it('answers 402 payment_required when the endpoint is disabled and 403 when the account is cancelled', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    await h.deps.services.accounts.setEndpoint(accountId, 'sessions', false);
    const disabled = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({});
    expect(disabled.status).toBe(402);
    expect(disabled.body).toEqual({ error: { code: 'payment_required', message: 'The sessions endpoint is not enabled for this account.' } });
    await h.deps.services.accounts.cancel(accountId);
    const cancelled = await request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', apiKey)
      .send({ address: '0x' + '12'.repeat(20) });
    expect(cancelled.status).toBe(403);
    expect(cancelled.body).toEqual({ error: { code: 'account_cancelled', message: 'This account has been cancelled.' } });
  });
});
