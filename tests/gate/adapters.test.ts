// The one behaviour suite every framework adapter must pass against a live identity server: identity, wallet
// proof, signer extraction, enforcement, degraded mode, session bootstrap and capture after a 2xx behave the
// same on Express, Hono, Fastify, Next.js (real NextRequest/NextResponse) and Web Fetch.
import { Wallet } from 'ethers';
import { resetTables } from '../support/harness';
import { freePort } from '../support/net';
import { ASSESS_TABLES, claimWallet, createOperator, mintCredential } from '../assess/seed';
import { evmProof } from '../support/siwx';
import { signEip3009, v2Header } from './payments';
import { eventually, sanctionsFile, startIdentityServer, type IdentityServer } from './support';
import { ADAPTERS, type AdapterName, type MountedShop } from './adapters';

describe.each(Object.keys(ADAPTERS) as AdapterName[])('gate behaviour on %s', (adapter) => {
  let id: IdentityServer;
  const shops: MountedShop[] = [];
  const mount = async (extra: Record<string, unknown> = {}, base?: { apiKey: string; baseUrl: string }) => {
    const shop = await ADAPTERS[adapter]({ apiKey: base?.apiKey ?? id.apiKey, baseUrl: base?.baseUrl ?? id.baseUrl, ...extra });
    shops.push(shop);
    return shop;
  };
  const post = (shop: MountedShop, path: string, headers: Record<string, string> = {}) => fetch(`${shop.url}${path}`, { method: 'POST', headers });

  beforeAll(async () => {
    id = await startIdentityServer({ env: { SANCTIONS_WALLET_SOURCE: sanctionsFile([]) } });
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
  });
  afterAll(async () => {
    await Promise.all(shops.map((s) => s.close()));
    await id.close();
  });

  it('allows a verified operator token and hands the verdict to the route the framework way', async () => {
    const { token } = await mintCredential(id.h.deps, await createOperator(id.h.deps));
    const shop = await mount({ policy: { requireKyc: true } });
    const res = await post(shop, '/paid', { 'X-Operator-Token': token });
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body.framework).toMatchObject({
      decision: 'allow',
      degraded: false,
      identity: { method: 'operator_token', wallet_address: null, wallet_network: null },
      denial: null,
    });
    expect(body.framework.operator_handle).toMatch(/^oph_/);
    expect(body.getter).toEqual(body.framework);
    // The Next.js route handler really received a NextRequest.
    if (adapter === 'next') expect(body.isNextRequest).toBe(true);
    expect(JSON.stringify(body)).not.toContain(token);
  });

  it('denies an agent without identity with the whole identity_required body', async () => {
    const shop = await mount();
    const res = await post(shop, '/paid');
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      error: { code: 'identity_required', message: 'This route requires a verified operator: present X-Operator-Token or X-Wallet-Address.' },
      decision: 'deny',
      reasons: ['identity_required'],
      next_steps: {
        action: 'present_identity',
        steps: [
          'Retry with the header X-Operator-Token: <operator credential> from your credential store,',
          'or with X-Wallet-Address: <wallet your operator claimed> and a proof that you control it: a payment signed by that wallet, or a SIGN-IN-WITH-X header.',
          'Without either, ask your operator to verify once and obtain an operator credential.',
        ],
        user_message: 'This merchant requires a verified operator behind the agent.',
      },
    });
  });

  it('recovers the payment signer, and refuses a tampered payment before asking the server', async () => {
    const { token } = await mintCredential(id.h.deps, await createOperator(id.h.deps));
    const payer = Wallet.createRandom();
    const shop = await mount();
    const payment = await signEip3009(payer);
    const ok = await post(shop, '/paid', { 'X-Operator-Token': token, 'PAYMENT-SIGNATURE': v2Header(payment) });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).framework.signer.signer).toMatchObject({
      rail: 'x402',
      address: payer.address.toLowerCase(),
      verified: true,
      proof: 'eip3009_ecdsa',
    });

    const before = id.count('/v1/assess');
    const forged = await post(shop, '/paid', {
      'X-Operator-Token': token,
      'PAYMENT-SIGNATURE': v2Header({ ...payment, authorization: { ...payment.authorization, value: '99999999' } }),
    });
    expect(forged.status).toBe(400);
    expect(await forged.json()).toEqual({
      error: { code: 'payment_signature_invalid', message: "PAYMENT-SIGNATURE signature was not made by authorization.from under the merchant's asset domain" },
      decision: 'deny',
      reasons: ['payment_signature_invalid'],
      header: 'PAYMENT-SIGNATURE',
    });
    expect(id.count('/v1/assess')).toBe(before);
  });

  it('needs a proof for a claimed wallet: a challenge naming this route, then a SIGN-IN-WITH-X proof passes', async () => {
    const owner = Wallet.createRandom();
    await claimWallet(id.h.deps, await createOperator(id.h.deps), owner.address.toLowerCase());
    const shop = await mount({ publicOrigin: 'https://shop.example.com' });
    const claim = await post(shop, '/paid?order=7', { 'X-Wallet-Address': owner.address });
    expect(claim.status).toBe(403);
    const denial: any = await claim.json();
    expect(denial.error.code).toBe('wallet_auth_requires_wallet_signing');
    expect(denial.extensions['sign-in-with-x'].info).toMatchObject({ domain: 'shop.example.com', uri: 'https://shop.example.com/paid' });

    const proof = await evmProof(owner as unknown as Parameters<typeof evmProof>[0], { domain: 'shop.example.com', uri: 'https://shop.example.com/paid' });
    const proven = await post(shop, '/paid', { 'X-Wallet-Address': owner.address, 'SIGN-IN-WITH-X': proof.header });
    expect(proven.status).toBe(200);
    expect(((await proven.json()) as any).framework.identity).toMatchObject({
      method: 'wallet',
      wallet_address: owner.address.toLowerCase(),
      proof: 'sign_in_with_x',
    });
  });

  it('enforces the policy: a blocked jurisdiction is a 403 with the server reason', async () => {
    const { token } = await mintCredential(id.h.deps, await createOperator(id.h.deps, { jurisdiction: 'FR' }));
    const shop = await mount({ blockedJurisdictions: ['FR'] });
    const res = await post(shop, '/paid', { 'X-Operator-Token': token });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({
      error: { code: 'jurisdiction_restricted', message: "This merchant does not serve the operator's jurisdiction." },
      decision: 'deny',
      reasons: ['jurisdiction_restricted'],
    });
  });

  it('passes degraded (with the header) when failOpen covers a dead identity server, and answers 503 when it does not', async () => {
    const dead = { apiKey: id.apiKey, baseUrl: `http://127.0.0.1:${await freePort()}` };
    const open = await mount({ failOpen: true, degradedHeader: 'X-Gate-Degraded' }, dead);
    const res = await post(open, '/paid', { 'X-Operator-Token': 'opc_' + 'a'.repeat(40) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gate-degraded')).toBe('network_timeout');
    expect(((await res.json()) as any).framework).toMatchObject({ decision: 'allow', degraded: true, infra_reason: 'network_timeout' });

    const closed = await mount({}, dead);
    const denied = await post(closed, '/paid', { 'X-Operator-Token': 'opc_' + 'a'.repeat(40) });
    expect(denied.status).toBe(503);
    expect(denied.headers.get('retry-after')).toBe('5');
    expect(await denied.json()).toMatchObject({
      error: { code: 'api_error', message: 'The identity service did not answer in time.' },
      decision: 'deny',
      reasons: ['api_error'],
      infra_reason: 'network_timeout',
    });
  });

  it('bootstraps a verification session for an agent without identity', async () => {
    const shop = await mount({ createSessionOnMissing: { context: `suite-${adapter}`, productName: 'Suite order' } });
    const res = await post(shop, '/paid');
    expect(res.status).toBe(403);
    const body: any = await res.json();
    expect(body).toMatchObject({
      error: { code: 'identity_required' },
      session_id: expect.any(String),
      poll_secret: expect.any(String),
      verify_url: expect.any(String),
      poll_url: expect.any(String),
    });
    expect(await id.h.deps.db('sessions').where({ id: body.session_id }).first()).toMatchObject({ context: `suite-${adapter}`, product_name: 'Suite order' });
  });

  it('captures the paying wallet after a 2xx and never after a 500', async () => {
    const operator = await createOperator(id.h.deps);
    const { token, id: credentialId } = await mintCredential(id.h.deps, operator);
    const shop = await mount();
    const captures = (wallet: { address: string }) => id.h.deps.db('wallet_captures').where({ wallet_address: wallet.address.toLowerCase() });

    const failedPayer = Wallet.createRandom();
    expect((await post(shop, '/fail', { 'X-Operator-Token': token, 'PAYMENT-SIGNATURE': v2Header(await signEip3009(failedPayer)) })).status).toBe(500);
    const payer = Wallet.createRandom();
    const payment = await signEip3009(payer);
    expect((await post(shop, '/paid', { 'X-Operator-Token': token, 'PAYMENT-SIGNATURE': v2Header(payment) })).status).toBe(200);
    const [row] = await eventually(async () => {
      const rows = await captures(payer);
      return rows.length > 0 ? rows : null;
    });
    expect(row).toMatchObject({
      credential_id: credentialId,
      account_id: operator,
      network: 'evm',
      last_idempotency_key: `x402:eip155:84532:${payment.authorization.nonce}`,
    });
    // The 500 came first; its capture, had it been sent, would have landed before this one.
    expect(await captures(failedPayer)).toEqual([]);
  });
});
