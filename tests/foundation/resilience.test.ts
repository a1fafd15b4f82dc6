// Bounded dependency behaviour: a hung or dead Postgres gives 503 api_error within about a second (the
// dependency timeout); without Redis the server keeps serving with per-instance limits and durable quota; when
// Redis returns, shared counting resumes within a second; a dropped pooled connection never kills the process.
// The measured failure table (private redis-server, proxied PostgreSQL, SIGKILL, FLUSHALL) is failures.test.ts.
import request from 'supertest';
import Redis from 'ioredis';
import { Client } from 'pg';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { meteredApp } from '../support/meteredApp';
import { freePort, hungServer, tcpProxy, type Closable } from '../support/net';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { isInfrastructureError } from '../../server/http/errorHandler';
import { retryWithBackoff } from '../../server/services/agentCopy';
import { eventually } from '../support/eventually';
import { createLogger } from '../../server/logger';

const API_ERROR = {
  error: { code: 'api_error', message: 'A backing service is temporarily unavailable.' },
  // JSON-encoded like every other agent_instructions.
  agent_instructions: JSON.stringify(retryWithBackoff(5)),
};
const someKey = 'as_live_' + 'A'.repeat(43);
const redisDb = new URL(TEST_REDIS_URL).pathname.slice(1) || '0';

describe('PostgreSQL hung or down', () => {
  let hung: Closable;
  beforeAll(async () => {
    hung = await hungServer();
  });
  afterAll(() => hung.close());

  it('answers 503 api_error with agent_instructions within about a second when Postgres accepts but never answers', async () => {
    const h = await createHarness({ env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${hung.port}/kya` } });
    try {
      const started = Date.now();
      const res = await request(meteredApp(h.deps)).post('/t/metered').set('X-API-Key', someKey).send({ ok: true });
      const elapsed = Date.now() - started;
      expect(res.status).toBe(503);
      expect(res.body).toEqual(API_ERROR);
      expect(res.headers['retry-after']).toBe('5');
      expect(elapsed).toBeLessThan(1900);

      const readyStarted = Date.now();
      const ready = await request(h.app).get('/readyz');
      expect(Date.now() - readyStarted).toBeLessThan(1900);
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ status: 'unavailable', checks: { database: 'failed', redis: 'ok' }, failed: ['database'], sanctions: expect.any(Object) });
      expect((await request(h.app).get('/healthz')).status).toBe(200); // the process itself is alive
    } finally {
      await h.close();
    }
  });

  it('answers 503 api_error quickly when nothing listens on the Postgres port', async () => {
    const port = await freePort();
    const h = await createHarness({ env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/kya` } });
    try {
      const started = Date.now();
      const res = await request(meteredApp(h.deps)).get('/t/limited').set('Authorization', `Bearer ${someKey}`);
      expect(res.status).toBe(503);
      expect(res.body).toEqual(API_ERROR);
      expect(Date.now() - started).toBeLessThan(1900);
    } finally {
      await h.close();
    }
  });
});

describe('a dropped pooled connection', () => {
  it('is discarded and replaced; the process keeps serving', async () => {
    const logger = createLogger('silent');
    const warn = jest.spyOn(logger, 'warn');
    const h = await createHarness({ overrides: { logger } });
    const admin = new Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    try {
      const { rows } = await h.deps.db.raw('select pg_backend_pid() as pid');
      await admin.query('select pg_terminate_backend($1)', [rows[0].pid]);
      // The idle connection has emitted 'error' (the pool logs it) before the next query.
      await eventually(async () => warn.mock.calls.some((call) => call[1] === 'database connection error'));
      // At most the very next query can hit the dead socket; after that the pool has replaced it.
      await h.deps.db.raw('select 1').catch((err) => expect(isInfrastructureError(err)).toBe(true));
      const { rows: again } = await h.deps.db.raw('select 1 as one');
      expect(again[0].one).toBe(1);
    } finally {
      await admin.end();
      await h.close();
    }
  });
});

