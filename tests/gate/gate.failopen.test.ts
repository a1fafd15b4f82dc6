// Fail-open degraded mode and its fail-closed counterpart: nothing listening, a server that hangs, a real
// identity server answering 503 (its Postgres is gone), quota exhaustion, and misconfiguration.
import request from 'supertest';
import { resetTables } from '../support/harness';
import { freePort, hungServer, type Closable } from '../support/net';
import { ASSESS_TABLES, createOperator, evmAddress, claimWallet } from '../assess/seed';
import { shop, startIdentityServer, type IdentityServer, type Shop } from './support';

const RETRY_WITH_BACKOFF = {
  action: 'retry_with_backoff',
  steps: [
    'Wait 5 seconds, then retry the same request.',
    'Double the wait after each failure, up to 30 seconds.',
    'If it still fails after 5 minutes, tell the user the merchant cannot verify identity right now.',
  ],
  user_message: 'The merchant cannot check identity right now. Retrying shortly.',
};

const CONTACT_MERCHANT = {
  action: 'contact_merchant',
  steps: ['Do not retry: the problem is on the merchant side.', 'Tell the user the merchant cannot accept agent purchases right now.'],
  user_message: 'This merchant cannot verify agent identity at the moment. Please contact the merchant.',
};

const KEY = 'as_live_' + 'A'.repeat(43);
const shops: Shop[] = [];
function make(options: Record<string, unknown>) {
  const s = shop({ apiKey: KEY, ...options } as any);
  shops.push(s);
  return s;
}
afterAll(() => shops.forEach((s) => s.gate.close()));

describe('identity server unreachable (nothing listening)', () => {
  let baseUrl: string;
  beforeAll(async () => {
    baseUrl = `http://127.0.0.1:${await freePort()}`;
  });

  it('passes degraded with infra_reason network_timeout and the configured header under failOpen', async () => {
    const { app } = make({ baseUrl, failOpen: true, degradedHeader: 'X-Gate-Degraded', policy: { requireKyc: true } });
    const res = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(200);
    expect(res.headers['x-gate-degraded']).toBe('network_timeout');
    expect(res.body.result).toMatchObject({ decision: 'allow', degraded: true, infra_reason: 'network_timeout', assess: null, denial: null });
  });

  it('sends no degraded header unless configured', async () => {
    const { app } = make({ baseUrl, failOpen: true });
    const res = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(200);
    expect(res.headers['x-gate-degraded']).toBeUndefined();
  });

  it('denies with 503 api_error and retry instructions when failOpen is off', async () => {
    const { app } = make({ baseUrl });
    const res = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toEqual({
      error: { code: 'api_error', message: 'The identity service did not answer in time.' },
      decision: 'deny',
      reasons: ['api_error'],
      infra_reason: 'network_timeout',
      agent_instructions: RETRY_WITH_BACKOFF,
    });
  });

  it('lets a request without identity through undegraded under failOpen (no call was needed)', async () => {
    const { app } = make({ baseUrl, failOpen: true, policy: { requireKyc: true } });
    const res = await request(app).post('/paid');
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({ decision: 'allow', degraded: false, infra_reason: null, identity: { method: null } });
  });
});

describe('identity server that accepts and never answers', () => {
  let hung: Closable;
  beforeAll(async () => {
    hung = await hungServer();
  });
  afterAll(() => hung.close());

  it('gives up after timeoutMs and passes degraded under failOpen', async () => {
    const { app } = make({ baseUrl: `http://127.0.0.1:${hung.port}`, failOpen: true, timeoutMs: 200 });
    const started = Date.now();
    const res = await request(app).post('/paid').set('X-Operator-Token', 'opc_' + 'a'.repeat(40));
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({ degraded: true, infra_reason: 'network_timeout' });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('denies 503 after timeoutMs when failOpen is off', async () => {
    const { app } = make({ baseUrl: `http://127.0.0.1:${hung.port}`, timeoutMs: 200 });
    const res = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(503);
    expect(res.body.infra_reason).toBe('network_timeout');
  });
});

describe('real identity server answering 503 (its database is down)', () => {
  let id: IdentityServer;
  beforeAll(async () => {
    // The server cannot even check the API key without Postgres: every call is its 503 api_error.
    id = await startIdentityServer({ merchant: false, env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/kya` } });
  });
  afterAll(() => id.close());

  it('passes the server’s agent_instructions through on a fail-closed 503, and degrades under failOpen', async () => {
    const closed = make({ baseUrl: id.baseUrl });
    const res = await request(closed.app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('api_error');
    expect(res.body.infra_reason).toBe('api_error');
    expect(res.body.agent_instructions).toEqual({
      action: 'retry_with_backoff',
      steps: [
        'Wait 5 seconds, then retry the same request.',
        'Double the wait after each failure, up to 30 seconds.',
        'If it still fails after 5 minutes, tell the user the identity service is unavailable.',
      ],
      user_message: 'The identity service is temporarily unavailable. Retrying shortly.',
    });
    const open = make({ baseUrl: id.baseUrl, failOpen: true });
    const degraded = await request(open.app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(degraded.status).toBe(200);
    expect(degraded.body.result).toMatchObject({ degraded: true, infra_reason: 'api_error' });
  });
});

describe('quota exhaustion and policy denials on a working server', () => {
  let id: IdentityServer;
  beforeAll(async () => {
    id = await startIdentityServer({ tier: 'free', quota: 1 });
    await resetTables(id.h.deps, ASSESS_TABLES.filter((t) => t !== 'accounts'));
  });
  afterAll(() => id.close());

  it('never turns a policy denial into an allow under failOpen', async () => {
    const { app } = make({ baseUrl: id.baseUrl, apiKey: id.apiKey, failOpen: true, policy: { requireKyc: true } });
    const res = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('kyc_required');
  });

  it('degrades with quota_exceeded under failOpen once the quota is spent, and denies 503 contact_merchant without it', async () => {
    const op = await createOperator(id.h.deps);
    const wallet = evmAddress();
    await claimWallet(id.h.deps, op, wallet);
    const open = make({ baseUrl: id.baseUrl, apiKey: id.apiKey, failOpen: true });
    const res = await request(open.app).post('/paid').set('X-Wallet-Address', wallet);
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({ degraded: true, infra_reason: 'quota_exceeded' });
    expect(res.body.result.quota).toMatchObject({ limit: 1 });
    const closed = make({ baseUrl: id.baseUrl, apiKey: id.apiKey });
    const denied = await request(closed.app).post('/paid').set('X-Wallet-Address', wallet);
    expect(denied.status).toBe(503);
    expect(denied.headers['retry-after']).toBeUndefined();
    expect(denied.body).toEqual({
      error: { code: 'api_error', message: "The merchant's identity-check quota is exhausted." },
      decision: 'deny',
      reasons: ['api_error'],
      infra_reason: 'quota_exceeded',
      agent_instructions: CONTACT_MERCHANT,
    });
  });

  it('stays closed on a rejected API key even under failOpen (misconfiguration is not an outage)', async () => {
    const errors: unknown[] = [];
    const { app } = make({ baseUrl: id.baseUrl, apiKey: 'as_live_' + 'Z'.repeat(43), failOpen: true, logger: { debug() {}, warn() {}, error: (o: unknown) => errors.push(o) } });
    const res = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: { code: 'api_error', message: "The merchant's identity check is misconfigured." },
      decision: 'deny',
      reasons: ['api_error'],
      agent_instructions: CONTACT_MERCHANT,
    });
    expect(errors).toEqual([{ status: 401, code: 'signup_required' }]);
  });
});
