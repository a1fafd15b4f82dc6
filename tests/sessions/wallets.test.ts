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

  async function claimEvm(sessionId: string, wallet: { address: string; signMessage(m: string): Promise<string> }) {
    const challenge = await v().challengeFor(await sessionRow(sessionId));
    const signature = await wallet.signMessage(challenge.message);
    return { challenge, signature, claim: () => v().claimWallet({ sessionId, challengeId: challenge.id, network: 'evm', address: wallet.address, signature }) };
  }

  it('issues a challenge with domain, session id, nonce and expiry', async () => {
    const s = await createSession(h, apiKey);
    const c = await v().challengeFor(await sessionRow(s.session_id));
    expect(c.message).toContain('Domain: kya.test');
    expect(c.message).toContain(`Session: ${s.session_id}`);
    expect(c.message).toMatch(/Nonce: [0-9A-Za-z]{22}/);
    expect(c.message).toContain('Expiration Time: 2026-03-01T12:10:00.000Z');
  });

  it('links an EVM wallet (EIP-191) to the verified operator and keeps the level at kyc_verified', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id);
    const wallet = Wallet.createRandom();
    const { claim } = await claimEvm(s.session_id, wallet);
    const result = await claim();
    const session = await sessionRow(s.session_id);
    expect(result.operatorId).toBe(session.operator_account_id);
    const rows = await h.deps.db('operator_wallets');
    expect(rows).toEqual([expect.objectContaining({ account_id: session.operator_account_id, network: 'evm', address: wallet.address.toLowerCase(), session_id: s.session_id })]);
    const operator = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(operator.verification_level).toBe('kyc_verified');
  });

  it('raises a wallet-only operator to wallet_claimed, then to kyc_verified', async () => {
    const s = await createSession(h, apiKey);
    const { claim } = await claimEvm(s.session_id, Wallet.createRandom());
    const { operatorId } = await claim();
    expect((await h.deps.db('accounts').where({ id: operatorId }).first()).verification_level).toBe('wallet_claimed');
    await completeKyc(h, s.session_id);
    expect((await h.deps.db('accounts').where({ id: operatorId }).first())).toMatchObject({ verification_level: 'kyc_verified', kyc_status: 'verified' });
    expect(await h.deps.db('accounts').where({ kind: 'operator' })).toHaveLength(1);
  });

  it('links a Solana wallet with an ed25519 signature (tweetnacl + bs58)', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id);
    const keys = nacl.sign.keyPair();
    const address = bs58.encode(keys.publicKey);
    const challenge = await v().challengeFor(await sessionRow(s.session_id));
    const signature = bs58.encode(nacl.sign.detached(new TextEncoder().encode(challenge.message), keys.secretKey));
    await v().claimWallet({ sessionId: s.session_id, challengeId: challenge.id, network: 'solana', address, signature });
    expect(await h.deps.db('operator_wallets').where({ network: 'solana' }).first()).toMatchObject({ address });
  });

  it('refuses a replayed challenge', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id);
    const { claim } = await claimEvm(s.session_id, Wallet.createRandom());
    await claim();
    await expect(claim()).rejects.toMatchObject({ reason: 'challenge_used', message: expect.stringContaining('already used') });
  });

  it('refuses an expired challenge', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id);
    const { claim } = await claimEvm(s.session_id, Wallet.createRandom());
    clock.advance(601_000);
    await expect(claim()).rejects.toMatchObject({ reason: 'challenge_expired', message: expect.stringContaining('expired') });
    expect(await h.deps.db('operator_wallets')).toHaveLength(0);
  });

  it('refuses a signature made by another wallet or over another message', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id);
    const owner = Wallet.createRandom();
    const challenge = await v().challengeFor(await sessionRow(s.session_id));
    const bySomeoneElse = await Wallet.createRandom().signMessage(challenge.message);
    const otherMessage = await owner.signMessage('something else');
    for (const signature of [bySomeoneElse, otherMessage, '0x1234']) {
      await expect(v().claimWallet({ sessionId: s.session_id, challengeId: challenge.id, network: 'evm', address: owner.address, signature })).rejects.toMatchObject({ reason: 'bad_signature' });
    }
  });

  it('refuses a wallet already claimed by another operator with a clear message', async () => {
    const wallet = Wallet.createRandom();
    const s1 = await createSession(h, apiKey);
    await completeKyc(h, s1.session_id);
    await (await claimEvm(s1.session_id, wallet)).claim();
    const s2 = await createSession(h, apiKey);
    await completeKyc(h, s2.session_id, { full_name: 'Bob Other', date_of_birth: '1985-01-01', country: 'FR', document_number: 'FR998877' });
    await expect((await claimEvm(s2.session_id, wallet)).claim()).rejects.toMatchObject({
      reason: 'claimed_by_other',
      message: expect.stringContaining('already linked to a different verified operator'),
    });
  });

  it('reuses the operator when the same person verifies again with the same wallet', async () => {
    const wallet = Wallet.createRandom();
    const s1 = await createSession(h, apiKey);
    await completeKyc(h, s1.session_id);
    await (await claimEvm(s1.session_id, wallet)).claim();
    const first = (await sessionRow(s1.session_id)).operator_account_id;

    // Second session: the wallet is claimed first, then the identity check.
    const s2 = await createSession(h, apiKey);
    const again = await (await claimEvm(s2.session_id, wallet)).claim();
    expect(again).toMatchObject({ operatorId: first, alreadyLinked: true });
    await completeKyc(h, s2.session_id);
    expect((await sessionRow(s2.session_id)).operator_account_id).toBe(first);

    // Third session: identity check only; the same verified identity maps to the same operator.
    const s3 = await createSession(h, apiKey);
    await completeKyc(h, s3.session_id);
    expect((await sessionRow(s3.session_id)).operator_account_id).toBe(first);
    expect(await h.deps.db('accounts').where({ kind: 'operator' })).toHaveLength(1);
  });

  it('fails the session when a wallet-bound operator is verified as a different person', async () => {
    const wallet = Wallet.createRandom();
    const s1 = await createSession(h, apiKey);
    await completeKyc(h, s1.session_id);
    await (await claimEvm(s1.session_id, wallet)).claim();
    const s2 = await createSession(h, apiKey);
    await (await claimEvm(s2.session_id, wallet)).claim();
    await completeKyc(h, s2.session_id, { ...ALICE, full_name: 'Mallory Impostor' });
    expect((await sessionRow(s2.session_id)).status).toBe('failed');
    const operator = await h.deps.db('accounts').where({ id: (await sessionRow(s1.session_id)).operator_account_id }).first();
    expect(operator.kyc_status).toBe('verified');
  });

  it('derives the age bracket from the date of birth', async () => {
    const cases: Array<[string, string]> = [['2005-03-01', '21+'], ['2005-03-02', '18+'], ['2008-03-01', '18+'], ['2008-03-02', 'under_18']];
    for (const [dob, bracket] of cases) {
      const s = await createSession(h, apiKey);
      await completeKyc(h, s.session_id, { ...ALICE, full_name: `Person ${dob}`, date_of_birth: dob });
      const op = await h.deps.db('accounts').where({ id: (await sessionRow(s.session_id)).operator_account_id }).first();
      expect([dob, op.age_bracket]).toEqual([dob, bracket]);
    }
  });
});
