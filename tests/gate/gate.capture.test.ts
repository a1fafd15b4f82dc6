// Wallet capture after a successful paid request: fires after a 2xx only, never on a failed handler, never for
// wallet-authenticated requests, manual mode through captureWallet(), and a dead server never hurts the response.
import request from 'supertest';
import express from 'express';
import { Wallet } from 'ethers';
import { resetTables } from '../support/harness';
import { freePort } from '../support/net';
import { ASSESS_TABLES, claimWallet, createOperator, mintCredential } from '../assess/seed';
import { createGate, captureWallet, getGateResult } from '../../middleware';
import { signEip3009, v2Header } from './payments';
import { eventually, sanctionsFile, shop, startIdentityServer, type IdentityServer, type Shop } from './support';

describe('wallet capture', () => {
  let id: IdentityServer;
  let operator: string;
  const shops: Shop[] = [];
  const make = (extra: Record<string, unknown> = {}) => {
    const s = shop({ apiKey: id.apiKey, baseUrl: id.baseUrl, ...extra });
    shops.push(s);
    return s;
  };
  const captures = (wallet: string) => id.h.deps.db('wallet_captures').where({ wallet_address: wallet.toLowerCase() });

  beforeAll(async () => {
    id = await startIdentityServer({ env: { SANCTIONS_WALLET_SOURCE: sanctionsFile([]) } });
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
    operator = await createOperator(id.h.deps);
  });
  afterAll(async () => {
    shops.forEach((s) => s.gate.close());
    await id.close();
  });

  it('reports the recovered signer with the payment idempotency key after a 2xx', async () => {
    const { token, id: credentialId } = await mintCredential(id.h.deps, operator);
    const payer = Wallet.createRandom();
    const payment = await signEip3009(payer);
    const { app } = make({ policy: { requireKyc: true } });
    await request(app).post('/paid').set('X-Operator-Token', token).set('PAYMENT-SIGNATURE', v2Header(payment)).expect(200);
    const [row] = await eventually(async () => {
      const rows = await captures(payer.address);
      return rows.length > 0 ? rows : null;
    });
    expect(row).toMatchObject({
      credential_id: credentialId,
      account_id: operator,
      network: 'evm',
      transaction_count: 1,
      last_idempotency_key: `x402:eip155:84532:${payment.authorization.nonce}`,
    });
    // The same payment replayed is deduplicated by its idempotency key.
    await request(app).post('/paid').set('X-Operator-Token', token).set('PAYMENT-SIGNATURE', v2Header(payment)).expect(200);
    await eventually(async () => id.count('/v1/credentials/wallets') >= 2);
    await new Promise((r) => setTimeout(r, 100));
    const [again] = await captures(payer.address);
    expect(again.transaction_count).toBe(1);
  });

  /**
   * Waits until a capture made after the request under test has landed: a stray capture from that request would
   * have been sent first, so by then it would have landed too.
   */
  async function laterCaptureLanded(app: express.Express, token: string): Promise<void> {
    const marker = Wallet.createRandom();
    await request(app)
      .post('/paid')
      .set('X-Operator-Token', token)
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(marker)))
      .expect(200);
    await eventually(async () => (await captures(marker.address)).length > 0);
  }

  it('does not capture when the handler answers 500', async () => {
    const { token } = await mintCredential(id.h.deps, operator);
    const payer = Wallet.createRandom();
    const { app } = make({ policy: { requireKyc: true } });
    const before = id.count('/v1/credentials/wallets');
    await request(app)
      .post('/fail')
      .set('X-Operator-Token', token)
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(payer)))
      .expect(500);
    await laterCaptureLanded(app, token);
    expect(id.count('/v1/credentials/wallets')).toBe(before + 1);
    expect(await captures(payer.address)).toHaveLength(0);
  });

  it('does nothing for wallet-authenticated requests', async () => {
    const claimed = Wallet.createRandom();
    await claimWallet(id.h.deps, operator, claimed.address.toLowerCase());
    const { app } = make({ policy: { requireKyc: true } });
    const before = id.count('/v1/credentials/wallets');
    await request(app)
      .post('/paid')
      .set('X-Wallet-Address', claimed.address)
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(claimed)))
      .expect(200);
    await laterCaptureLanded(app, (await mintCredential(id.h.deps, operator)).token);
    expect(id.count('/v1/credentials/wallets')).toBe(before + 1);
  });

  it("captures only through captureWallet() when captureOn is 'manual'", async () => {
    const { token } = await mintCredential(id.h.deps, operator);
    const payer = Wallet.createRandom();
    const gate = createGate({ apiKey: id.apiKey, baseUrl: id.baseUrl, captureOn: 'manual' });
    const outcomes: unknown[] = [];
    const app = express();
    app.post('/settle', gate, async (req, res) => {
      const signer = getGateResult(req)!.signer!.signer;
      outcomes.push(await captureWallet(req, { walletAddress: signer.address!, network: signer.network, idempotencyKey: 'settle-1' }));
      outcomes.push(await captureWallet(req, { walletAddress: 'not-a-wallet', network: 'evm' }));
      res.json({ ok: true });
    });
    const before = id.count('/v1/credentials/wallets');
    await request(app)
      .post('/settle')
      .set('X-Operator-Token', token)
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(payer)))
      .expect(200);
    gate.close();
    expect(outcomes).toEqual([
      { status: 'captured', first_seen: true, deduped: false },
      { status: 'skipped', reason: 'invalid_wallet' },
    ]);
    expect(id.count('/v1/credentials/wallets') - before).toBe(1);
    expect((await captures(payer.address))[0].last_idempotency_key).toBe('settle-1');
  });

  it('answers the buyer normally when the capture call fails', async () => {
    const { token } = await mintCredential(id.h.deps, operator);
    const logged: unknown[] = [];
    // Nothing listens: the request passes degraded (failOpen) and the capture after its 200 fails.
    const dead = createGate({
      apiKey: id.apiKey,
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      failOpen: true,
      logger: { debug: (o) => logged.push(o), warn() {}, error() {} },
    });
    const app = express();
    app.post('/paid', dead, (_req, res) => void res.json({ ok: true }));
    const res = await request(app)
      .post('/paid')
      .set('X-Operator-Token', token)
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(Wallet.createRandom())));
    expect(res.status).toBe(200);
    await eventually(async () => logged.length > 0);
    expect(logged[0]).toEqual({ reason: 'unreachable', network: 'evm' });
    dead.close();
  });

  it('resolves captureWallet with not_gated for a request the gate never saw', async () => {
    const req = {} as express.Request;
    await expect(captureWallet(req, { walletAddress: Wallet.createRandom().address, network: 'evm' })).resolves.toEqual({
      status: 'skipped',
      reason: 'not_gated',
    });
  });
});
