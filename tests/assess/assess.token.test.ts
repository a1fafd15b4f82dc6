import request from 'supertest';
import { operatorHandle } from '../../server/crypto';
import { WalletList } from '../../server/sanctions/walletList';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { TEST_SERVER_SECRET } from '../support/env';
import { ASSESS_TABLES, captureWallet, claimWallet, createOperator, evmAddress, mintCredential } from './seed';

describe('POST /v1/assess with an operator_token', () => {
  let h: Harness;
  let key: string;
  let merchantId: string;
  const clock = new TestClock();

  beforeAll(async () => {
    h = await createHarness({ overrides: { clock } });
    await resetTables(h.deps, ASSESS_TABLES);
    ({ apiKey: key, accountId: merchantId } = await createMerchant(h.deps, { tier: 'enterprise' }));
    await h.deps.repos.walletLists.save({
      list: WalletList.build([{ address: '0x' + 'ab'.repeat(20), label: 'ETH', sdnUid: '1', listedAt: null }], {
        source: 'test',
        format: 'plain',
        sha256: 'token-test',
        publishedAt: null,
        loadedAt: new Date(),
      }),
    });
    await h.deps.services.walletSanctions.reloadPersisted();
  });
  afterAll(() => h.close());

  const assess = (body: unknown) =>
    request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', key)
      .send(body as object);

  it('resolves a live credential to its account KYC state and a pairwise operator_handle', async () => {
    const op = await createOperator(h.deps, { jurisdiction: 'FR' });
    const { token } = await mintCredential(h.deps, op);
    const res = await assess({ operator_token: token, policy: { require_kyc: true, allowed_jurisdictions: ['FR'] } });
    expect(res.status).toBe(200);
    const handle = operatorHandle(TEST_SERVER_SECRET, op, merchantId);
    expect(handle).toMatch(/^oph_[1-9A-HJ-NP-Za-km-z]{22}$/);
    expect(res.body).toEqual({
      decision: 'allow',
      decision_reasons: [],
      policy_result: expect.objectContaining({ all_passed: true }),
      explanation: expect.any(Array),
      identity_method: 'operator_token',
      operator_verification: { level: 'kyc_verified', operator_type: 'individual', verified_at: '2025-03-01T10:00:00.000Z' },
      operator_handle: handle,
    });
    expect(res.body).not.toHaveProperty('resolved_operator');
    expect(res.body).not.toHaveProperty('linked_wallets');
  });

  it('gives another merchant a different handle for the same operator', async () => {
    const op = await createOperator(h.deps);
    const { token } = await mintCredential(h.deps, op);
    const other = await createMerchant(h.deps, { tier: 'enterprise' });
    const a = await assess({ operator_token: token });
    const b = await request(h.app).post('/v1/assess').set('Authorization', `Bearer ${other.apiKey}`).send({ operator_token: token });
    expect(a.body.operator_handle).not.toBe(b.body.operator_handle);
    expect((await assess({ operator_token: token })).body.operator_handle).toBe(a.body.operator_handle);
  });

  it('returns the operator_handle on denials too (a registration-only account)', async () => {
    const op = await createOperator(h.deps, { kyc: 'none', kind: 'merchant' });
    const { token } = await mintCredential(h.deps, op);
    const res = await assess({ operator_token: token, policy: { require_kyc: true } });
    expect(res.body.decision).toBe('deny');
    expect(res.body.decision_reasons).toEqual(['kyc_required']);
    expect(res.body.operator_handle).toBe(operatorHandle(TEST_SERVER_SECRET, op, merchantId));
    expect(res.body.verify_url).toEqual(expect.stringMatching(/\/v1\/assess\/verify\//));
  });

  it('updates last_used_at behind the response', async () => {
    const op = await createOperator(h.deps);
    const { token, id } = await mintCredential(h.deps, op);
    await assess({ operator_token: token }).expect(200);
    await h.deps.services.credentials.flushTouches();
    const row = await h.deps.db('credentials').where({ id }).first();
    expect(row.last_used_at).not.toBeNull();
  });

  it('answers 401 token_expired with a fresh verification session for a revoked credential', async () => {
    const op = await createOperator(h.deps);
    const { token, id } = await mintCredential(h.deps, op);
    await h.deps.db('credentials').where({ id }).update({ revoked_at: new Date() });
    const res = await assess({ operator_token: token });
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ code: 'token_expired', message: expect.any(String) });
    expect(res.body).toMatchObject({
      verify_url: expect.stringMatching(/^http:\/\/kya\.test\/verify\//),
      session_id: expect.any(String),
      poll_secret: expect.any(String),
      poll_url: expect.stringMatching(/^http:\/\/kya\.test\/v1\/sessions\//),
      next_steps: expect.objectContaining({ action: 'deliver_verify_url_and_poll' }),
    });
    const session = await h.deps.db('sessions').where({ id: res.body.session_id }).first();
    expect(session).toMatchObject({ kind: 'merchant', merchant_account_id: merchantId });
  });

  it('answers 401 token_expired for a credential past its TTL', async () => {
    const op = await createOperator(h.deps);
    const { token } = await mintCredential(h.deps, op, 60);
    clock.advance(61_000);
    try {
      const res = await assess({ operator_token: token });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('token_expired');
      expect(res.body.session_id).toEqual(expect.any(String));
    } finally {
      clock.set(new Date());
    }
  });

  it('answers 401 invalid_credential without a session for a credential that never existed', async () => {
    const before = await h.deps.db('sessions').count<{ count: number }[]>('* as count');
    const res = await assess({ operator_token: 'opc_' + 'x'.repeat(43) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: { code: 'invalid_credential', message: expect.any(String) } });
    const after = await h.deps.db('sessions').count<{ count: number }[]>('* as count');
    expect(Number(after[0].count)).toBe(Number(before[0].count));
  });

  describe('signer', () => {
    it('passes for a signer linked to nobody yet (the capture after payment links it) and when no wallet signature exists', async () => {
      const op = await createOperator(h.deps);
      const { token } = await mintCredential(h.deps, op);
      const fresh = await assess({ operator_token: token, signer: { address: evmAddress(), network: 'evm' } });
      expect(fresh.body.signer_match).toEqual({ kind: 'pass', claimed_operator: null, signer_operator: null, agent_instructions: expect.any(String) });
      const card = await assess({ operator_token: token, signer: { address: null, network: 'evm' } });
      expect(card.body.signer_match.kind).toBe('pass');
      expect(card.body.signer_sanctions).toEqual({ status: 'clear' });
    });

    it('passes for a wallet captured under the same operator and flags a wallet of another operator', async () => {
      const op = await createOperator(h.deps);
      const { token, id } = await mintCredential(h.deps, op);
      const mine = evmAddress();
      await captureWallet(h.deps, { accountId: op, credentialId: id, address: mine });
      const ok = await assess({ operator_token: token, signer: { address: mine, network: 'evm' } });
      expect(ok.body.signer_match).toMatchObject({ kind: 'pass', claimed_operator: mine, signer_operator: mine });

      const other = await createOperator(h.deps);
      const theirs = evmAddress();
      await claimWallet(h.deps, other, theirs);
      const bad = await assess({ operator_token: token, signer: { address: theirs, network: 'evm' } });
      expect(bad.body.signer_match).toEqual({
        kind: 'wallet_signer_mismatch',
        claimed_operator: mine,
        signer_operator: theirs,
        expected_signer: mine,
        actual_signer: theirs,
        linked_wallets: [mine],
        agent_instructions: expect.any(String),
      });
    });

    it('denies sanctions_flagged for a listed signer in token mode as well', async () => {
      const op = await createOperator(h.deps);
      const { token } = await mintCredential(h.deps, op);
      const res = await assess({ operator_token: token, signer: { address: '0x' + 'AB'.repeat(20), network: 'evm' } });
      expect(res.body.decision).toBe('deny');
      expect(res.body.decision_reasons).toEqual(['sanctions_flagged']);
      expect(res.body.signer_sanctions).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '1', listed_at: null });
      expect(res.body.operator_handle).toEqual(expect.any(String));
    });
  });
});
