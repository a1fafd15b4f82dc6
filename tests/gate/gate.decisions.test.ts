// The gate against a real identity server (Postgres + Redis): allow/deny mapping, denial bodies, session
// bootstrap, credential 401s, signer enforcement, identity parsing and per-request options.
import request from 'supertest';
import { Wallet } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { resetTables } from '../support/harness';
import { ASSESS_TABLES, claimWallet, createOperator, evmAddress, mintCredential } from '../assess/seed';
import { GateOptionsError } from '../../middleware';
import { mppAuthorization, signEip3009, v2Header } from './payments';
import { sanctionsFile, shop, startIdentityServer, type IdentityServer, type Shop } from './support';

const sanctionedWallet = Wallet.createRandom();
// For tests about policy, sessions, chains and hooks rather than wallet proofs: header-only trust, opted into.
const HEADER_TRUST = { trustUnsignedWalletHeader: true };

describe('gate decisions against a live identity server', () => {
  let id: IdentityServer;
  const shops: Shop[] = [];
  const make = (extra: Record<string, unknown> = {}) => {
    const s = shop({ apiKey: id.apiKey, baseUrl: id.baseUrl, ...extra });
    shops.push(s);
    return s;
  };

  beforeAll(async () => {
    id = await startIdentityServer({ env: { SANCTIONS_WALLET_SOURCE: sanctionsFile([sanctionedWallet.address]) } });
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
  });
  afterAll(async () => {
    shops.forEach((s) => s.gate.close());
    await id.close();
  });

  it('allows a verified operator by a proven wallet and exposes the assess data through getGateResult', async () => {
    const op = await createOperator(id.h.deps);
    const signer = Wallet.createRandom();
    const wallet = signer.address.toLowerCase();
    await claimWallet(id.h.deps, op, wallet);
    const { app } = make({ policy: { requireKyc: true } });
    const res = await request(app)
      .post('/paid')
      .set('X-Wallet-Address', wallet.toUpperCase().replace('0X', '0x'))
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(signer)));
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({
      decision: 'allow',
      degraded: false,
      infra_reason: null,
      identity: { method: 'wallet', wallet_address: wallet, wallet_network: 'evm', proof: 'payment_signature' },
      wallet_proof: null,
      operator_handle: null,
      signer: { signer: { address: wallet, verified: true }, match: { kind: 'pass' } },
      cached: false,
      denial: null,
      assess: { decision: 'allow', decision_reasons: [], identity_method: 'wallet', resolved_operator: wallet, linked_wallets: [wallet] },
    });
    // Enterprise accounts have no quota headers.
    expect(res.body.result.quota).toBeNull();
    expect(id.calls.at(-1)).toEqual({
      path: '/v1/assess',
      body: { address: wallet, policy: { require_kyc: true }, signer: { address: wallet, network: 'evm' } },
    });
  });

  it('allows by operator token and gives the handler the pairwise operator handle, never the token', async () => {
    const op = await createOperator(id.h.deps);
    const { token } = await mintCredential(id.h.deps, op);
    const { app } = make({ policy: { requireKyc: true } });
    const res = await request(app).post('/paid').set('X-Operator-Token', ` ${token} `);
    expect(res.status).toBe(200);
    expect(res.body.result.operator_handle).toMatch(/^oph_/);
    expect(res.body.result.identity).toEqual({ method: 'operator_token', wallet_address: null, wallet_network: null, proof: null });
    expect(JSON.stringify(res.body)).not.toContain(token);
  });

  it('sends both identities when both headers are present', async () => {
    const op = await createOperator(id.h.deps);
    const { token } = await mintCredential(id.h.deps, op);
    const wallet = evmAddress();
    const { app } = make();
    await request(app).post('/paid').set('X-Operator-Token', token).set('X-Wallet-Address', wallet).expect(200);
    expect(id.calls.at(-1)!.body).toEqual({ address: wallet, operator_token: token });
  });

  it('keeps a Solana wallet verbatim (base58 is case-sensitive)', async () => {
    const op = await createOperator(id.h.deps);
    const sol = bs58.encode(nacl.sign.keyPair().publicKey);
    await claimWallet(id.h.deps, op, sol, 'solana');
    const { app } = make({ ...HEADER_TRUST, policy: { requireKyc: true } });
    const res = await request(app).post('/paid').set('X-Wallet-Address', sol).expect(200);
    expect(res.body.result.identity.wallet_address).toBe(sol);
    expect(id.calls.at(-1)!.body.address).toBe(sol);
  });

  it('denies a request without identity with 403 identity_required and makes no call', async () => {
    const { app } = make({ policy: { requireKyc: true } });
    const before = id.count('/v1/assess');
    const res = await request(app).post('/paid').set('X-Operator-Token', '   ').set('X-Wallet-Address', '');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
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
    expect(id.count('/v1/assess')).toBe(before);
  });

  it('answers 400 invalid_address naming the header for a malformed wallet', async () => {
    const { app } = make();
    const res = await request(app).post('/paid').set('X-Wallet-Address', '0x1234');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'invalid_address', message: 'X-Wallet-Address is not a valid EVM or Solana address.' },
      decision: 'deny',
      reasons: ['invalid_address'],
    });
  });

  it('denies kyc_required with a minted session at the top level; onBeforeSession extras never replace reserved fields', async () => {
    const wallet = evmAddress();
    const sessionsSeen: string[] = [];
    const { app } = make({
      ...HEADER_TRUST,
      policy: { requireKyc: true },
      createSessionOnMissing: {
        context: 'static-context',
        productName: 'Static product',
        getSessionOptions: (req: any) => ({ productName: `Order ${req.headers['x-order']}` }),
        onBeforeSession: (_req: any, session: any) => {
          sessionsSeen.push(session.session_id);
          return { order_id: 'ord_1', session_id: 'hijacked', verify_url: 'https://evil.example', error: 'x', reasons: [] };
        },
      },
    });
    const res = await request(app).post('/paid').set('X-Wallet-Address', wallet).set('X-Order', '42');
    expect(res.status).toBe(403);
    const b = res.body;
    expect(b.error).toEqual({ code: 'kyc_required', message: 'The operator behind this agent has not completed identity verification.' });
    expect(b.decision).toBe('deny');
    expect(b.reasons).toEqual(['kyc_required']);
    expect(b.session_id).toBe(sessionsSeen[0]);
    expect(b.session_id).toMatch(/^vs_/);
    expect(b.poll_secret).toMatch(/^ps_/);
    expect(b.verify_url).toBe(`http://kya.test/verify/${b.session_id}`);
    expect(b.poll_url).toBe(`http://kya.test/v1/sessions/${b.session_id}`);
    expect(b.next_steps.action).toBe('deliver_verify_url_and_poll');
    expect(typeof b.agent_instructions).toBe('string');
    expect(b.order_id).toBe('ord_1');
    const row = await id.h.deps.db('sessions').where({ id: b.session_id }).first();
    expect(row).toMatchObject({ kind: 'merchant', merchant_account_id: id.merchantId, context: 'static-context', product_name: 'Order 42' });
  });

  it('bootstraps a session for a request with no identity when createSessionOnMissing is set', async () => {
    const { app } = make({ policy: { requireKyc: true }, createSessionOnMissing: { productName: 'Widget' } });
    const res = await request(app).post('/paid');
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: { code: 'identity_required' }, decision: 'deny', reasons: ['identity_required'] });
    expect(res.body.session_id).toMatch(/^vs_/);
    expect(res.body.poll_secret).toMatch(/^ps_/);
    expect(res.body.next_steps.action).toBe('deliver_verify_url_and_poll');
  });

  it('does not mint a session for a denial verification cannot fix (age below minimum)', async () => {
    const op = await createOperator(id.h.deps, { age: '18+' });
    const wallet = evmAddress();
    await claimWallet(id.h.deps, op, wallet);
    const before = id.count('/v1/sessions');
    const { app } = make({ ...HEADER_TRUST, policy: { requireKyc: true, minAge: 21 }, createSessionOnMissing: {} });
    const res = await request(app).post('/paid').set('X-Wallet-Address', wallet);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: { code: 'age_insufficient', message: "The operator does not meet this merchant's minimum age." },
      decision: 'deny',
      reasons: ['age_insufficient'],
    });
    expect(id.count('/v1/sessions')).toBe(before);
  });

  it('denies a blocked jurisdiction from the flat ecosystem option name', async () => {
    const op = await createOperator(id.h.deps, { jurisdiction: 'IR' });
    const wallet = evmAddress();
    await claimWallet(id.h.deps, op, wallet);
    const { app } = make({ ...HEADER_TRUST, requireKyc: true, blockedJurisdictions: ['IR'] });
    const res = await request(app).post('/paid').set('X-Wallet-Address', wallet);
    expect(res.status).toBe(403);
    expect(res.body.reasons).toEqual(['jurisdiction_restricted']);
    expect(id.calls.at(-1)!.body.policy).toEqual({ require_kyc: true, blocked_jurisdictions: ['IR'] });
  });

  it('answers 401 token_expired with the server-minted session at the top level', async () => {
    const op = await createOperator(id.h.deps);
    const { token, id: credId } = await mintCredential(id.h.deps, op);
    await id.h.deps.db('credentials').where({ id: credId }).update({ revoked_at: new Date() });
    const { app } = make({ policy: { requireKyc: true } });
    const res = await request(app).post('/paid').set('X-Operator-Token', token);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('token_expired');
    expect(res.body.decision).toBe('deny');
    expect(res.body.reasons).toEqual(['token_expired']);
    expect(res.body.session_id).toMatch(/^vs_/);
    expect(res.body.poll_secret).toMatch(/^ps_/);
    expect(res.body.verify_url).toContain(res.body.session_id);
    expect(res.body.poll_url).toContain(res.body.session_id);
  });

  it('answers 401 invalid_credential with no session for a token that never existed', async () => {
    const { app } = make({ policy: { requireKyc: true }, createSessionOnMissing: {} });
    const res = await request(app)
      .post('/paid')
      .set('X-Operator-Token', 'opc_' + 'x'.repeat(40));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_credential');
    expect(res.body).not.toHaveProperty('session_id');
    expect(res.body).not.toHaveProperty('poll_secret');
  });

  describe('payment signer', () => {
    let operator: string;
    let claimed: Wallet;
    let sibling: Wallet;
    let stranger: Wallet;
    beforeAll(async () => {
      operator = await createOperator(id.h.deps);
      claimed = Wallet.createRandom() as unknown as Wallet;
      sibling = Wallet.createRandom() as unknown as Wallet;
      stranger = Wallet.createRandom() as unknown as Wallet;
      await claimWallet(id.h.deps, operator, claimed.address.toLowerCase());
      await claimWallet(id.h.deps, operator, sibling.address.toLowerCase());
      const other = await createOperator(id.h.deps);
      await claimWallet(id.h.deps, other, stranger.address.toLowerCase());
    });

    it('allows a payment signed by a sibling wallet of the claimed operator and records the verdict', async () => {
      const { app } = make({ policy: { requireKyc: true } });
      const res = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(sibling)));
      expect(res.status).toBe(200);
      expect(id.calls.at(-1)!.body.signer).toEqual({ address: sibling.address.toLowerCase(), network: 'evm' });
      expect(res.body.result.signer).toMatchObject({
        signer: { address: sibling.address.toLowerCase(), verified: true, proof: 'eip3009_ecdsa' },
        match: { kind: 'pass' },
        sanctions: { status: 'clear' },
      });
    });

    it('denies a payment signed by another operator’s wallet with the wallets the agent could re-sign from', async () => {
      const { app } = make({ policy: { requireKyc: true } });
      const res = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(stranger)));
      expect(res.status).toBe(403);
      expect(res.body.error).toEqual({
        code: 'wallet_signer_mismatch',
        message: 'The payment was signed by a wallet of a different operator than the claimed wallet.',
      });
      expect(res.body.reasons).toEqual(['wallet_signer_mismatch']);
      expect([...res.body.linked_wallets].sort()).toEqual([claimed.address.toLowerCase(), sibling.address.toLowerCase()].sort());
      expect(res.body.expected_signer).toBe(claimed.address.toLowerCase());
      expect(res.body.actual_signer).toBe(stranger.address.toLowerCase());
      expect(JSON.parse(res.body.agent_instructions).action).toBeDefined();
    });

    it('records but does not enforce a token-mode mismatch when enforceSignerMatch is false', async () => {
      const { token } = await mintCredential(id.h.deps, operator);
      const { app } = make({ policy: { requireKyc: true }, enforceSignerMatch: false });
      const res = await request(app)
        .post('/paid')
        .set('X-Operator-Token', token)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(stranger)));
      expect(res.status).toBe(200);
      expect(res.body.result.signer.match.kind).toBe('wallet_signer_mismatch');
    });

    it('tells a wallet-identified agent paying by card to prove the wallet or switch to its operator token, without a call', async () => {
      const { app } = make({ policy: { requireKyc: true } });
      const card = mppAuthorization({ challenge: { id: 'ch_card', method: 'stripe', intent: 'charge' }, payload: { spt: 'spt_1' } });
      const before = id.count('/v1/assess');
      const res = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('Authorization', card);
      expect(res.status).toBe(403);
      expect(id.count('/v1/assess')).toBe(before);
      expect(res.body.error.code).toBe('wallet_auth_requires_wallet_signing');
      expect(res.body.next_steps.action).toBe('prove_wallet_control');
      expect(res.body.next_steps.steps.at(-1)).toBe(
        'or retry with the header X-Operator-Token: <operator credential> from your credential store instead of X-Wallet-Address.',
      );
    });

    it('keeps the header-only card verdict of the server when unsigned wallet headers are trusted', async () => {
      const { app } = make({ ...HEADER_TRUST, policy: { requireKyc: true } });
      const card = mppAuthorization({ challenge: { id: 'ch_card_t', method: 'stripe', intent: 'charge' }, payload: { spt: 'spt_1' } });
      const res = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('Authorization', card);
      expect(res.status).toBe(403);
      expect(id.calls.at(-1)!.body.signer).toEqual({ address: null, network: 'evm' });
      expect(res.body.next_steps).toMatchObject({ action: 'use_operator_token', header_name: 'X-Operator-Token' });
    });

    it('lets a token-identified agent pay by card (no signer sent)', async () => {
      const { token } = await mintCredential(id.h.deps, operator);
      const { app } = make({ policy: { requireKyc: true } });
      const card = mppAuthorization({ challenge: { id: 'ch_card2', method: 'stripe', intent: 'charge' }, payload: { spt: 'spt_1' } });
      await request(app).post('/paid').set('X-Operator-Token', token).set('Authorization', card).expect(200);
      expect(id.calls.at(-1)!.body).toEqual({ operator_token: token, policy: { require_kyc: true } });
    });

    it('denies a signer on the wallet sanctions list (the server fails the decision)', async () => {
      const { token } = await mintCredential(id.h.deps, operator);
      const { app } = make({ policy: { requireKyc: true } });
      const res = await request(app)
        .post('/paid')
        .set('X-Operator-Token', token)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(sanctionedWallet)));
      expect(res.status).toBe(403);
      expect(res.body.reasons).toContain('sanctions_flagged');
    });

    it('answers 400 payment_signature_invalid for a forged header without calling the server', async () => {
      const { app } = make({ policy: { requireKyc: true } });
      const payment = await signEip3009(stranger, { from: claimed.address });
      const before = id.count('/v1/assess');
      const res = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('PAYMENT-SIGNATURE', v2Header(payment));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: {
          code: 'payment_signature_invalid',
          message: "PAYMENT-SIGNATURE signature was not made by authorization.from under the merchant's asset domain",
        },
        decision: 'deny',
        reasons: ['payment_signature_invalid'],
        header: 'PAYMENT-SIGNATURE',
      });
      expect(id.count('/v1/assess')).toBe(before);
    });

    it('answers 400 payment_header_malformed for an undecodable X-PAYMENT', async () => {
      const { app } = make();
      const res = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('X-PAYMENT', 'bm90IGpzb24=');
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('payment_header_malformed');
    });
  });

  it('runs conditionalGate only when a payment header is present (anonymous discovery gets the 402)', async () => {
    const { app } = make({ policy: { requireKyc: true } });
    const anon = await request(app).post('/discover');
    expect(anon.status).toBe(402);
    const paying = await request(app)
      .post('/discover')
      .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(Wallet.createRandom())));
    expect(paying.status).toBe(403);
    expect(paying.body.error.code).toBe('identity_required');
  });

  it('sends the per-request chain from getChain, falling back to chain', async () => {
    const wallet = evmAddress();
    const { app } = make({ ...HEADER_TRUST, chain: 'base', getChain: (req: any) => req.headers['x-chain'] });
    await request(app).post('/paid').set('X-Wallet-Address', wallet).set('X-Chain', 'ethereum').expect(200);
    expect(id.calls.at(-1)!.body.chain).toBe('ethereum');
    await request(app).post('/paid').set('X-Wallet-Address', wallet).expect(200);
    expect(id.calls.at(-1)!.body.chain).toBe('base');
    const bad = await request(app).post('/paid').set('X-Wallet-Address', wallet).set('X-Chain', 'dogechain');
    expect(bad.status).toBe(500);
    expect(bad.body.merchant_error).toBe('kya gate: getChain returned "dogechain"; expected one of base, ethereum, arbitrum, optimism, polygon, tempo, solana');
  });

  it('hands the denial to onDenied, which may send its own response', async () => {
    const denials: any[] = [];
    const { app } = make({
      ...HEADER_TRUST,
      policy: { requireKyc: true },
      onDenied: (_req: any, res: any, denial: any) => {
        denials.push(denial);
        res.status(451).json({ custom: denial.code });
      },
    });
    const res = await request(app).post('/paid').set('X-Wallet-Address', evmAddress());
    expect(res.status).toBe(451);
    expect(res.body).toEqual({ custom: 'kyc_required' });
    expect(denials[0]).toMatchObject({ status: 403, code: 'kyc_required', body: { decision: 'deny', reasons: ['kyc_required'] } });
  });

  it('rejects bad options at mount time with a message naming the option', () => {
    expect(() => make({ minAge: 19 })).toThrow(new GateOptionsError('minAge must be 18 or 21 (got 19)'));
  });
});
