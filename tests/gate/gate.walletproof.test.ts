// A wallet identity is proven, never asserted: X-Wallet-Address alone is denied (with a Sign-In-With-X
// challenge), a payment signed by the wallet or a wallet of the same operator proves it, a SIGN-IN-WITH-X
// proof verified by the live identity server proves it once, and neither the cache nor coalescing lets an
// unproven request ride on a proven one.
import request from 'supertest';
import { Wallet } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { resetTables } from '../support/harness';
import { encodeProof, evmProof, solanaProof } from '../support/siwx';
import { ASSESS_TABLES, claimWallet, createOperator } from '../assess/seed';
import { mppAuthorization, signEip3009, v2Header } from './payments';
import { sanctionsFile, shop, startIdentityServer, type IdentityServer, type Shop } from './support';

const ORIGIN = 'https://shop.example.com';
const DOMAIN = 'shop.example.com';

const proveInstructions = (wallet: string) => ({
  action: 'prove_wallet_control',
  steps: [
    `Prove control of ${wallet}: sign the message built from extensions["sign-in-with-x"].info (EIP-4361, personal_sign) with that wallet, using a fresh nonce and an expirationTime at most 5 minutes after issuedAt, and retry with the header SIGN-IN-WITH-X: <base64 of the JSON proof>,`,
    'or pay with a payment signed by that wallet (or another wallet of the same operator) in PAYMENT-SIGNATURE, X-PAYMENT or Authorization: Payment,',
    'or retry with the header X-Operator-Token: <operator credential> from your credential store instead of X-Wallet-Address.',
  ],
  user_message: 'This merchant needs proof that the agent controls the wallet it named.',
});

const challenge = (uri: string, chainId = 'eip155:8453', type = 'eip191') => ({
  'sign-in-with-x': {
    info: {
      domain: DOMAIN,
      uri,
      version: '1',
      nonce: expect.stringMatching(/^[0-9a-f]{32}$/),
      issuedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      expirationTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      statement: 'Sign in to prove you control this wallet.',
    },
    supportedChains: [{ chainId, type }],
  },
});

