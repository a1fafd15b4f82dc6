// Per-second rate limit (global across instances sharing Redis) and monthly quota (headers, reset date,
// 429s, refunds of failed calls, durability across a Redis flush).
import request from 'supertest';
import Redis from 'ioredis';
import type { Express } from 'express';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { meteredApp } from '../support/meteredApp';
import { TEST_REDIS_URL } from '../support/env';

/** FLUSHALL only where the suite owns the whole server (CI, DB index 0); FLUSHDB on a developer's own index. */
async function flushRedis(redis: Redis) {
  const index = Number(new URL(TEST_REDIS_URL).pathname.slice(1) || 0);
  if (index === 0) await redis.flushall();
  else await redis.flushdb();
}

describe('per-second rate limit', () => {
  /**
   * Ends the account's current one-second window now. The window is a Redis key whose TTL starts at the
   * account's first request; deleting it is what Redis does when that TTL runs out, without waiting for it.
   */
  const endWindow = (accountId: string) => a.deps.redis!.del(`${a.prefix}rl:rps:${accountId}`);
  let a: Harness;
  let b: Harness; // second instance, same Redis prefix: one global limit
  let appA: Express;
  let appB: Express;

  beforeAll(async () => {
    a = await createHarness();
    b = await createHarness({ redisPrefix: a.prefix });
    appA = meteredApp(a.deps);
    appB = meteredApp(b.deps);
    await resetTables(a.deps, ['accounts']);
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('sends X-RateLimit-Limit/Remaining/Reset on every response of a limited account', async () => {
    const { apiKey } = await createMerchant(a.deps, { tier: 'paid' });
    for (const [method, path] of [
      ['post', '/t/metered'],
      ['get', '/t/limited'],
    ] as const) {
      const res = await request(appA)[method](path).set('X-API-Key', apiKey).send({ ok: true });
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('20');
      expect(Number(res.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(18);
      expect(res.headers['x-ratelimit-reset']).toBe('1');
    }
    // Also on a failed request of the same account.
    const bad = await request(appA).post('/t/metered').set('X-API-Key', apiKey).send({ ok: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.headers['x-ratelimit-limit']).toBe('20');
  });

  it('uses tier defaults (Free 2/s) and per-account overrides', async () => {
    const free = await createMerchant(a.deps, { tier: 'free' });
    const tuned = await createMerchant(a.deps, { tier: 'free', rps: 7 });
    expect((await request(appA).get('/t/limited').set('X-API-Key', free.apiKey)).headers['x-ratelimit-limit']).toBe('2');
    expect((await request(appA).get('/t/limited').set('X-API-Key', tuned.apiKey)).headers['x-ratelimit-limit']).toBe('7');
  });

  it('gives Enterprise only X-RateLimit-Limit: unlimited and no quota headers', async () => {
    const { apiKey } = await createMerchant(a.deps, { tier: 'enterprise', quota: 5, rps: 1 });
    for (let i = 0; i < 8; i++) {
      const res = await request(i % 2 ? appA : appB)
        .post('/t/metered')
        .set('X-API-Key', apiKey)
        .send({ ok: true });
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('unlimited');
      for (const h of ['x-ratelimit-remaining', 'x-ratelimit-reset', 'x-quota-limit', 'x-quota-used', 'x-quota-reset']) {
        expect(res.headers[h]).toBeUndefined();
      }
    }
  });

  it('enforces one limit across two instances sharing Redis: 429 rate_limited with Retry-After', async () => {
    const { accountId, apiKey } = await createMerchant(a.deps, { tier: 'paid', rps: 4 });
    // The window is one second from the first request: on a loaded machine a round can outlast it, so such a
    // round is retried in a fresh window.
    for (let round = 0; round < 3; round++) {
      await endWindow(accountId);
      const started = Date.now();
      const responses = [];
      for (let i = 0; i < 5; i++) {
        responses.push(
          await request(i % 2 ? appB : appA)
            .get('/t/limited')
            .set('X-API-Key', apiKey),
        );
      }
      if (Date.now() - started > 800) continue;
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 429]);
      expect(responses.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['3', '2', '1', '0', '0']);
      const limited = responses[4];
      expect(limited.body).toEqual({ error: { code: 'rate_limited', message: 'Rate limit exceeded; retry in 1 s.' } });
      expect(limited.headers['retry-after']).toBe('1');
      expect(limited.headers['x-ratelimit-limit']).toBe('4');
      await endWindow(accountId);
      expect((await request(appB).get('/t/limited').set('X-API-Key', apiKey)).status).toBe(200);
      return;
    }
    throw new Error('could not complete a round within one rate-limit window');
  });

  it('does not charge quota for a call rejected by the rate limit', async () => {
    const { accountId, apiKey } = await createMerchant(a.deps, { tier: 'free', rps: 1, quota: 50 });
    const first = await request(appA).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });
    const second = await request(appB).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });
    expect(first.status).toBe(200);
    expect(second.status).toBe(429);
    expect(second.body.error.code).toBe('rate_limited');
    expect([second.headers['x-quota-limit'], second.headers['x-quota-used']]).toEqual(['50', '1']); // quota headers on every 429
    await endWindow(accountId);
    const third = await request(appA).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });
    expect(third.headers['x-quota-used']).toBe('2');
  });
});

