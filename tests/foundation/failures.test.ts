// The failure table, one fault at a time, each injected for real: a private redis-server stopped (SIGKILL) or
// hung (SIGSTOP), PostgreSQL cut or hung behind a TCP proxy, an app instance SIGKILLed right after N metered
// 200s, FLUSHALL with two instances serving, and the gate's answers (failOpen off/on) while the server's
// database hangs. Every row measures its answers and asserts them against twice the promise (this runs on a
// shared 2-core machine); the figures are printed as `[failure table] …`. Answers while a circuit is open are
// compared with the same calls made just before the fault, on a healthy dependency (the in-run baseline: under
// load on this machine a healthy assess itself takes 30–300 ms): their median may exceed the baseline's median
// by at most 2× the 50 ms promise, and each must stay below one dependency timeout (none waited on it).
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { createHarness, createMerchant, type Harness } from '../support/harness';
import { meteredApp } from '../support/meteredApp';
import { freePort, tcpProxy, type TcpProxy } from '../support/net';
import { listen, privateRedis, report, timedFetch, type Listening, type PrivateRedis, type Timed } from '../support/faults';
import { baseEnv, killStrayServers, startServer } from '../support/processes';
import { TEST_DATABASE_URL, TEST_PII_KEY, TEST_REDIS_URL, TEST_SERVER_SECRET } from '../support/env';
import { retryWithBackoff } from '../../server/services/agentCopy';
import { createOperator, evmAddress, mintCredential } from '../assess/seed';
import { shop } from '../gate/support';

jest.setTimeout(90_000);

/** The promises, in ms: any answer during an outage; answers once the circuit is open; service after the fault ends. */
const PROMISE = { anyAnswer: 1500, whileOpen: 50, recovery: 1000 };
/** DEPENDENCY_TIMEOUT_MS (the production default): an answer faster than this did not wait out a dependency timeout. */
const DEPENDENCY_TIMEOUT = 1000;
const TIMEOUT_ENV = { DEPENDENCY_TIMEOUT_MS: String(DEPENDENCY_TIMEOUT) };
const BOUND = { anyAnswer: 2 * PROMISE.anyAnswer, whileOpen: 2 * PROMISE.whileOpen, whileOpenCeiling: DEPENDENCY_TIMEOUT, recovery: 2 * PROMISE.recovery };

