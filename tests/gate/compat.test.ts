// Options written for other agent-identity gates work unchanged: extractIdentity returning {address} or
// {operatorToken}, onDenied(req, res, reason) with a reason object (or a returned Response on web adapters),
// and createSessionOnMissing with its own apiKey/baseUrl.
import request from 'supertest';
import { Hono } from 'hono';
import { resetTables } from '../support/harness';
import { freePort } from '../support/net';
import { Wallet } from 'ethers';
import { ASSESS_TABLES, claimWallet, createOperator, mintCredential } from '../assess/seed';
import { signEip3009, v2Header } from './payments';
import { GateOptionsError, createGate } from '@kya/gate';
import { kya } from '@kya/gate/hono';
import { shop, startIdentityServer, type IdentityServer, type Shop } from './support';

describe('options from other gates', () => {
  let id: IdentityServer;
  const shops: Shop[] = [];
  const make = (extra: Record<string, unknown>) => {
    const s = shop({ apiKey: id.apiKey, baseUrl: id.baseUrl, ...extra });
    shops.push(s);
    return s;
  };

  beforeAll(async () => {
    id = await startIdentityServer();
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
  });
  afterAll(async () => {
    shops.forEach((s) => s.gate.close());
    await id.close();
  });

  it('takes the wallet from extractIdentity returning {address}, and the token from {operatorToken}', async () => {
    const op = await createOperator(id.h.deps);
    const payer = Wallet.createRandom();
    const wallet = payer.address.toLowerCase();
    await claimWallet(id.h.deps, op, wallet);
    const byAddress = make({ extractIdentity: (req: any) => ({ address: req.query.wallet }) });
    // A wallet named this way needs the same proof as X-Wallet-Address: here, the payment it signed.
    const res = await request(byAddress.app)
      .post(`/paid?wallet=${wallet}`)
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(payer)))
      .expect(200);
    expect(res.body.result.identity).toMatchObject({ method: 'wallet', wallet_address: wallet, wallet_network: 'evm' });
    expect((await request(byAddress.app).post(`/paid?wallet=${wallet}`)).status).toBe(403);

    const { token } = await mintCredential(id.h.deps, op);
    const byToken = make({ extractIdentity: (req: any) => ({ operatorToken: req.get('authorization')?.replace(/^Bearer /, '') }) });
    const ok = await request(byToken.app).post('/paid').set('Authorization', `Bearer ${token}`).expect(200);
    expect(ok.body.result.operator_handle).toMatch(/^oph_/);
  });

  it('hands onDenied(req, res, reason) a reason object with code, message, reasons and the session fields', async () => {
    const reasons: any[] = [];
    const s = make({
      createSessionOnMissing: { context: 'compat' },
      onDenied: (_req: any, res: any, reason: any) => {
        reasons.push(reason);
        res.status(reason.status).json({ custom: true, code: reason.code, verify: reason.verify_url });
      },
    });
    const res = await request(s.app).post('/paid').expect(403);
    const [reason] = reasons;
    expect(reason).toMatchObject({
      status: 403,
      code: 'identity_required',
      message: expect.stringContaining('requires a verified operator'),
      reasons: ['identity_required'],
      session_id: expect.any(String),
      poll_secret: expect.any(String),
      verify_url: expect.any(String),
      poll_url: expect.any(String),
      headers: {},
    });
    expect(reason.body).toMatchObject({ error: { code: 'identity_required' }, session_id: reason.session_id });
    expect(res.body).toEqual({ custom: true, code: 'identity_required', verify: reason.verify_url });
  });

  it('answers with the Response onDenied returns on a web adapter (Hono)', async () => {
    const gate = kya({ apiKey: id.apiKey, baseUrl: id.baseUrl, onDenied: (_c, _same, reason) => Response.json({ mine: reason.code }, { status: 451 }) });
    const app = new Hono();
    app.post('/paid', gate, (c) => c.json({ ok: true }));
    const res = await app.request('/paid', { method: 'POST' });
    expect(res.status).toBe(451);
    expect(await res.json()).toEqual({ mine: 'identity_required' });
    gate.close();
  });

  it('mints sessions with createSessionOnMissing.apiKey/baseUrl when they differ from the gate', async () => {
    // The gate's own server is dead: the session can only come from the one named in createSessionOnMissing.
    const s = shop({
      apiKey: 'as_live_' + 'D'.repeat(43),
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      createSessionOnMissing: { apiKey: id.apiKey, baseUrl: id.baseUrl, context: 'own-key' },
    });
    shops.push(s);
    const res = await request(s.app).post('/paid').expect(403);
    expect(res.body).toMatchObject({ error: { code: 'identity_required' }, session_id: expect.any(String) });
    expect(await id.h.deps.db('sessions').where({ id: res.body.session_id }).first()).toMatchObject({ context: 'own-key', merchant_account_id: id.merchantId });
  });

  it('names a bad createSessionOnMissing.baseUrl or apiKey at mount time', () => {
    expect(() => createGate({ apiKey: id.apiKey, baseUrl: id.baseUrl, createSessionOnMissing: { baseUrl: 'not a url' } })).toThrow(
      new GateOptionsError('createSessionOnMissing.baseUrl must be an absolute http(s) URL (got "not a url")'),
    );
    expect(() => createGate({ apiKey: id.apiKey, baseUrl: id.baseUrl, createSessionOnMissing: { apiKey: 'as live' } })).toThrow(
      new GateOptionsError('createSessionOnMissing.apiKey must be a non-empty API key without whitespace'),
    );
  });
});
