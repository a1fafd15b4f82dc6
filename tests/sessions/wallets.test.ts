import { Wallet } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { createMerchant, useClockedHarness } from '../support/harness';
import { ALICE, completeKyc, createSession, SESSION_TABLES } from './support';

describe('wallet claims and operator records', () => {
  const { h, clock } = useClockedHarness('2026-03-01T12:00:00Z', SESSION_TABLES);
  let apiKey: string;
  beforeEach(async () => {
    ({ apiKey } = await createMerchant(h.deps));
  });

  const v = () => h.deps.services.verification;

  async function sessionRow(id: string) {
    return (await h.deps.services.sessions.findById(id))!;
  }

  async function claimEvm(sessionId: string, wallet: { address: string; signMessage(m: string): Promise<string> }, claimKey: string | null) {
    const challenge = await v().challengeFor(await sessionRow(sessionId), claimKey);
    const signature = await wallet.signMessage(challenge.message);
    return {
      challenge,
      signature,
      claim: () => v().claimWallet({ sessionId, claimKey, challengeId: challenge.id, network: 'evm', address: wallet.address.toLowerCase(), signature }),
    };
  }

  it('issues a challenge with domain, session id, nonce and expiry', async () => {
    const s = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s.session_id);
    const c = await v().challengeFor(await sessionRow(s.session_id), claimKey);
    expect(c.message).toContain('Domain: kya.test');
    expect(c.message).toContain(`Session: ${s.session_id}`);
    expect(c.message).toMatch(/Nonce: [0-9A-Za-z]{22}/);
    expect(c.message).toContain('Expiration Time: 2026-03-01T12:10:00.000Z');
  });

  it('links an EVM wallet (EIP-191) to the verified operator and keeps the level at kyc_verified', async () => {
    const s = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s.session_id);
    const wallet = Wallet.createRandom();
    const { claim } = await claimEvm(s.session_id, wallet, claimKey);
    const result = await claim();
    const session = await sessionRow(s.session_id);
    expect(result.operatorId).toBe(session.operator_account_id);
    const rows = await h.deps.db('operator_wallets');
    expect(rows).toEqual([
      expect.objectContaining({ account_id: session.operator_account_id, network: 'evm', address: wallet.address.toLowerCase(), session_id: s.session_id }),
    ]);
    const operator = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(operator.verification_level).toBe('kyc_verified');
  });

  it('refuses claims before the identity step, from any other browser, and after the session expires', async () => {
    const s = await createSession(h, apiKey);
    const wallet = Wallet.createRandom();
    const pending = await sessionRow(s.session_id);
    expect(v().browserMayClaim(pending, null)).toBe(false);
    await expect(v().challengeFor(pending, 'a'.repeat(43))).rejects.toMatchObject({ reason: 'session_closed', status: 403 });

    const { claimKey } = await completeKyc(h, s.session_id);
    const { challenge, signature } = await claimEvm(s.session_id, wallet, claimKey);
    const attempt = (key: string | null) =>
      v().claimWallet({ sessionId: s.session_id, claimKey: key, challengeId: challenge.id, network: 'evm', address: wallet.address.toLowerCase(), signature });
    for (const stranger of [null, '', v().newClaimKey(), claimKey.slice(1)]) {
      await expect(attempt(stranger)).rejects.toMatchObject({ reason: 'browser_not_bound', status: 403, code: 'forbidden' });
      await expect(v().challengeFor(await sessionRow(s.session_id), stranger)).rejects.toMatchObject({ reason: 'browser_not_bound' });
    }
    expect(await h.deps.db('operator_wallets')).toHaveLength(0);
    // The stored value is a hash, never the key itself.
    expect((await sessionRow(s.session_id)).claim_key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await sessionRow(s.session_id)).claim_key_hash).not.toContain(claimKey);

    clock.advance(3600_000);
    await expect(attempt(claimKey)).rejects.toMatchObject({ reason: 'session_closed', status: 403 });
    expect(await h.deps.db('operator_wallets')).toHaveLength(0);
  });

  it('links a Solana wallet with an ed25519 signature (tweetnacl + bs58)', async () => {
    const s = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s.session_id);
    const keys = nacl.sign.keyPair();
    const address = bs58.encode(keys.publicKey);
    const challenge = await v().challengeFor(await sessionRow(s.session_id), claimKey);
    const signature = bs58.encode(nacl.sign.detached(new TextEncoder().encode(challenge.message), keys.secretKey));
    await v().claimWallet({ sessionId: s.session_id, claimKey, challengeId: challenge.id, network: 'solana', address, signature });
    expect(await h.deps.db('operator_wallets').where({ network: 'solana' }).first()).toMatchObject({ address });
  });

  it('refuses a replayed challenge', async () => {
    const s = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s.session_id);
    const { claim } = await claimEvm(s.session_id, Wallet.createRandom(), claimKey);
    await claim();
    await expect(claim()).rejects.toMatchObject({ reason: 'challenge_used', message: expect.stringContaining('already used') });
  });

  it('refuses an expired challenge', async () => {
    const s = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s.session_id);
    const { claim } = await claimEvm(s.session_id, Wallet.createRandom(), claimKey);
    clock.advance(601_000);
    await expect(claim()).rejects.toMatchObject({ reason: 'challenge_expired', message: expect.stringContaining('expired') });
    expect(await h.deps.db('operator_wallets')).toHaveLength(0);
  });

  it('refuses a signature made by another wallet or over another message', async () => {
    const s = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s.session_id);
    const owner = Wallet.createRandom();
    const challenge = await v().challengeFor(await sessionRow(s.session_id), claimKey);
    const bySomeoneElse = await Wallet.createRandom().signMessage(challenge.message);
    const otherMessage = await owner.signMessage('something else');
    for (const signature of [bySomeoneElse, otherMessage, '0x1234']) {
      await expect(
        v().claimWallet({ sessionId: s.session_id, claimKey, challengeId: challenge.id, network: 'evm', address: owner.address.toLowerCase(), signature }),
      ).rejects.toMatchObject({ reason: 'bad_signature' });
    }
  });

  it('refuses a wallet already claimed by another operator with a clear message', async () => {
    const wallet = Wallet.createRandom();
    const s1 = await createSession(h, apiKey);
    await (await claimEvm(s1.session_id, wallet, (await completeKyc(h, s1.session_id)).claimKey)).claim();
    const s2 = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s2.session_id, {
      full_name: 'Bob Other',
      date_of_birth: '1985-01-01',
      country: 'FR',
      document_number: 'FR998877',
    });
    await expect((await claimEvm(s2.session_id, wallet, claimKey)).claim()).rejects.toMatchObject({
      reason: 'claimed_by_other',
      message: expect.stringContaining('already linked to a different verified operator'),
    });
  });

  it('reuses the operator when the same person verifies again with the same wallet', async () => {
    const wallet = Wallet.createRandom();
    const s1 = await createSession(h, apiKey);
    await (await claimEvm(s1.session_id, wallet, (await completeKyc(h, s1.session_id)).claimKey)).claim();
    const first = (await sessionRow(s1.session_id)).operator_account_id;

    // Second session: the identity check, then the same wallet again.
    const s2 = await createSession(h, apiKey);
    const { claimKey } = await completeKyc(h, s2.session_id);
    expect((await sessionRow(s2.session_id)).operator_account_id).toBe(first);
    const again = await (await claimEvm(s2.session_id, wallet, claimKey)).claim();
    expect(again).toMatchObject({ operatorId: first, alreadyLinked: true });

    // Third session: identity check only; the same verified identity maps to the same operator.
    const s3 = await createSession(h, apiKey);
    await completeKyc(h, s3.session_id);
    expect((await sessionRow(s3.session_id)).operator_account_id).toBe(first);
    expect(await h.deps.db('accounts').where({ kind: 'operator' })).toHaveLength(1);
  });

  it('fails the session when an operator bound before the identity step is verified as a different person', async () => {
    const s1 = await createSession(h, apiKey);
    await completeKyc(h, s1.session_id);
    const alice = (await sessionRow(s1.session_id)).operator_account_id!;
    // A session already bound to Alice's operator (as sessions bound before wallet claims required the identity step).
    const s2 = await createSession(h, apiKey);
    await h.deps.db('sessions').where({ id: s2.session_id }).update({ operator_account_id: alice });
    await completeKyc(h, s2.session_id, { ...ALICE, full_name: 'Mallory Impostor' });
    expect((await sessionRow(s2.session_id)).status).toBe('failed');
    expect(await h.deps.db('accounts').where({ id: alice }).first()).toMatchObject({ kyc_status: 'verified' });
  });

  it('derives the age bracket from the date of birth', async () => {
    const cases: Array<[string, string]> = [
      ['2005-03-01', '21+'],
      ['2005-03-02', '18+'],
      ['2008-03-01', '18+'],
      ['2008-03-02', 'under_18'],
    ];
    for (const [dob, bracket] of cases) {
      const s = await createSession(h, apiKey);
      await completeKyc(h, s.session_id, { ...ALICE, full_name: `Person ${dob}`, date_of_birth: dob });
      const op = await h.deps
        .db('accounts')
        .where({ id: (await sessionRow(s.session_id)).operator_account_id })
        .first();
      expect([dob, op.age_bracket]).toEqual([dob, bracket]);
    }
  });
});