const API_ERROR = {
  error: { code: 'api_error', message: 'A backing service is temporarily unavailable.' },
  agent_instructions: JSON.stringify(retryWithBackoff(5)),
};
const period = () => new Date().toISOString().slice(0, 7);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A timeout opens a circuit only once a probe confirms the outage; "while open" is measured from then. */
async function untilOpen(circuit: { isOpen: boolean }): Promise<void> {
  for (let waited = 0; !circuit.isOpen && waited < PROMISE.anyAnswer; waited += 20) await sleep(20);
  expect(circuit.isOpen).toBe(true);
}
const max = (rs: Timed[]) => Math.max(...rs.map((r) => r.ms));
const median = (rs: Timed[]) => {
  const sorted = rs.map((r) => r.ms).sort((x, y) => x - y);
  return (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2;
};
/** Answers while the circuit is open: median within 2× the promise of the healthy baseline's, none beyond the ceiling. */
function expectWhileOpen(rs: Timed[], baseline: Timed[]) {
  expect(median(rs)).toBeLessThan(median(baseline) + BOUND.whileOpen);
  expect(max(rs)).toBeLessThan(BOUND.whileOpenCeiling);
}
async function sequential(n: number, call: () => Promise<Timed>): Promise<Timed[]> {
  const out: Timed[] = [];
  for (let i = 0; i < n; i++) out.push(await call());
  return out;
}

function post(base: Listening, pathName: string, apiKey: string, body: object): Promise<Timed> {
  return timedFetch(`${base.url}${pathName}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(body),
  });
}
const assess = (base: Listening, apiKey: string) => post(base, '/v1/assess', apiKey, { address: evmAddress() });

/** Milliseconds from now until `check` holds (polling), or -1 after `ms`. */
async function until(check: () => Promise<boolean>, ms = 5000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < ms) {
    if (await check()) return performance.now() - started;
    await sleep(20);
  }
  return -1;
}

describe.each([
  ['Redis stopped', (r: PrivateRedis) => r.stop(), (r: PrivateRedis) => r.start()],
  ['Redis hung', async (r: PrivateRedis) => r.hang(), async (r: PrivateRedis) => r.resume()],
])('%s', (row, inject, end) => {
  let redis: PrivateRedis;
  let h: Harness;
  let server: Listening;
  let direct: Redis;
  beforeAll(async () => {
    redis = await privateRedis();
    h = await createHarness({ env: { ...TIMEOUT_ENV, REDIS_URL: redis.url } });
    server = await listen(h.app);
  });
  afterAll(async () => {
    direct?.disconnect();
    await server.close();
    await h.close();
    await redis.close();
  });

  it('keeps serving metered calls (per-instance rate limit, quota from the durable count) within the bounds, and rebuilds the live counter exactly when Redis is back', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps, { tier: 'paid', quota: 1000, rps: 1000 });
    const quotaKey = `${h.prefix}quota:${accountId}:${period()}`;
    expect((await assess(server, apiKey)).headers.get('x-quota-used')).toBe('1');
    const baseline = await sequential(10, () => assess(server, apiKey));

    await inject(redis);
    // The calls in flight when the fault starts, then calls once the circuit is open.
    const first = await Promise.all([1, 2, 3, 4].map(() => assess(server, apiKey)));
    await untilOpen(h.deps.circuits.redis!);
    const open: Timed[] = [];
    for (let i = 0; i < 10; i++) open.push(await assess(server, apiKey));
    const all = [...first, ...open];
    expect(all.map((r) => r.status)).toEqual(all.map(() => 200));
    expect(all.every((r) => r.headers.get('x-ratelimit-limit') === '1000')).toBe(true);
    expect(open.map((r) => r.headers.get('x-quota-used'))).toEqual(['16', '17', '18', '19', '20', '21', '22', '23', '24', '25']);
    expect(h.deps.circuits.redis!.isOpen).toBe(true);
    const testMode = await post(server, '/v1/assess', apiKey, { test: true, address: '0x0000000000000000000000000000000000000001' });
    expect(testMode.status).toBe(200);
    const healthz = await timedFetch(`${server.url}/healthz`);
    expect(healthz.status).toBe(200);
    const readyz = await timedFetch(`${server.url}/readyz`);
    expect([readyz.status, readyz.body]).toEqual([
      503,
      { status: 'unavailable', checks: { database: 'ok', redis: 'failed' }, failed: ['redis'], sanctions: expect.any(Object) },
    ]);

    await end(redis);
    direct = new Redis(redis.url);
    const recovery = await until(
      async () => (await assess(server, apiKey)).status === 200 && !h.deps.circuits.redis!.isOpen && (await direct.exists(quotaKey)) === 1,
    );
    report(row, {
      'in flight': first.map((r) => r.ms),
      'while open': open.map((r) => r.ms),
      'median while open': median(open),
      'median healthy': median(baseline),
      'test mode': testMode.ms,
      readyz: readyz.ms,
      recovery,
    });
    expect(max(first)).toBeLessThan(BOUND.anyAnswer);
    expectWhileOpen(open, baseline);
    expect(testMode.ms).toBeLessThan(BOUND.whileOpenCeiling);
    expect(readyz.ms).toBeLessThan(BOUND.whileOpenCeiling);
    expect(recovery).toBeGreaterThanOrEqual(0);
    expect(recovery).toBeLessThan(BOUND.recovery);

    // Every 200 is in PostgreSQL, and the live counter, rebuilt from it, says the same.
    const next = await assess(server, apiKey);
    const durable = await h.deps.repos.usage.get({ accountId, period: period() });
    expect(Number(next.headers.get('x-quota-used'))).toBe(durable);
    expect(Number(await direct.get(quotaKey))).toBe(durable);
    expect(Number((await h.deps.db('assess_audit').where({ account_id: accountId }).count({ n: '*' }))[0].n)).toBe(durable);
  });
});

describe.each([
  ['PostgreSQL stopped', (p: TcpProxy) => p.cut(), (p: TcpProxy) => p.restore()],
  ['PostgreSQL hung', async (p: TcpProxy) => p.hang(), async (p: TcpProxy) => p.resume()],
])('%s', (row, inject, end) => {
  let proxy: TcpProxy;
  let h: Harness;
  let server: Listening;
  beforeAll(async () => {
    const target = new URL(TEST_DATABASE_URL);
    proxy = await tcpProxy(Number(target.port || 5432), target.hostname);
    const proxied = Object.assign(new URL(TEST_DATABASE_URL), { host: `127.0.0.1:${proxy.port}` }).toString();
    h = await createHarness({ env: { ...TIMEOUT_ENV, DATABASE_URL: proxied } });
    server = await listen(h.app);
  });
  afterAll(async () => {
    await server.close();
    await h.close();
    await proxy.close();
  });

  it('answers 503 api_error with agent_instructions within the bounds, serves test mode and /healthz, and recovers', async () => {
    const { apiKey } = await createMerchant(h.deps, { tier: 'paid', quota: 1000, rps: 1000 });
    const gateBase = { baseUrl: server.url, apiKey, cacheSeconds: 300, degradedHeader: 'X-Gate-Degraded' as const };
    const closed = shop(gateBase);
    const open = shop({ ...gateBase, failOpen: true });
    const gateServers = [await listen(closed.app), await listen(open.app)];
    // Operator credentials: the gate takes a wallet only with a proof, which is beside the point here.
    const { token: cachedToken } = await mintCredential(h.deps, await createOperator(h.deps));
    const unknownToken = () =>
      'opc_' +
      crypto
        .randomBytes(30)
        .toString('base64')
        .replace(/[^A-Za-z0-9]/g, '')
        .slice(0, 40)
        .padEnd(40, 'a');
    const gateCall = (base: Listening, token: string) => timedFetch(`${base.url}/paid`, { method: 'POST', headers: { 'x-operator-token': token } });
    try {
      expect((await assess(server, apiKey)).status).toBe(200); // the API key is now in the auth cache
      expect((await gateCall(gateServers[0], cachedToken)).status).toBe(200); // an allow the gate caches
      const baseline = await sequential(10, () => assess(server, apiKey));

      await inject(proxy);
      const first = await Promise.all([1, 2, 3, 4].map(() => assess(server, apiKey)));
      await untilOpen(h.deps.circuits.postgres!);
      const whileOpen: Timed[] = [];
      for (let i = 0; i < 10; i++) whileOpen.push(await assess(server, apiKey));
      for (const r of [...first, ...whileOpen]) {
        expect([r.status, r.body, r.headers.get('retry-after')]).toEqual([503, API_ERROR, '5']);
      }
      const testMode = await post(server, '/v1/assess', apiKey, { test: true, address: '0x0000000000000000000000000000000000000001' });
      expect(testMode.status).toBe(200);
      expect((await timedFetch(`${server.url}/healthz`)).status).toBe(200);
      const readyz = await timedFetch(`${server.url}/readyz`);
      expect([readyz.status, readyz.body]).toEqual([
        503,
        { status: 'unavailable', checks: { database: 'failed', redis: 'ok' }, failed: ['database'], sanctions: expect.any(Object) },
      ]);

      // The gate: fail-closed 503 with the server's instructions; failOpen a degraded allow; cached allows unaffected.
      const gateClosed = await gateCall(gateServers[0], unknownToken());
      expect([gateClosed.status, gateClosed.body.error.code, gateClosed.body.infra_reason, gateClosed.body.agent_instructions]).toEqual([
        503,
        'api_error',
        'api_error',
        JSON.stringify(retryWithBackoff(5)),
      ]);
      const gateOpen = await gateCall(gateServers[1], unknownToken());
      expect([gateOpen.status, gateOpen.headers.get('x-gate-degraded'), gateOpen.body.result.degraded]).toEqual([200, 'api_error', true]);
      const gateCached = await gateCall(gateServers[0], cachedToken);
      expect([gateCached.status, gateCached.body.result.degraded]).toEqual([200, false]);

      await end(proxy);
      const recovery = await until(async () => (await assess(server, apiKey)).status === 200);
      report(row, {
        'in flight': first.map((r) => r.ms),
        'while open': whileOpen.map((r) => r.ms),
        'median while open': median(whileOpen),
        'median healthy': median(baseline),
        'test mode': testMode.ms,
        readyz: readyz.ms,
        'gate failOpen off': gateClosed.ms,
        'gate failOpen on': gateOpen.ms,
        'gate cached allow': gateCached.ms,
        recovery,
      });
      expect(max(first)).toBeLessThan(BOUND.anyAnswer);
      expectWhileOpen(whileOpen, baseline);
      expect(testMode.ms).toBeLessThan(BOUND.whileOpenCeiling);
      expect(readyz.ms).toBeLessThan(BOUND.whileOpenCeiling);
      expect(Math.max(gateClosed.ms, gateOpen.ms)).toBeLessThan(BOUND.anyAnswer);
      expect(gateCached.ms).toBeLessThan(BOUND.whileOpenCeiling);
      expect(recovery).toBeGreaterThanOrEqual(0);
      expect(recovery).toBeLessThan(BOUND.recovery);
    } finally {
      closed.gate.close();
      open.gate.close();
      await Promise.all(gateServers.map((g) => g.close()));
    }
  });
});

describe('a metered call whose group commit fails', () => {
  let proxy: TcpProxy;
  let h: Harness;
  let server: Listening;
  let direct: Redis;
  beforeAll(async () => {
    const target = new URL(TEST_DATABASE_URL);
    proxy = await tcpProxy(Number(target.port || 5432), target.hostname);
    h = await createHarness({
      env: { ...TIMEOUT_ENV, DATABASE_URL: Object.assign(new URL(TEST_DATABASE_URL), { host: `127.0.0.1:${proxy.port}` }).toString() },
    });
    server = await listen(meteredApp(h.deps));
    direct = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    direct.disconnect();
    await server.close();
    await h.close();
    await proxy.close();
  });

  it('answers 503 api_error instead of its 200, and the live counter is rebuilt to the durable count', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps, { tier: 'paid', quota: 1000, rps: 1000 });
    const quotaKey = `${h.prefix}quota:${accountId}:${period()}`;
    expect((await post(server, '/t/metered', apiKey, { ok: true })).status).toBe(200);
    // The route itself needs no database (auth is cached, the quota is in Redis): only the commit meets the hang.
    proxy.hang();
    const failed = await Promise.all([1, 2, 3].map(() => post(server, '/t/metered', apiKey, { ok: true })));
    proxy.resume();
    report('group commit fails', { answers: failed.map((r) => r.ms) });
    for (const r of failed) expect([r.status, r.body, r.headers.get('retry-after')]).toEqual([503, API_ERROR, '5']);
    expect(max(failed)).toBeLessThan(BOUND.anyAnswer);

    // A timed-out statement was already on its way: a server that resumes may still commit it, so the failed
    // calls may be counted (never fewer than the 200s). The next call rebuilds the live counter from it.
    await until(async () => !h.deps.circuits.postgres!.isOpen);
    await sleep(100);
    const next = await post(server, '/t/metered', apiKey, { ok: true });
    expect(next.status).toBe(200);
    const durable = await h.deps.repos.usage.get({ accountId, period: period() });
    expect(durable).toBeGreaterThanOrEqual(2);
    expect(durable).toBeLessThanOrEqual(5);
    expect(Number(next.headers.get('x-quota-used'))).toBe(durable);
    expect(Number(await direct.get(quotaKey))).toBe(durable);
  });
});

describe('app instance SIGKILLed right after N metered 200s', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    killStrayServers();
    await h.close();
  });

  it('leaves exactly N audit rows and N counted calls', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps, { tier: 'paid', quota: 100_000, rps: 100_000 });
    const port = await freePort();
    const server = startServer(
      baseEnv({
        DATABASE_URL: TEST_DATABASE_URL,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: h.prefix,
        SERVER_SECRET: TEST_SERVER_SECRET,
        PII_ENCRYPTION_KEY: TEST_PII_KEY,
        DATA_DIR: path.join(os.tmpdir(), `kya-sigkill-${crypto.randomBytes(4).toString('hex')}`),
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      }),
    );
    await server.waitFor(/kya identity server listening/);
    const base = { url: `http://127.0.0.1:${port}`, close: async () => undefined };
    const assessCalls = 40;
    const sessionCalls = 10;
    const answers: Timed[] = [];
    for (let wave = 0; wave < 4; wave++) {
      const calls = Array.from({ length: assessCalls / 4 }, () => assess(base, apiKey));
      if (wave === 3) calls.push(...Array.from({ length: sessionCalls }, () => post(base, '/v1/sessions', apiKey, { product_name: 'Premium API' })));
      answers.push(...(await Promise.all(calls)));
    }
    server.kill('SIGKILL');
    await server.exited;
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));

    const audit = Number((await h.deps.db('assess_audit').where({ account_id: accountId }).count({ n: '*' }))[0].n);
    const counted = await h.deps.repos.usage.get({ accountId, period: period() });
    report('instance SIGKILLed', { 'max answer': max(answers) });
    expect(audit).toBe(assessCalls);
    expect(counted).toBe(assessCalls + sessionCalls);
  });
});

