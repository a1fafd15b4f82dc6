// Fail-open forgives infrastructure only. Degraded passes (always marked): nothing listening, a server that
// hangs, a real identity server answering 503 (its Postgres is gone), quota exhaustion. Denied exactly as with
// failOpen off: no identity, an unknown or revoked credential, an unproven wallet, a policy denial, a
// per-second rate limit, and misconfiguration.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Wallet } from 'ethers';
import { createMerchant, resetTables } from '../support/harness';
import { freePort, hungServer, type Closable } from '../support/net';
import { ASSESS_TABLES, createOperator, evmAddress, claimWallet, mintCredential } from '../assess/seed';
import { signEip3009, v2Header } from './payments';
import { shop, startIdentityServer, type IdentityServer, type Shop } from './support';

/** A wallet identity with its proof: a payment the wallet signed itself. */
async function provenWallet(): Promise<{ address: string; headers: Record<string, string> }> {
  const wallet = Wallet.createRandom();
  return { address: wallet.address.toLowerCase(), headers: { 'X-Wallet-Address': wallet.address, 'PAYMENT-SIGNATURE': v2Header(await signEip3009(wallet)) } };
}
const someToken = () => 'opc_' + Math.random().toString(36).slice(2).padEnd(40, 'x');

/** The gate's own retry advice; its first wait is the Retry-After it sends. */
const retryAdvice = (wait: string) => ({
  action: 'retry_with_backoff',
  steps: [
    `Wait ${wait}, then retry the same request.`,
    'Double the wait after each failure, up to 30 seconds.',
    'If it still fails after 5 minutes, tell the user the merchant cannot verify identity right now.',
  ],
  user_message: 'The merchant cannot check identity right now. Retrying shortly.',
});
const RETRY_WITH_BACKOFF = retryAdvice('5 seconds');

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

  it('passes a proven wallet degraded with infra_reason network_timeout and the X-Gate-Degraded header under failOpen', async () => {
    const { app } = make({ baseUrl, failOpen: true, policy: { requireKyc: true } });
    const wallet = await provenWallet();
    const res = await request(app).post('/paid').set(wallet.headers);
    expect(res.status).toBe(200);
    expect(res.headers['x-gate-degraded']).toBe('network_timeout');
    expect(res.body.result).toMatchObject({ decision: 'allow', degraded: true, infra_reason: 'network_timeout', assess: null, denial: null });
  });

  it('always marks a degraded pass, under the header name the merchant chose', async () => {
    const { app } = make({ baseUrl, failOpen: true, degradedHeader: 'X-Identity-Degraded' });
    const res = await request(app).post('/paid').set('X-Operator-Token', someToken());
    expect(res.status).toBe(200);
    expect(res.headers['x-identity-degraded']).toBe('network_timeout');
  });

  it('denies with 503 api_error and retry instructions (JSON-encoded) when failOpen is off', async () => {
    const { app } = make({ baseUrl });
    const res = await request(app).post('/paid').set('X-Operator-Token', someToken());
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toEqual({
      error: { code: 'api_error', message: 'The identity service did not answer in time.' },
      decision: 'deny',
      reasons: ['api_error'],
      infra_reason: 'network_timeout',
      agent_instructions: JSON.stringify(RETRY_WITH_BACKOFF),
    });
  });

  it('denies a request without identity, and an unproven wallet, under failOpen exactly as without it', async () => {
    for (const failOpen of [true, false]) {
      const { app } = make({ baseUrl, failOpen, policy: { requireKyc: true } });
      const anonymous = await request(app).post('/paid');
      expect(anonymous.status).toBe(403);
      expect(anonymous.body.error.code).toBe('identity_required');
      expect(anonymous.headers['x-gate-degraded']).toBeUndefined();
      const unproven = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
      expect(unproven.status).toBe(403);
      expect(unproven.body.error.code).toBe('wallet_auth_requires_wallet_signing');
    }
  });
});

