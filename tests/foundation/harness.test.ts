import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';

describe('test harness on real PostgreSQL and Redis', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(() => h.close());

  it('reports ready when the database and Redis answer', async () => {
    const res = await request(h.app).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok' }, failed: [], sanctions: expect.any(Object) });
  });

  it('answers unknown routes with 404 not_found in the error format', async () => {
    const res = await request(h.app).get('/v1/does-not-exist');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: { code: 'not_found', message: 'No route for GET /v1/does-not-exist' } });
  });

  it('authenticates a freshly created key and rejects it after rotation', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    expect(apiKey).toMatch(/^as_live_[0-9A-Za-z]{43}$/);
    expect((await h.deps.services.accounts.authenticate(apiKey))?.accountId).toBe(accountId);
    await h.deps.services.accounts.rotateKey(accountId);
    expect(await h.deps.services.accounts.authenticate(apiKey)).toBeNull();
  });
});