describe('FLUSHALL with two instances serving', () => {
  let redis: PrivateRedis;
  let a: Harness;
  let b: Harness;
  let servers: Listening[];
  let direct: Redis;
  beforeAll(async () => {
    redis = await privateRedis();
    // A wide group-commit window keeps calls in flight (counted in Redis, not yet committed) when the flush lands.
    const env = { ...TIMEOUT_ENV, REDIS_URL: redis.url, GROUP_COMMIT_MS: '25' };
    a = await createHarness({ env });
    b = await createHarness({ env, redisPrefix: a.prefix });
    servers = [await listen(meteredApp(a.deps)), await listen(meteredApp(b.deps))];
    direct = new Redis(redis.url);
  });
  afterAll(async () => {
    direct.disconnect();
    await Promise.all(servers.map((s) => s.close()));
    await a.close();
    await b.close();
    await redis.close();
  });

  it('leaves the live counter exactly equal to the durable count', async () => {
    const { accountId, apiKey } = await createMerchant(a.deps, { tier: 'paid', quota: 100_000, rps: 100_000 });
    const quotaKey = `${a.prefix}quota:${accountId}:${period()}`;
    const call = (i: number) => post(servers[i % 2], '/t/metered', apiKey, { ok: true });
    const pending = () => a.deps.services.meteredRecords.pending + b.deps.services.meteredRecords.pending;
    let ok = 0;
    for (let wave = 0; wave < 6; wave++) {
      const calls = Array.from({ length: 10 }, (_, i) => call(i));
      if (wave % 2 === 1) {
        // Flush while calls are counted in Redis but not yet committed, then keep calling: the first calls after
        // the flush rebuild the counter from a durable count that misses those in-flight calls.
        const until = Date.now() + 2000;
        while (pending() === 0 && Date.now() < until) await new Promise((r) => setImmediate(r));
        expect(pending()).toBeGreaterThan(0);
        await direct.flushall();
        calls.push(...Array.from({ length: 10 }, (_, i) => call(i)));
      }
      ok += (await Promise.all(calls)).filter((r) => r.status === 200).length;
    }
    // One more call on each instance after the last flush, so both rebuild paths have run.
    for (const s of servers) ok += (await post(s, '/t/metered', apiKey, { ok: true })).status === 200 ? 1 : 0;
    await sleep(100); // the last batches' reconciles are sent after their commit
    const durable = await a.deps.repos.usage.get({ accountId, period: period() });
    expect(ok).toBe(92);
    expect(durable).toBe(ok);
    expect(Number(await direct.get(quotaKey))).toBe(ok);
  });

  it('stays exact whichever way a flush races a call in flight: commit after the rebuild, before it, or a refund', async () => {
    const { accountId } = await createMerchant(a.deps, { tier: 'paid', quota: 100_000 });
    const key = `${a.prefix}quota:${accountId}:${period()}`;
    const [qa, qb] = [a.deps.services.quota, b.deps.services.quota];
    const durable = () => a.deps.repos.usage.get({ accountId, period: period() });
    await (await qa.reserve(accountId, 100_000)).settle(200);

    // Counted on A, flushed, the counter rebuilt on B from a durable count without it, then committed.
    const late = await qa.reserve(accountId, 100_000);
    await direct.flushall();
    const rebuilt = await qb.reserve(accountId, 100_000);
    expect(rebuilt.state.used).toBe(2); // durable 1 + this call: the in-flight call is not in it yet
    await late.settle(200);
    await rebuilt.settle(200);
    await sleep(50); // reconcile is sent after the commit
    expect([Number(await direct.get(key)), await durable()]).toEqual([3, 3]);

    // Counted on A, flushed, committed, then the counter rebuilt on B: the commit is in the durable count once.
    const early = await qa.reserve(accountId, 100_000);
    await direct.flushall();
    await early.settle(200);
    const after = await qb.reserve(accountId, 100_000);
    expect(after.state.used).toBe(5);
    await after.settle(200);
    await sleep(50);
    expect([Number(await direct.get(key)), await durable()]).toEqual([5, 5]);

    // Counted on A, flushed, rebuilt on B, then refunded: the refund must not take from the new counter.
    const refunded = await qa.reserve(accountId, 100_000);
    await direct.flushall();
    const next = await qb.reserve(accountId, 100_000);
    await refunded.settle(400);
    await next.settle(200);
    await sleep(50);
    expect([Number(await direct.get(key)), await durable()]).toEqual([6, 6]);
  });
});