describe('monthly quota', () => {
  const clock = new TestClock(new Date('2026-02-15T12:00:00Z'));
  let h: Harness;
  let app: Express;
  let redis: Redis;

  beforeAll(async () => {
    h = await createHarness({ overrides: { clock } });
    app = meteredApp(h.deps);
    redis = new Redis(TEST_REDIS_URL);
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(async () => {
    redis.disconnect();
    await h.close();
  });
  beforeEach(() => clock.set('2026-02-15T12:00:00Z'));

  const call = (apiKey: string, body: object = { ok: true }) => request(app).post('/t/metered').set('X-API-Key', apiKey).send(body);

  it('sends X-Quota-Limit/Used/Reset (first day of the next UTC month) on success', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'paid' });
    const first = await call(apiKey);
    expect(first.status).toBe(200);
    expect([first.headers['x-quota-limit'], first.headers['x-quota-used'], first.headers['x-quota-reset']]).toEqual(['10000', '1', '2026-03-01']);
    expect((await call(apiKey)).headers['x-quota-used']).toBe('2');
  });

  it('uses the Free default of 20 per month', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'free' });
    expect((await call(apiKey)).headers['x-quota-limit']).toBe('20');
  });

  it('computes the reset date in UTC across the year boundary', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'paid' });
    clock.set('2026-12-31T23:59:59Z');
    expect((await call(apiKey)).headers['x-quota-reset']).toBe('2027-01-01');
  });

  it('answers 429 quota_exceeded with quota headers and without Retry-After once the quota is used', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'free', quota: 3, rps: 100 });
    for (let i = 1; i <= 3; i++) expect((await call(apiKey)).headers['x-quota-used']).toBe(String(i));
    for (let i = 0; i < 2; i++) {
      const res = await call(apiKey);
      expect(res.status).toBe(429);
      expect(res.body).toEqual({
        error: {
          code: 'quota_exceeded',
          message: 'Monthly quota exceeded; retrying does not help until the quota resets.',
          quota_reset: '2026-03-01',
        },
      });
      expect(res.headers['retry-after']).toBeUndefined();
      expect([res.headers['x-quota-limit'], res.headers['x-quota-used'], res.headers['x-quota-reset']]).toEqual(['3', '3', '2026-03-01']);
    }
    await h.deps.services.quota.flush();
    // Counter shards: the durable count is their sum.
    expect(
      (await h.deps
        .db('usage_monthly')
        .where({ period: '2026-02' })
        .join('api_keys', 'api_keys.account_id', 'usage_monthly.account_id')
        .where('api_keys.prefix', apiKey.slice(0, 12))
        .sum({ count: 'count' })
        .first())!.count,
    ).toBe(3);
  });

  it('starts counting again in the next month', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'free', quota: 2, rps: 100 });
    await call(apiKey);
    await call(apiKey);
    expect((await call(apiKey)).status).toBe(429);
    clock.set('2026-03-01T00:00:00Z');
    const res = await call(apiKey);
    expect(res.status).toBe(200);
    expect([res.headers['x-quota-used'], res.headers['x-quota-reset']]).toEqual(['1', '2026-04-01']);
  });

  it('does not consume quota for a request that fails validation (4xx) or fails in the handler (5xx)', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps, { tier: 'free', quota: 2, rps: 100 });
    const invalid = await call(apiKey, { ok: 'yes' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details).toEqual([{ field: 'ok', message: 'ok must be a boolean' }]);
    expect((await call(apiKey, { ok: true, fail_with: 500 })).status).toBe(500);
    expect((await call(apiKey)).headers['x-quota-used']).toBe('1');
    expect((await call(apiKey)).headers['x-quota-used']).toBe('2');
    await h.deps.services.quota.flush();
    expect(await h.deps.repos.usage.get({ accountId, period: '2026-02' })).toBe(2);
  });

  it('loses no count when Redis is flushed: the live counter is rebuilt from usage_monthly', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps, { tier: 'free', quota: 100, rps: 100 });
    for (let i = 0; i < 5; i++) await call(apiKey); // each committed to usage_monthly before its response
    await flushRedis(redis);
    expect(await redis.exists(`${h.prefix}quota:${accountId}:2026-02`)).toBe(0);
    const after = await call(apiKey);
    expect(after.headers['x-quota-used']).toBe('6');
    expect(await redis.get(`${h.prefix}quota:${accountId}:2026-02`)).toBe('6');

    // A new instance after a Redis restart (its own memory empty) sees the same count.
    await h.deps.services.quota.flush();
    await flushRedis(redis);
    const fresh = await createHarness({ overrides: { clock }, redisPrefix: h.prefix });
    try {
      const res = await request(meteredApp(fresh.deps)).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });
      expect(res.headers['x-quota-used']).toBe('7');
    } finally {
      await fresh.close();
    }
    expect(await h.deps.repos.usage.get({ accountId, period: '2026-02' })).toBe(7);
  });

  it('never re-creates a flushed counter when refunding a failed call', async () => {
    const { accountId } = await createMerchant(h.deps, { tier: 'free', quota: 10 });
    const quota = h.deps.services.quota;
    await (await quota.reserve(accountId, 10)).settle(200);
    await quota.flush();
    const inFlight = await quota.reserve(accountId, 10);
    await flushRedis(redis);
    void inFlight.settle(400); // refund after the flush
    await new Promise((r) => setTimeout(r, 50));
    expect(await redis.exists(`${h.prefix}quota:${accountId}:2026-02`)).toBe(0);
    const next = await quota.reserve(accountId, 10);
    expect(next.state.used).toBe(2);
    void next.settle(200);
  });
});
