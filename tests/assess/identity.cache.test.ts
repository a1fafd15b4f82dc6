// Two instances (two harnesses on one database and one Redis prefix) with the in-process identity cache: a
// state change committed through instance A is seen by instance B's very next assess, and when the pub/sub
// message is lost, B sees it once the cache TTL has passed (advanced on a shared test clock, no sleeps).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Wallet } from 'ethers';
import request from 'supertest';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { completeKyc, createSession } from '../sessions/support';
import { ASSESS_TABLES, evmAddress } from './seed';
import { eventually } from '../support/eventually';

const TTL_MS = 3000;

describe('identity state cached per instance, invalidated on every instance', () => {
  const clock = new TestClock(new Date());
  let a: Harness;
  let b: Harness;
  let key: string;
  let merchantId: string;
  let listFile: string;

  beforeAll(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-identity-'));
    listFile = path.join(dir, 'names.txt');
    fs.writeFileSync(listFile, 'Someone Unrelated Entirely\n');
    const redisPrefix = `kya:test:${crypto.randomBytes(6).toString('hex')}:`;
    const env = { SANCTIONS_NAME_SOURCE: listFile, SANCTIONS_NAME_ALT_SOURCE: '', IDENTITY_CACHE_TTL_MS: String(TTL_MS) };
    a = await createHarness({ env, redisPrefix, overrides: { clock, runWorkers: false } });
    b = await createHarness({ env, redisPrefix, overrides: { clock, runWorkers: false } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });
  beforeEach(async () => {
    clock.set(new Date());
    await resetTables(a.deps, [...ASSESS_TABLES, 'refresh_tokens', 'wallet_challenges', 'api_keys']);
    a.deps.services.identity.clear();
    b.deps.services.identity.clear();
    ({ apiKey: key, accountId: merchantId } = await createMerchant(a.deps));
  });

  /**
   * Resolves once B has received everything A published so far: a marker sent on A's publishing connection
   * (bypassing any patched publish) arrives after them, because Redis delivers one connection's messages in
   * order. "B's very next request" means the one after the invalidation reached B, not one racing it.
   */
  let markers = 0;
  const waiting = new Map<string, () => void>();
  async function deliveredToB(): Promise<void> {
    const id = String(++markers);
    const arrived = new Promise<void>((resolve) => waiting.set(id, resolve));
    await a.deps.redis!.publish(`${a.prefix}test:marker`, id);
    await arrived;
  }
  beforeAll(() => b.deps.pubsub.subscribe('test:marker', (id) => waiting.get(id)?.()));

  const assessOn = async (h: Harness, body: object, apiKey = key) => {
    if (h === b) await deliveredToB();
    return request(h.app).post('/v1/assess').set('X-API-Key', apiKey).send(body);
  };

  /** An operator verified through the sandbox KYC on A, and a way to claim wallets in its session. */
  async function verifiedOperator(fullName = 'Alice Example') {
    const s = await createSession(a, key);
    const { claimKey } = await completeKyc(a, s.session_id, {
      full_name: fullName,
      date_of_birth: '1980-04-12',
      country: 'DE',
      document_number: `P${crypto.randomInt(1e6, 1e7)}`,
    });
    const session = await a.deps.db('sessions').where({ id: s.session_id }).first();
    expect(session.status).toBe('verified');
    const claim = async (wallet: { address: string; signMessage(message: string): Promise<string> }) => {
      const verification = a.deps.services.verification;
      const challenge = await verification.challengeFor(session, claimKey);
      const signature = await wallet.signMessage(challenge.message);
      await verification.claimWallet({
        sessionId: session.id,
        claimKey,
        challengeId: challenge.id,
        network: 'evm',
        address: wallet.address.toLowerCase(),
        signature,
      });
    };
    return { operatorId: session.operator_account_id as string, claim };
  }

  async function mint(operatorId: string) {
    const { credential, token } = await a.deps.services.credentials.mint({ accountId: operatorId, ttlSeconds: 86_400, source: 'api' });
    return { id: credential.id, token };
  }

  /** Drops A's broadcasts, as if every message were lost on the way (A still forgets its own entries). */
  function losePubSubMessages(): () => void {
    const original = a.deps.pubsub.publish.bind(a.deps.pubsub);
    a.deps.pubsub.publish = async () => undefined;
    return () => {
      a.deps.pubsub.publish = original;
    };
  }

  it('links a wallet claimed on A in B’s very next assess', async () => {
    const op = await verifiedOperator();
    const first = Wallet.createRandom();
    const second = Wallet.createRandom();
    await op.claim(first);
    // The test clock is frozen: without a step the two claims tie on claimed_at and the canonical wallet falls
    // to address order instead of "earliest claim".
    clock.advance(1000);
    const policy = { require_kyc: true };
    const before = await assessOn(b, { address: second.address, policy });
    expect(before.body).toMatchObject({ decision: 'deny', linked_wallets: [second.address.toLowerCase()] });
    expect((await assessOn(b, { address: second.address, policy })).body.decision).toBe('deny'); // served from B's cache

    await op.claim(second);
    const after = await assessOn(b, { address: second.address, policy });
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({
      decision: 'allow',
      resolved_operator: first.address.toLowerCase(),
      linked_wallets: [first.address.toLowerCase(), second.address.toLowerCase()],
    });
  });

  it('refuses a credential revoked on A in B’s very next assess', async () => {
    const op = await verifiedOperator();
    const { id, token } = await mint(op.operatorId);
    expect((await assessOn(b, { operator_token: token })).status).toBe(200);
    expect((await assessOn(b, { operator_token: token })).status).toBe(200);

    await a.deps.services.credentials.revoke({ accountId: op.operatorId, idOrToken: id });
    const res = await assessOn(b, { operator_token: token });
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ code: 'token_expired', message: expect.any(String) });
  });

  it('denies an operator flagged by a sanctions re-screen on A in B’s very next assess', async () => {
    const op = await verifiedOperator('Carla Newlisted');
    const wallet = Wallet.createRandom();
    await op.claim(wallet);
    const body = { address: wallet.address, policy: { require_kyc: true, require_sanctions_clear: true } };
    expect((await assessOn(b, body)).body.decision).toBe('allow');

    fs.appendFileSync(listFile, 'Carla Newlisted|1980|DE\n');
    const result = await a.deps.services.screening.rescreenAll();
    expect(result.flagged_accounts).toEqual([op.operatorId]);
    const res = await assessOn(b, body);
    expect(res.body.decision).toBe('deny');
    expect(res.body.decision_reasons).toContain('sanctions_flagged');
  });

  it('resolves a wallet captured on A to its operator in B’s very next assess', async () => {
    const op = await verifiedOperator();
    const claimed = Wallet.createRandom();
    await op.claim(claimed);
    const { token } = await mint(op.operatorId);
    const payer = evmAddress();
    expect((await assessOn(b, { address: payer })).body).toMatchObject({ resolved_operator: payer, linked_wallets: [payer] });

    const captured = await a.deps.services.walletCapture.capture(merchantId, {
      operatorToken: token,
      network: 'evm',
      walletAddress: payer,
      idempotencyKey: null,
    });
    expect(captured).toEqual({ associated: true, first_seen: true });
    const res = await assessOn(b, { address: payer, policy: { require_kyc: true } });
    expect(res.body).toMatchObject({
      decision: 'allow',
      resolved_operator: claimed.address.toLowerCase(),
      linked_wallets: [claimed.address.toLowerCase(), payer],
    });
  });

  it('sees a verification result applied on A (the same person verified again, now flagged) in B’s very next assess', async () => {
    const person = { full_name: 'Erik Reverified', date_of_birth: '1975-02-03', country: 'SE', document_number: 'SE123456' };
    const s1 = await createSession(a, key);
    const { claimKey } = await completeKyc(a, s1.session_id, person);
    const session = await a.deps.db('sessions').where({ id: s1.session_id }).first();
    const wallet = Wallet.createRandom();
    const challenge = await a.deps.services.verification.challengeFor(session, claimKey);
    await a.deps.services.verification.claimWallet({
      sessionId: session.id,
      claimKey,
      challengeId: challenge.id,
      network: 'evm',
      address: wallet.address.toLowerCase(),
      signature: await wallet.signMessage(challenge.message),
    });
    const body = { address: wallet.address, policy: { require_kyc: true } };
    expect((await assessOn(b, body)).body).toMatchObject({ decision: 'allow', operator_verification: { level: 'kyc_verified' } });

    fs.appendFileSync(listFile, 'Erik Reverified|1975|SE\n');
    await a.deps.services.screening.reload();
    const s2 = await createSession(a, key);
    const applied = await completeKyc(a, s2.session_id, person);
    expect(applied.session).toMatchObject({ status: 'flagged', operator_account_id: session.operator_account_id });
    const after = await assessOn(b, body);
    expect(after.body.decision).toBe('deny');
    expect(after.body.operator_verification).toEqual({ level: 'kyc_verified' });
  });

  it('refuses an API key rotated on A, and a cancelled account, in B’s very next request', async () => {
    expect((await assessOn(b, { address: evmAddress() })).status).toBe(200);
    const { api_key: fresh } = await a.deps.services.accounts.rotateKey(merchantId);
    const old = await assessOn(b, { address: evmAddress() });
    expect(old.status).toBe(401);
    expect(old.body.error.code).toBe('signup_required');
    expect((await assessOn(b, { address: evmAddress() }, fresh)).status).toBe(200);

    await a.deps.services.accounts.cancel(merchantId);
    const cancelled = await assessOn(b, { address: evmAddress() }, fresh);
    expect(cancelled.status).toBe(403);
    expect(cancelled.body.error.code).toBe('account_cancelled');
  });

  describe('with the invalidation message lost', () => {
    it('stops honouring a revoked credential on B once the TTL has passed', async () => {
      const op = await verifiedOperator();
      const { id, token } = await mint(op.operatorId);
      expect((await assessOn(b, { operator_token: token })).status).toBe(200);
      const restore = losePubSubMessages();
      try {
        await a.deps.services.credentials.revoke({ accountId: op.operatorId, idOrToken: id });
        expect((await assessOn(a, { operator_token: token })).status).toBe(401); // A dropped its own entry
        clock.advance(TTL_MS - 1);
        expect((await assessOn(b, { operator_token: token })).status).toBe(200); // the message really was lost
        clock.advance(1);
        const res = await assessOn(b, { operator_token: token });
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe('token_expired');
      } finally {
        restore();
      }
    });

    it('stops honouring a cleared sanctions status on B once the TTL has passed', async () => {
      const op = await verifiedOperator('Dario Laterlisted');
      const wallet = Wallet.createRandom();
      await op.claim(wallet);
      const body = { address: wallet.address, policy: { require_sanctions_clear: true } };
      expect((await assessOn(b, body)).body.decision).toBe('allow');
      const restore = losePubSubMessages();
      try {
        fs.appendFileSync(listFile, 'Dario Laterlisted|1980|DE\n');
        await a.deps.services.screening.rescreenAll();
        clock.advance(TTL_MS - 1);
        expect((await assessOn(b, body)).body.decision).toBe('allow');
        clock.advance(1);
        expect((await assessOn(b, body)).body.decision).toBe('deny');
      } finally {
        restore();
      }
    });

    it('drops everything cached when the subscription reconnects (messages meanwhile may be lost)', async () => {
      const op = await verifiedOperator();
      const { id, token } = await mint(op.operatorId);
      expect((await assessOn(b, { operator_token: token })).status).toBe(200);
      const restore = losePubSubMessages();
      try {
        await a.deps.services.credentials.revoke({ accountId: op.operatorId, idOrToken: id });
      } finally {
        restore();
      }
      expect((await assessOn(b, { operator_token: token })).status).toBe(200);
      b.deps.services.identity.clear(); // what the resubscribe hook does
      expect((await assessOn(b, { operator_token: token })).status).toBe(401);
    });
  });

  it('does not cache a lookup that was in flight when an invalidation arrived', async () => {
    const wallet = evmAddress();
    const repo = b.deps.repos.operatorLookup;
    const spy = jest.spyOn(repo, 'lookup');
    try {
      const input = { mode: 'wallet' as const, wallet: { network: 'evm' as const, address: wallet }, signer: null, refresh: false };
      const generation = b.deps.services.identity.snapshot();
      const inFlight = b.deps.services.identity.lookup(input);
      // Any change counts (the lookup cannot know what it read); another wallet keeps the echo of this
      // message from dropping the entry filled below.
      await b.deps.services.identity.changed({ wallets: [{ network: 'evm', address: evmAddress() }] });
      await inFlight;
      // The change is dropped locally at once and again when its own pub/sub echo arrives: wait for the echo,
      // or it could land during the next lookup and (rightly) keep that one out of the cache too.
      await eventually(async () => b.deps.services.identity.snapshot() >= generation + 2);
      await b.deps.services.identity.lookup(input);
      expect(spy).toHaveBeenCalledTimes(2);
      await b.deps.services.identity.lookup(input);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});