describe('Redis down', () => {
  let h: Harness;
  beforeAll(async () => {
    const port = await freePort();
    h = await createHarness({ env: { REDIS_URL: `redis://127.0.0.1:${port}/${redisDb}` } });
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(() => h.close());

  it('keeps serving: per-instance rate limit, quota counted from the database', async () => {
    const app = meteredApp(h.deps);
    // A new account's window opens at its first request, so the three calls below share one window.
    const { accountId, apiKey } = await createMerchant(h.deps, { tier: 'free', rps: 2, quota: 10 });
    const started = Date.now();
    const responses = [];
    for (let i = 0; i < 3; i++) responses.push(await request(app).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true }));
    expect(Date.now() - started).toBeLessThan(900);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(responses.map((r) => r.headers['x-ratelimit-limit'])).toEqual(['2', '2', '2']);
    expect(responses.map((r) => r.headers['x-quota-used'])).toEqual(['1', '2', '2']);
    expect(responses[2].body.error.code).toBe('rate_limited');
    await h.deps.services.quota.flush();
    expect(await h.deps.repos.usage.get({ accountId, period: new Date().toISOString().slice(0, 7) })).toBe(2);
  });

  it('fails readiness with 503 naming redis', async () => {
    const res = await request(h.app).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'unavailable', checks: { database: 'ok', redis: 'failed' }, failed: ['redis'], sanctions: expect.any(Object) });
  });

  it('reports readiness as degraded (200) naming redis when READINESS_REQUIRES_REDIS=false, so instances stay in rotation', async () => {
    const port = await freePort();
    const lenient = await createHarness({ env: { REDIS_URL: `redis://127.0.0.1:${port}/${redisDb}`, READINESS_REQUIRES_REDIS: 'false' } });
    try {
      const res = await request(lenient.app).get('/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'degraded', checks: { database: 'ok', redis: 'failed' }, failed: ['redis'], sanctions: expect.any(Object) });
    } finally {
      await lenient.close();
    }
  });

  it('bounds enqueuing a background job instead of blocking the caller', async () => {
    const started = Date.now();
    const err = await h.deps.jobs.add('foundation-probe', { x: 1 }).then(
      () => null,
      (e) => e,
    );
    expect(Date.now() - started).toBeLessThan(2500);
    expect(err).toMatchObject({ code: 'ETIMEDOUT' });
    expect(isInfrastructureError(err)).toBe(true);
  });

  it('still applies account changes (the broadcast failure is logged, not thrown)', async () => {
    const { accountId } = await createMerchant(h.deps);
    const rotated = await h.deps.services.accounts.rotateKey(accountId);
    expect(rotated.api_key).toMatch(/^as_live_/);
  });
});

describe('Redis outage and return', () => {
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;
  let h: Harness;
  let direct: Redis;
  beforeAll(async () => {
    const target = new URL(TEST_REDIS_URL);
    proxy = await tcpProxy(Number(target.port || 6379), target.hostname);
    h = await createHarness({ env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}/${redisDb}` } });
    direct = new Redis(TEST_REDIS_URL);
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(async () => {
    direct.disconnect();
    await h.close();
    await proxy.close();
  });

  it('falls back during the outage and resumes shared counting within a second of Redis returning', async () => {
    const app = meteredApp(h.deps);
    const { accountId, apiKey } = await createMerchant(h.deps, { tier: 'free', rps: 50, quota: 100 });
    const period = new Date().toISOString().slice(0, 7);
    const quotaKey = `${h.prefix}quota:${accountId}:${period}`;
    const call = () => request(app).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });

    expect((await call()).headers['x-quota-used']).toBe('1');
    expect(await direct.get(quotaKey)).toBe('1');

    await proxy.cut();
    const during = [];
    for (let i = 0; i < 3; i++) during.push(await call());
    expect(during.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(during.map((r) => r.headers['x-quota-used'])).toEqual(['2', '3', '4']); // durable count + this instance's pending
    expect(during.every((r) => r.headers['x-ratelimit-limit'] === '50')).toBe(true);
    expect(await direct.get(quotaKey)).toBe('1'); // nothing reached Redis

    await new Promise((r) => setTimeout(r, 1500)); // let reconnect backoff reach its cap
    await proxy.restore();
    const restored = Date.now();
    const rlKey = `${h.prefix}rl:rps:${accountId}`;
    let resumedAfter = -1;
    while (Date.now() - restored < 3000) {
      await call();
      if ((await direct.exists(rlKey)) === 1) {
        resumedAfter = Date.now() - restored;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(resumedAfter).toBeGreaterThanOrEqual(0);
    expect(resumedAfter).toBeLessThan(1500);
    // The live quota counter was rebuilt from the durable count: outage calls are not forgotten.
    const after = await call();
    const used = Number(after.headers['x-quota-used']);
    expect(Number(await direct.get(quotaKey))).toBe(used);
    await h.deps.services.quota.flush();
    expect(await h.deps.repos.usage.get({ accountId, period })).toBe(used);
  });
});
