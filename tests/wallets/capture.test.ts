import request from 'supertest';
import { Wallet } from 'ethers';
import { Keypair } from './keys';
import { EVM_ZERO_ADDRESS } from '../../shared/address';
import { newSecret } from '../../server/crypto';
import { createMerchant, useClockedHarness } from '../support/harness';
import { DAY_MS, verifyAccount } from '../credentials/fixtures';

describe('POST /v1/credentials/wallets', () => {
  const { h, clock } = useClockedHarness('2026-03-01T12:00:00.000Z', ['accounts']);

  /** A merchant (who reports) and an operator account holding a live credential. */
  async function setup() {
    const merchant = await createMerchant(h.deps, { tier: 'enterprise' });
    const operator = await createMerchant(h.deps, { name: 'Operator', tier: 'enterprise' });
    await verifyAccount(h.deps, operator.accountId);
    const credential = (await request(h.app).post('/v1/credentials').set('X-API-Key', operator.apiKey).send({ ttl_days: 7 })).body;
    return { merchant, operator, credential };
  }
  const capture = (apiKey: string, body: unknown) =>
    request(h.app)
      .post('/v1/credentials/wallets')
      .set('X-API-Key', apiKey)
      .send(body as object);
  const row = (credentialId: string, walletAddress: string, network = 'evm') =>
    h.deps.repos.walletCaptures.find({ credentialId, walletAddress, network: network as 'evm' | 'solana' });

  it('records the first report as first_seen, later reports count up and move last_seen', async () => {
    const { merchant, operator, credential } = await setup();
    const wallet = Wallet.createRandom().address; // checksummed
    const first = await capture(merchant.apiKey, { operator_token: credential.credential, wallet_address: wallet, network: 'evm', idempotency_key: 'pay-1' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ associated: true, first_seen: true });
    // Durable before the 200: the row is there as soon as the response is.
    expect(await row(credential.id, wallet.toLowerCase())).toMatchObject({
      account_id: operator.accountId,
      reported_by_account_id: merchant.accountId,
      wallet_address: wallet.toLowerCase(),
      transaction_count: 1,
      last_idempotency_key: 'pay-1',
      first_seen_at: clock.now(),
      last_seen_at: clock.now(),
    });

    const firstSeen = clock.now();
    clock.advance(60_000);
    const second = await capture(merchant.apiKey, {
      operator_token: credential.credential,
      wallet_address: wallet.toLowerCase(),
      network: 'evm',
      idempotency_key: 'pay-2',
    });
    expect(second.body).toEqual({ associated: true, first_seen: false });
    clock.advance(60_000);
    const third = await capture(merchant.apiKey, {
      operator_token: credential.credential,
      wallet_address: wallet.toUpperCase().replace('0X', '0x'),
      network: 'evm',
    });
    expect(third.body).toEqual({ associated: true, first_seen: false });
    expect(await row(credential.id, wallet.toLowerCase())).toMatchObject({
      transaction_count: 3,
      first_seen_at: firstSeen,
      last_seen_at: clock.now(),
      last_idempotency_key: null,
    });
    expect(await h.deps.db('wallet_captures').count({ n: '*' }).first()).toEqual({ n: 1 });
  });

  it('dedupes a report whose idempotency_key equals the most recent capture: no count bump, no last_seen move', async () => {
    const { merchant, credential } = await setup();
    const wallet = Wallet.createRandom().address.toLowerCase();
    const body = { operator_token: credential.credential, wallet_address: wallet, network: 'evm', idempotency_key: 'pay-1' };
    await capture(merchant.apiKey, body).expect(200);
    const before = await row(credential.id, wallet);
    clock.advance(60_000);
    const again = await capture(merchant.apiKey, body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ associated: true, first_seen: false, deduped: true });
    expect(await row(credential.id, wallet)).toEqual(before);

    // Only the most recent key dedupes: a new payment, then a late retry of the first one, both count.
    await capture(merchant.apiKey, { ...body, idempotency_key: 'pay-2' }).expect(200);
    expect((await capture(merchant.apiKey, body)).body).toEqual({ associated: true, first_seen: false });
    expect((await row(credential.id, wallet))!.transaction_count).toBe(3);
  });

  it('changes the count exactly once for 20 concurrent duplicate reports', async () => {
    const { merchant, credential } = await setup();
    const wallet = Wallet.createRandom().address.toLowerCase();
    const base = { operator_token: credential.credential, wallet_address: wallet, network: 'evm' };
    await capture(merchant.apiKey, { ...base, idempotency_key: 'pay-0' }).expect(200);

    const burst = await Promise.all(Array.from({ length: 20 }, () => capture(merchant.apiKey, { ...base, idempotency_key: 'pay-1' })));
    expect(burst.map((r) => r.status)).toEqual(Array(20).fill(200));
    const counted = burst.filter((r) => r.body.deduped !== true);
    expect(counted.map((r) => r.body)).toEqual([{ associated: true, first_seen: false }]);
    expect((await row(credential.id, wallet))!.transaction_count).toBe(2);
  });

  it('creates the record exactly once when 20 identical first reports race', async () => {
    const { merchant, credential } = await setup();
    const wallet = Wallet.createRandom().address.toLowerCase();
    const body = { operator_token: credential.credential, wallet_address: wallet, network: 'evm', idempotency_key: 'pay-1' };
    const burst = await Promise.all(Array.from({ length: 20 }, () => capture(merchant.apiKey, body)));
    expect(burst.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(burst.filter((r) => r.body.first_seen === true)).toHaveLength(1);
    expect(burst.filter((r) => r.body.deduped === true)).toHaveLength(19);
    expect((await row(credential.id, wallet))!.transaction_count).toBe(1);
  });

  it('keeps Solana addresses verbatim and treats (credential, wallet, network) as the key', async () => {
    const { merchant, operator, credential } = await setup();
    const solana = Keypair.generate();
    const res = await capture(merchant.apiKey, { operator_token: credential.credential, wallet_address: solana, network: 'solana' });
    expect(res.body).toEqual({ associated: true, first_seen: true });
    expect(await row(credential.id, solana, 'solana')).toMatchObject({ wallet_address: solana, network: 'solana' });
    expect(await row(credential.id, solana.toLowerCase(), 'solana')).toBeUndefined();

    // Same wallet under another credential of the same operator is a separate record.
    const second = (await request(h.app).post('/v1/credentials').set('X-API-Key', operator.apiKey).send({})).body;
    const other = await capture(merchant.apiKey, { operator_token: second.credential, wallet_address: solana, network: 'solana' });
    expect(other.body).toEqual({ associated: true, first_seen: true });
  });

  it('truncates idempotency_key at 200 characters', async () => {
    const { merchant, credential } = await setup();
    const wallet = Wallet.createRandom().address.toLowerCase();
    const base = { operator_token: credential.credential, wallet_address: wallet, network: 'evm' };
    const prefix = 'k'.repeat(200);
    await capture(merchant.apiKey, { ...base, idempotency_key: prefix + 'first' }).expect(200);
    expect((await row(credential.id, wallet))!.last_idempotency_key).toBe(prefix);
    // Differs only after character 200: the same payment as far as the key goes.
    const retry = await capture(merchant.apiKey, { ...base, idempotency_key: prefix + 'second' });
    expect(retry.body).toEqual({ associated: true, first_seen: false, deduped: true });
  });

  it('names every missing field with 400 bad_request', async () => {
    const { merchant } = await setup();
    const res = await capture(merchant.apiKey, {});
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Invalid request: operator_token, wallet_address, network',
        details: [
          { field: 'operator_token', message: 'operator_token is required' },
          { field: 'wallet_address', message: 'wallet_address is required' },
          { field: 'network', message: 'network is required' },
        ],
      },
    });
    const typed = await capture(merchant.apiKey, { operator_token: 5, wallet_address: '', network: 'evm', idempotency_key: 7 });
    expect(typed.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Invalid request: operator_token, wallet_address, idempotency_key',
        details: [
          { field: 'operator_token', message: 'operator_token must be a string' },
          { field: 'wallet_address', message: 'wallet_address is required' },
          { field: 'idempotency_key', message: 'idempotency_key must be a string' },
        ],
      },
    });
    const notObject = await request(h.app)
      .post('/v1/credentials/wallets')
      .set('X-API-Key', merchant.apiKey)
      .set('Content-Type', 'application/json')
      .send('[1]');
    expect(notObject.status).toBe(400);
    expect(notObject.body.error).toEqual({
      code: 'bad_request',
      message: 'Invalid request: body',
      details: [{ field: 'body', message: 'must be a JSON object' }],
    });
  });

  it.each(['EVM', 'ethereum', 'base', 'sol', 'bitcoin'])('rejects network %p with 400 invalid_network', async (network) => {
    const { merchant, credential } = await setup();
    const res = await capture(merchant.apiKey, { operator_token: credential.credential, wallet_address: Wallet.createRandom().address, network });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'invalid_network', message: 'network must be evm or solana.', details: [{ field: 'network', message: 'network must be evm or solana' }] },
    });
  });

  it('rejects a wallet malformed for its network, and the EVM zero address, with 400 invalid_wallet', async () => {
    const { merchant, credential } = await setup();
    const evm = Wallet.createRandom().address;
    const sol = Keypair.generate();
    const cases: Array<[string, string, string]> = [
      ['0x1234', 'evm', 'wallet_address is not a valid EVM address'],
      [evm + '00', 'evm', 'wallet_address is not a valid EVM address'],
      [sol, 'evm', 'wallet_address is not a valid EVM address'],
      [evm, 'solana', 'wallet_address is not a valid Solana address'],
      ['0OIl' + sol.slice(4), 'solana', 'wallet_address is not a valid Solana address'],
      ['1111111111111111111111111111111', 'solana', 'wallet_address is not a valid Solana address'],
    ];
    for (const [wallet, network, message] of cases) {
      const res = await capture(merchant.apiKey, { operator_token: credential.credential, wallet_address: wallet, network });
      expect({ wallet, status: res.status, body: res.body }).toEqual({
        wallet,
        status: 400,
        body: {
          error: {
            code: 'invalid_wallet',
            message: `wallet_address is not a valid ${network} wallet address.`,
            details: [{ field: 'wallet_address', message }],
          },
        },
      });
    }
    const zero = await capture(merchant.apiKey, { operator_token: credential.credential, wallet_address: EVM_ZERO_ADDRESS, network: 'evm' });
    expect(zero.status).toBe(400);
    expect(zero.body).toEqual({
      error: {
        code: 'invalid_wallet',
        message: 'wallet_address is the EVM zero address.',
        details: [{ field: 'wallet_address', message: 'the EVM zero address cannot pay' }],
      },
    });
    expect(await h.deps.db('wallet_captures').count({ n: '*' }).first()).toEqual({ n: 0 });
  });

  it('answers a token that never existed with 401 invalid_credential and no session', async () => {
    const { merchant } = await setup();
    for (const token of [newSecret('opc_', 32), 'opc_short', 'not-a-token']) {
      const res = await capture(merchant.apiKey, { operator_token: token, wallet_address: Wallet.createRandom().address, network: 'evm' });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: 'invalid_credential', message: 'The operator credential is not valid. Do not retry with it.' } });
    }
    expect(await h.deps.db('sessions').count({ n: '*' }).first()).toEqual({ n: 0 });
    expect(await h.deps.db('wallet_captures').count({ n: '*' }).first()).toEqual({ n: 0 });
  });

  it.each(['revoked', 'expired'] as const)(
    'answers a token that was %s with 401 token_expired carrying a fresh session for the calling merchant',
    async (how) => {
      const { merchant, operator, credential } = await setup();
      if (how === 'revoked') await request(h.app).delete(`/v1/credentials/${credential.id}`).set('X-API-Key', operator.apiKey).expect(200);
      else clock.advance(7 * DAY_MS);
      const res = await capture(merchant.apiKey, { operator_token: credential.credential, wallet_address: Wallet.createRandom().address, network: 'evm' });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({
        error: { code: 'token_expired', message: 'The operator credential has expired or was revoked. Verify again to get a new one.' },
        session_id: expect.stringMatching(/^vs_/),
        poll_secret: expect.stringMatching(/^ps_/),
        verify_url: `http://kya.test/verify/${res.body.session_id}`,
        poll_url: `http://kya.test/v1/sessions/${res.body.session_id}`,
        next_steps: { action: 'deliver_verify_url_and_poll', poll_interval_seconds: 5, poll_secret_header: 'X-Poll-Secret' },
      });
      expect(Object.keys(res.body.error)).toEqual(['code', 'message']);
      const session = await h.deps.db('sessions').where({ id: res.body.session_id }).first();
      expect(session).toMatchObject({ kind: 'merchant', status: 'pending', merchant_account_id: merchant.accountId, operator_account_id: null });
      expect(await h.deps.db('wallet_captures').count({ n: '*' }).first()).toEqual({ n: 0 });
    },
  );

  it('requires an API key, honours a disabled wallets endpoint and is not shadowed by /v1/credentials/:id', async () => {
    const { merchant, credential } = await setup();
    const anon = await request(h.app).post('/v1/credentials/wallets').send({});
    expect(anon.status).toBe(401);
    expect(anon.body.error.code).toBe('signup_required');
    await h.deps.services.accounts.setEndpoint(merchant.accountId, 'wallets', false);
    const off = await capture(merchant.apiKey, { operator_token: credential.credential, wallet_address: Wallet.createRandom().address, network: 'evm' });
    expect(off.status).toBe(402);
    expect(off.body.error.code).toBe('payment_required');
  });

  it('applies the per-second rate limit', async () => {
    const { credential } = await setup();
    const slow = await createMerchant(h.deps, { name: 'Slow', tier: 'free', rps: 1 });
    const body = { operator_token: credential.credential, wallet_address: Wallet.createRandom().address, network: 'evm' };
    const responses = await Promise.all(Array.from({ length: 4 }, () => capture(slow.apiKey, body)));
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited[0].body.error.code).toBe('rate_limited');
  });
});