describe('wallet identity needs a proof', () => {
  let id: IdentityServer;
  const shops: Shop[] = [];
  const make = (extra: Record<string, unknown> = {}) => {
    const s = shop({ apiKey: id.apiKey, baseUrl: id.baseUrl, publicOrigin: ORIGIN, policy: { requireKyc: true }, ...extra });
    shops.push(s);
    return s;
  };
  let operator: string;
  let claimed: Wallet;
  let sibling: Wallet;
  let stranger: Wallet;

  beforeAll(async () => {
    id = await startIdentityServer({ env: { SANCTIONS_WALLET_SOURCE: sanctionsFile([]) } });
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
    operator = await createOperator(id.h.deps);
    claimed = Wallet.createRandom() as unknown as Wallet;
    sibling = Wallet.createRandom() as unknown as Wallet;
    stranger = Wallet.createRandom() as unknown as Wallet;
    await claimWallet(id.h.deps, operator, claimed.address.toLowerCase());
    await claimWallet(id.h.deps, operator, sibling.address.toLowerCase());
    await claimWallet(id.h.deps, await createOperator(id.h.deps), stranger.address.toLowerCase());
  });
  afterAll(async () => {
    shops.forEach((s) => s.gate.close());
    await id.close();
  });

  const siwx = (wallet: Wallet, extra: Record<string, unknown> = {}) =>
    evmProof(wallet, { domain: DOMAIN, uri: `${ORIGIN}/paid`, ...extra }).then((p) => p.header);

  describe('X-Wallet-Address alone', () => {
    it('is denied 403 wallet_auth_requires_wallet_signing with both proof ways, the token alternative and a challenge; no call is made', async () => {
      const { app } = make();
      const before = id.count('/v1/assess');
      const res = await request(app).post('/paid?order=1').set('X-Wallet-Address', claimed.address).set('Host', 'evil.example.net');
      expect(res.status).toBe(403);
      const wallet = claimed.address.toLowerCase();
      expect(res.body).toEqual({
        error: {
          code: 'wallet_auth_requires_wallet_signing',
          message: `X-Wallet-Address is only a claim: prove control of ${wallet} with a SIGN-IN-WITH-X proof or a payment signed by it, or present X-Operator-Token.`,
        },
        decision: 'deny',
        reasons: ['wallet_auth_requires_wallet_signing'],
        next_steps: proveInstructions(wallet),
        agent_instructions: JSON.stringify(proveInstructions(wallet)),
        // The challenge names the configured origin, never the Host header, and leaves the query out.
        extensions: challenge(`${ORIGIN}/paid`),
      });
      const info = res.body.extensions['sign-in-with-x'].info;
      expect(Date.parse(info.expirationTime) - Date.parse(info.issuedAt)).toBe(5 * 60_000);
      expect(id.count('/v1/assess')).toBe(before);
    });

    it('gets a fresh challenge nonce on every denial', async () => {
      const { app } = make();
      const a = await request(app).post('/paid').set('X-Wallet-Address', claimed.address);
      const b = await request(app).post('/paid').set('X-Wallet-Address', claimed.address);
      expect(a.body.extensions['sign-in-with-x'].info.nonce).not.toBe(b.body.extensions['sign-in-with-x'].info.nonce);
    });

    it('offers the Solana chain for a Solana wallet', async () => {
      const { app } = make();
      const res = await request(app).post('/paid').set('X-Wallet-Address', bs58.encode(nacl.sign.keyPair().publicKey));
      expect(res.body.extensions['sign-in-with-x'].supportedChains).toEqual([{ chainId: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', type: 'ed25519' }]);
    });

    it('is denied before the policy is looked at (an unproven caller learns nothing about the wallet)', async () => {
      const unverified = Wallet.createRandom();
      await claimWallet(id.h.deps, await createOperator(id.h.deps, { kyc: 'none' }), unverified.address.toLowerCase());
      const { app } = make({ createSessionOnMissing: {} });
      const before = id.count('/v1/sessions');
      const res = await request(app).post('/paid').set('X-Wallet-Address', unverified.address);
      expect(res.body.error.code).toBe('wallet_auth_requires_wallet_signing');
      expect(res.body).not.toHaveProperty('verify_url');
      expect(id.count('/v1/sessions')).toBe(before);
    });

    it('without publicOrigin, names the payment signature and the token only, with no challenge', async () => {
      const { app } = make({ publicOrigin: undefined });
      const res = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(claimed));
      const wallet = claimed.address.toLowerCase();
      const instructions = {
        action: 'prove_wallet_control',
        steps: [
          `Pay with a payment signed by ${wallet} (or another wallet of the same operator) in PAYMENT-SIGNATURE, X-PAYMENT or Authorization: Payment,`,
          'or retry with the header X-Operator-Token: <operator credential> from your credential store instead of X-Wallet-Address.',
        ],
        user_message: 'This merchant needs proof that the agent controls the wallet it named.',
      };
      expect(res.status).toBe(403);
      expect(res.body).toEqual({
        error: {
          code: 'wallet_auth_requires_wallet_signing',
          message: `X-Wallet-Address is only a claim: prove control of ${wallet} with a payment signed by it, or present X-Operator-Token.`,
        },
        decision: 'deny',
        reasons: ['wallet_auth_requires_wallet_signing'],
        next_steps: instructions,
        agent_instructions: JSON.stringify(instructions),
      });
    });

    it('passes only with the explicit, unsafe trustUnsignedWalletHeader', async () => {
      const { app } = make({ trustUnsignedWalletHeader: true });
      const res = await request(app).post('/paid').set('X-Wallet-Address', claimed.address);
      expect(res.status).toBe(200);
      expect(res.body.result.identity).toEqual({
        method: 'wallet',
        wallet_address: claimed.address.toLowerCase(),
        wallet_network: 'evm',
        proof: 'unverified_header',
      });
    });

    it('under trustUnsignedWalletHeader, still denies a proof that was presented and failed', async () => {
      const { app } = make({ trustUnsignedWalletHeader: true });
      const res = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(claimed, { domain: 'evil.example.com' }));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('wallet_proof_invalid');
    });
  });

  describe('payment-signature proof', () => {
    it('passes when the claimed wallet signed the payment', async () => {
      const { app } = make();
      const res = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(claimed)));
      expect(res.status).toBe(200);
      expect(res.body.result.identity.proof).toBe('payment_signature');
      expect(id.calls.at(-1)!.body).toEqual({
        address: claimed.address.toLowerCase(),
        policy: { require_kyc: true },
        signer: { address: claimed.address.toLowerCase(), network: 'evm' },
      });
    });

    it('passes when a linked wallet of the same operator signed it', async () => {
      const { app } = make();
      const res = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(sibling)));
      expect(res.status).toBe(200);
      expect(res.body.result.identity.proof).toBe('payment_signature');
    });

    it('denies a signer of another operator, even with enforceSignerMatch off (the payment then proves nothing)', async () => {
      for (const enforceSignerMatch of [true, false]) {
        const { app } = make({ enforceSignerMatch });
        const res = await request(app)
          .post('/paid')
          .set('X-Wallet-Address', claimed.address)
          .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(stranger)));
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe('wallet_signer_mismatch');
        expect(res.body.actual_signer).toBe(stranger.address.toLowerCase());
      }
    });

    it('denies a card payment (no wallet signature) and a smart-wallet claim the gate cannot check, without a call', async () => {
      const { app } = make();
      const before = id.count('/v1/assess');
      const card = mppAuthorization({ challenge: { id: 'ch_card', method: 'stripe', intent: 'charge' }, payload: { spt: 'spt_1' } });
      const byCard = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('Authorization', card);
      expect(byCard.status).toBe(403);
      expect(byCard.body.error.code).toBe('wallet_auth_requires_wallet_signing');
      const payment = await signEip3009(claimed);
      const smart = { ...payment, signature: payment.signature + 'ab'.repeat(40) };
      const bySmartWallet = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('PAYMENT-SIGNATURE', v2Header(smart));
      expect(bySmartWallet.status).toBe(403);
      expect(bySmartWallet.body.error.code).toBe('wallet_auth_requires_wallet_signing');
      expect(id.count('/v1/assess')).toBe(before);
    });
  });

  describe('Sign-In-With-X proof', () => {
    it('passes once verified by the server, which checks it against publicOrigin (never the Host header)', async () => {
      const { app } = make();
      const header = await siwx(claimed);
      const res = await request(app).post('/paid').set('Host', 'evil.example.net').set('X-Wallet-Address', claimed.address).set('SIGN-IN-WITH-X', header);
      expect(res.status).toBe(200);
      expect(res.body.result.identity.proof).toBe('sign_in_with_x');
      expect(res.body.result.wallet_proof).toMatchObject({ type: 'siwx', verified: true, address: claimed.address.toLowerCase() });
      expect(id.calls.at(-1)!.body).toEqual({
        address: claimed.address.toLowerCase(),
        policy: { require_kyc: true },
        wallet_proof: { type: 'siwx', header, domain: DOMAIN, uri: ORIGIN },
      });
    });

    it('identifies the wallet from the proof when X-Wallet-Address is absent (Solana)', async () => {
      const keys = nacl.sign.keyPair();
      const address = bs58.encode(keys.publicKey);
      await claimWallet(id.h.deps, operator, address, 'solana');
      const { app } = make();
      const res = await request(app)
        .post('/paid')
        .set('SIGN-IN-WITH-X', solanaProof(keys, { domain: DOMAIN, uri: ORIGIN }).header);
      expect(res.status).toBe(200);
      expect(res.body.result.identity).toEqual({ method: 'wallet', wallet_address: address, wallet_network: 'solana', proof: 'sign_in_with_x' });
    });

    it('is accepted once: a replay is denied 403 wallet_proof_invalid with the reason and a fresh challenge', async () => {
      const { app } = make();
      const header = await siwx(claimed);
      await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('SIGN-IN-WITH-X', header).expect(200);
      const replay = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('SIGN-IN-WITH-X', header);
      const wallet = claimed.address.toLowerCase();
      expect(replay.status).toBe(403);
      expect(replay.body).toEqual({
        error: {
          code: 'wallet_proof_invalid',
          message: "The SIGN-IN-WITH-X proof was not accepted: This proof's nonce was already used; sign a new proof with a fresh nonce.",
        },
        decision: 'deny',
        reasons: ['wallet_proof_invalid'],
        wallet_proof: {
          type: 'siwx',
          verified: false,
          address: wallet,
          chain_id: 'eip155:8453',
          reason: 'nonce_reused',
          message: "This proof's nonce was already used; sign a new proof with a fresh nonce.",
        },
        next_steps: proveInstructions(wallet),
        agent_instructions: JSON.stringify(proveInstructions(wallet)),
        extensions: challenge(`${ORIGIN}/paid`),
      });
    });

    it('denies a proof signed for another site or by another wallet', async () => {
      const { app } = make();
      const otherSite = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(claimed, { domain: 'other.example.com' }));
      expect(otherSite.status).toBe(403);
      expect(otherSite.body.wallet_proof.reason).toBe('domain_mismatch');
      const otherWallet = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(sibling));
      expect(otherWallet.body.wallet_proof.reason).toBe('address_mismatch');
    });

    it('answers 400 wallet_proof_malformed naming the header: locally for non-JSON, from the server for a missing field', async () => {
      const { app } = make();
      const before = id.count('/v1/assess');
      const garbage = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('SIGN-IN-WITH-X', 'not-json%%');
      expect(garbage.status).toBe(400);
      expect(garbage.body).toEqual({
        error: { code: 'wallet_proof_malformed', message: 'SIGN-IN-WITH-X is not base64-encoded JSON.' },
        decision: 'deny',
        reasons: ['wallet_proof_malformed'],
        header: 'SIGN-IN-WITH-X',
      });
      expect(id.count('/v1/assess')).toBe(before);
      const { payload } = await evmProof(claimed, { domain: DOMAIN, uri: ORIGIN });
      const { nonce: _nonce, ...withoutNonce } = payload;
      const missing = await request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('SIGN-IN-WITH-X', encodeProof(withoutNonce));
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual({
        error: { code: 'wallet_proof_malformed', message: 'SIGN-IN-WITH-X is malformed: SIGN-IN-WITH-X.nonce is required.' },
        decision: 'deny',
        reasons: ['wallet_proof_malformed'],
        header: 'SIGN-IN-WITH-X',
        details: [{ field: 'SIGN-IN-WITH-X.nonce', message: 'is required' }],
      });
    });

    it('answers 400 for a proof alone whose address is not a wallet address', async () => {
      const { app } = make();
      const { payload } = await evmProof(claimed, { domain: DOMAIN, uri: ORIGIN });
      const res = await request(app)
        .post('/paid')
        .set('SIGN-IN-WITH-X', encodeProof({ ...payload, address: 'me' }));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { code: 'wallet_proof_malformed', message: 'SIGN-IN-WITH-X.address must be the EVM or Solana address that signed the proof.' },
        decision: 'deny',
        reasons: ['wallet_proof_malformed'],
        header: 'SIGN-IN-WITH-X',
      });
    });

    it('lets a wallet proven by Sign-In-With-X pay by card', async () => {
      const { app } = make();
      const card = mppAuthorization({ challenge: { id: 'ch_card3', method: 'stripe', intent: 'charge' }, payload: { spt: 'spt_1' } });
      const res = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(claimed))
        .set('Authorization', card);
      expect(res.status).toBe(200);
    });
  });

  describe('the decision cache never carries a proof from one request to another', () => {
    it('denies an unproven request after a proven one for the same wallet', async () => {
      const { app } = make({ cacheSeconds: 300 });
      await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(claimed)))
        .expect(200);
      const cachedAllow = await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(claimed)));
      expect(cachedAllow.body.result.cached).toBe(true);
      await request(app).post('/paid').set('X-Wallet-Address', claimed.address).expect(403);
      await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(claimed))
        .expect(200);
      await request(app).post('/paid').set('X-Wallet-Address', claimed.address).expect(403);
    });

    it('asks the server for every proof and never coalesces two requests carrying the same proof', async () => {
      const { app } = make({ cacheSeconds: 300 });
      const before = id.count('/v1/assess');
      await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(claimed))
        .expect(200);
      await request(app)
        .post('/paid')
        .set('X-Wallet-Address', claimed.address)
        .set('SIGN-IN-WITH-X', await siwx(claimed))
        .expect(200);
      expect(id.count('/v1/assess') - before).toBe(2);
      const header = await siwx(claimed);
      const both = await Promise.all([1, 2].map(() => request(app).post('/paid').set('X-Wallet-Address', claimed.address).set('SIGN-IN-WITH-X', header)));
      expect(both.map((r) => r.status).sort()).toEqual([200, 403]);
    });
  });

  describe('conditionalGate', () => {
    it('lets an unproven wallet whose payment has not happened yet reach the paywall, and gates the paid retry', async () => {
      const { app } = make();
      const before = id.count('/v1/assess');
      const discovery = await request(app).post('/discover').set('X-Wallet-Address', claimed.address);
      expect(discovery.status).toBe(402);
      expect(id.count('/v1/assess')).toBe(before);
      const card = mppAuthorization({ challenge: { id: 'ch_card4', method: 'stripe', intent: 'charge' }, payload: { spt: 'spt_1' } });
      const unproven = await request(app).post('/discover').set('X-Wallet-Address', claimed.address).set('Authorization', card);
      expect(unproven.status).toBe(403);
      expect(unproven.body.error.code).toBe('wallet_auth_requires_wallet_signing');
      const paid = await request(app)
        .post('/discover')
        .set('X-Wallet-Address', claimed.address)
        .set('PAYMENT-SIGNATURE', v2Header(await signEip3009(claimed)));
      expect(paid.status).toBe(200);
    });
  });
});