describe('identity server answering 503 with its own Retry-After and no instructions', () => {
  let server: http.Server;
  let baseUrl: string;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '12' });
      res.end(JSON.stringify({ error: { code: 'api_error', message: 'down for maintenance' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('tells the agent to wait what Retry-After says, in the header and in the instructions alike', async () => {
    const { app } = make({ baseUrl });
    const res = await request(app).post('/paid').set('X-Operator-Token', someToken());
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('12');
    expect(res.body).toEqual({
      error: { code: 'api_error', message: 'The identity service is temporarily unavailable.' },
      decision: 'deny',
      reasons: ['api_error'],
      infra_reason: 'api_error',
      agent_instructions: JSON.stringify(retryAdvice('12 seconds')),
    });
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
    const res = await request(app)
      .post('/paid')
      .set('X-Operator-Token', 'opc_' + 'a'.repeat(40));
    expect(res.status).toBe(200);
    expect(res.headers['x-gate-degraded']).toBe('network_timeout');
    expect(res.body.result).toMatchObject({ degraded: true, infra_reason: 'network_timeout' });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('denies 503 after timeoutMs when failOpen is off', async () => {
    const { app } = make({ baseUrl: `http://127.0.0.1:${hung.port}`, timeoutMs: 200 });
    const res = await request(app)
      .post('/paid')
      .set((await provenWallet()).headers);
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
    const res = await request(closed.app).post('/paid').set('X-Operator-Token', someToken());
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('api_error');
    expect(res.body.infra_reason).toBe('api_error');
    expect(res.body.agent_instructions).toBe(
      JSON.stringify({
        action: 'retry_with_backoff',
        steps: [
          'Wait 5 seconds, then retry the same request.',
          'Double the wait after each failure, up to 30 seconds.',
          'If it still fails after 5 minutes, tell the user the identity service is unavailable.',
        ],
        user_message: 'The identity service is temporarily unavailable. Retrying shortly.',
      }),
    );
    const open = make({ baseUrl: id.baseUrl, failOpen: true });
    const degraded = await request(open.app)
      .post('/paid')
      .set((await provenWallet()).headers);
    expect(degraded.status).toBe(200);
    expect(degraded.headers['x-gate-degraded']).toBe('api_error');
    expect(degraded.body.result).toMatchObject({ degraded: true, infra_reason: 'api_error' });
  });
});

describe('quota exhaustion and policy denials on a working server', () => {
  let id: IdentityServer;
  beforeAll(async () => {
    id = await startIdentityServer({ tier: 'free', quota: 1 });
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
  });
  afterAll(() => id.close());

  it('never turns a policy denial, an unknown or a revoked credential into an allow under failOpen', async () => {
    const { apiKey } = await createMerchant(id.h.deps, { tier: 'enterprise' });
    const { app } = make({ baseUrl: id.baseUrl, apiKey, failOpen: true, policy: { requireKyc: true } });
    const policy = await request(app)
      .post('/paid')
      .set((await provenWallet()).headers);
    expect(policy.status).toBe(403);
    expect(policy.body.error.code).toBe('kyc_required');
    const unknown = await request(app)
      .post('/paid')
      .set('X-Operator-Token', 'opc_' + 'q'.repeat(40));
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('invalid_credential');
    const op = await createOperator(id.h.deps);
    const { token, id: credentialId } = await mintCredential(id.h.deps, op);
    await id.h.deps.db('credentials').where({ id: credentialId }).update({ revoked_at: new Date() });
    const revoked = await request(app).post('/paid').set('X-Operator-Token', token);
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe('token_expired');
    for (const res of [policy, unknown, revoked]) {
      expect(res.headers['x-gate-degraded']).toBeUndefined();
      expect(res.body).not.toHaveProperty('infra_reason');
    }
  });

  it("does not forgive a per-second rate limit (the merchant's own traffic, not an outage)", async () => {
    const { apiKey } = await createMerchant(id.h.deps, { tier: 'paid', rps: 1 });
    const { app } = make({ baseUrl: id.baseUrl, apiKey, failOpen: true, timeoutMs: 500 });
    const op = await createOperator(id.h.deps);
    // Three identities, so the three requests are three calls (one identity would share one in-flight call).
    const tokens = await Promise.all([1, 2, 3].map(() => mintCredential(id.h.deps, op).then((c) => c.token)));
    const answers = await Promise.all(tokens.map((token) => request(app).post('/paid').set('X-Operator-Token', token)));
    const limited = answers.filter((r) => r.status !== 200);
    expect(limited.length).toBeGreaterThan(0);
    for (const res of limited) {
      expect(res.status).toBe(503);
      expect(res.headers['x-gate-degraded']).toBeUndefined();
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.body).toEqual({
        error: { code: 'api_error', message: 'The merchant is checking identities faster than its plan allows.' },
        decision: 'deny',
        reasons: ['api_error'],
        infra_reason: 'api_error',
        agent_instructions: JSON.stringify(retryAdvice(res.headers['retry-after'] === '1' ? 'one second' : `${res.headers['retry-after']} seconds`)),
      });
    }
  });

  it('degrades with quota_exceeded under failOpen once the quota is spent, and denies 503 contact_merchant without it', async () => {
    const op = await createOperator(id.h.deps);
    const wallet = await provenWallet();
    await claimWallet(id.h.deps, op, wallet.address);
    const open = make({ baseUrl: id.baseUrl, apiKey: id.apiKey, failOpen: true });
    const spend = await request(open.app)
      .post('/paid')
      .set((await provenWallet()).headers);
    expect(spend.status).toBe(200);
    expect(spend.body.result.degraded).toBe(false);
    const res = await request(open.app).post('/paid').set(wallet.headers);
    expect(res.status).toBe(200);
    expect(res.headers['x-gate-degraded']).toBe('quota_exceeded');
    expect(res.body.result).toMatchObject({ degraded: true, infra_reason: 'quota_exceeded' });
    expect(res.body.result.quota).toMatchObject({ limit: 1 });
    const closed = make({ baseUrl: id.baseUrl, apiKey: id.apiKey });
    const denied = await request(closed.app).post('/paid').set(wallet.headers);
    expect(denied.status).toBe(503);
    expect(denied.headers['retry-after']).toBeUndefined();
    expect(denied.body).toEqual({
      error: { code: 'api_error', message: "The merchant's identity-check quota is exhausted." },
      decision: 'deny',
      reasons: ['api_error'],
      infra_reason: 'quota_exceeded',
      agent_instructions: JSON.stringify(CONTACT_MERCHANT),
    });
  });

  it('stays closed on a rejected API key even under failOpen (misconfiguration is not an outage)', async () => {
    const errors: unknown[] = [];
    const { app } = make({
      baseUrl: id.baseUrl,
      apiKey: 'as_live_' + 'Z'.repeat(43),
      failOpen: true,
      logger: { debug() {}, warn() {}, error: (o: unknown) => errors.push(o) },
    });
    const res = await request(app)
      .post('/paid')
      .set((await provenWallet()).headers);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: { code: 'api_error', message: "The merchant's identity check is misconfigured." },
      decision: 'deny',
      reasons: ['api_error'],
      agent_instructions: JSON.stringify(CONTACT_MERCHANT),
    });
    expect(errors).toEqual([{ status: 401, code: 'signup_required' }]);
  });
});
