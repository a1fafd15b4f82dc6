// In-flight coalescing, per-signer isolation and cache lifetimes, against a live identity server.
import request from 'supertest';
import { Wallet } from 'ethers';
import { resetTables } from '../support/harness';
import { ASSESS_TABLES, claimWallet, createOperator, evmAddress, mintCredential } from '../assess/seed';
import { signEip3009, v2Header } from './payments';
import { sanctionsFile, shop, startIdentityServer, type IdentityServer, type Shop } from './support';

// The cache tests below are about lifetimes and keys, not wallet proofs: they opt into header-only trust.
const HEADER_TRUST = { trustUnsignedWalletHeader: true };

describe('gate concurrency and cache', () => {
  let id: IdentityServer;
  const shops: Shop[] = [];
  let clock = 0;
  const make = (extra: Record<string, unknown> = {}) => {
    const s = shop({ apiKey: id.apiKey, baseUrl: id.baseUrl, now: () => clock, ...extra });
    shops.push(s);
    return s;
  };

  beforeAll(async () => {
    id = await startIdentityServer({ env: { SANCTIONS_WALLET_SOURCE: sanctionsFile([]) } });
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
  });
  afterAll(async () => {
    shops.forEach((s) => s.gate.close());
    await id.close();
  });
  beforeEach(() => {
    clock += 1_000_000;
  });

  it('makes one assess call for 100 concurrent requests of one identity', async () => {
    const op = await createOperator(id.h.deps);
    const { token } = await mintCredential(id.h.deps, op);
    const { app, seen } = make({ policy: { requireKyc: true } });
    const before = id.count('/v1/assess');
    const responses = await Promise.all(Array.from({ length: 100 }, () => request(app).post('/paid').set('X-Operator-Token', token)));
    expect(responses.map((r) => r.status)).toEqual(Array(100).fill(200));
    expect(id.count('/v1/assess') - before).toBe(1);
    // Every request got its own result object, even though they share one answer.
    expect(new Set(seen.slice(-100)).size).toBe(100);
  });

  it('never lets one request see another request’s signer verdict', async () => {
    const op = await createOperator(id.h.deps);
    const claimed = Wallet.createRandom();
    const sibling = Wallet.createRandom();
    const stranger = Wallet.createRandom();
    await claimWallet(id.h.deps, op, claimed.address.toLowerCase());
    await claimWallet(id.h.deps, op, sibling.address.toLowerCase());
    await claimWallet(id.h.deps, await createOperator(id.h.deps), stranger.address.toLowerCase());
    const { app } = make({ policy: { requireKyc: true } });
    const good = await Promise.all(Array.from({ length: 10 }, () => signEip3009(sibling)));
    const bad = await Promise.all(Array.from({ length: 10 }, () => signEip3009(stranger)));
    const all = await Promise.all([
      ...good.map((p) =>
        request(app)
          .post('/paid')
          .set('X-Wallet-Address', claimed.address)
          .set('PAYMENT-SIGNATURE', v2Header(p))
          .then((r) => ({ r, expected: 200 })),
      ),
      ...bad.map((p) =>
        request(app)
          .post('/paid')
          .set('X-Wallet-Address', claimed.address)
          .set('PAYMENT-SIGNATURE', v2Header(p))
          .then((r) => ({ r, expected: 403 })),
      ),
    ]);
    for (const { r, expected } of all) expect(r.status).toBe(expected);
    for (const { r } of all.filter((x) => x.expected === 200)) expect(r.body.result.signer.signer.address).toBe(sibling.address.toLowerCase());
    for (const { r } of all.filter((x) => x.expected === 403)) expect(r.body.actual_signer).toBe(stranger.address.toLowerCase());
    // Then, from the cache, still each its own verdict.
    const again = await request(app)
      .post('/paid')
      .set('X-Wallet-Address', claimed.address)
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(stranger)));
    expect(again.status).toBe(403);
  });

  it('serves an allow from the cache for cacheSeconds, then asks again', async () => {
    const op = await createOperator(id.h.deps);
    const wallet = evmAddress();
    await claimWallet(id.h.deps, op, wallet);
    const { app } = make({ ...HEADER_TRUST, policy: { requireKyc: true }, cacheSeconds: 60 });
    const before = id.count('/v1/assess');
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
    const cached = await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
    expect(cached.body.result.cached).toBe(true);
    expect(id.count('/v1/assess') - before).toBe(1);
    clock += 59_000;
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
    expect(id.count('/v1/assess') - before).toBe(1);
    clock += 2_000;
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
    expect(id.count('/v1/assess') - before).toBe(2);
  });

  it('caches a kyc_required denial for at most 5 s, so a freshly verified operator gets through', async () => {
    const op = await createOperator(id.h.deps, { kyc: 'none' });
    const wallet = evmAddress();
    await claimWallet(id.h.deps, op, wallet);
    const { app } = make({ ...HEADER_TRUST, policy: { requireKyc: true } });
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(403);
    await id.h.deps.db('accounts').where({ id: op }).update({
      kyc_status: 'verified',
      kyc_verified_at: new Date(),
      verification_level: 'kyc_verified',
      jurisdiction: 'US',
      age_bracket: '21+',
      age_verified: true,
      sanctions_status: 'clear',
      sanctions_checked_at: new Date(),
      operator_type: 'individual',
    });
    await id.h.deps.services.identity.changed({ operatorId: op }); // as the verification flow announces it
    clock += 4_000;
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(403); // still the cached denial
    clock += 1_500;
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
  });

  it('keys the cache by chain as well as identity', async () => {
    const op = await createOperator(id.h.deps, { jurisdiction: 'DE' });
    const wallet = evmAddress();
    await claimWallet(id.h.deps, op, wallet);
    const a = make({ ...HEADER_TRUST, policy: { requireKyc: true }, getChain: (req: any) => req.headers['x-chain'] });
    const before = id.count('/v1/assess');
    await request(a.app).post('/paid').set('X-Wallet-Address', wallet).set('X-Chain', 'base').expect(200);
    await request(a.app).post('/paid').set('X-Wallet-Address', wallet).set('X-Chain', 'ethereum').expect(200);
    await request(a.app).post('/paid').set('X-Wallet-Address', wallet).set('X-Chain', 'base').expect(200);
    expect(id.count('/v1/assess') - before).toBe(2);
  });

  it('does not cache when cacheSeconds is 0', async () => {
    const wallet = evmAddress();
    const { app } = make({ ...HEADER_TRUST, cacheSeconds: 0 });
    const before = id.count('/v1/assess');
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
    expect(id.count('/v1/assess') - before).toBe(2);
  });
});
