// Which wallets an operator owns, as reputation reads it: claimed wallets, and captures made under a
// credential that is not revoked — the same rule assess's lookup applies (server/repositories/ownedWallets.ts).
import { createHarness, resetTables, type Harness } from '../support/harness';
import { captureWallet, claimWallet, createOperator } from './support';

const WALLET = '0x' + '5'.repeat(40);
const WINDOW = { count: 2, firstSeen: new Date('2026-03-01T00:00:00Z'), lastSeen: new Date('2026-03-02T00:00:00Z') };

describe('operator wallet ownership', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  beforeEach(() => resetTables(h.deps, ['accounts', 'known_addresses']));
  afterAll(() => h.close());

  const lookupOwner = async () =>
    (await h.deps.repos.operatorLookup.lookup({ mode: 'wallet', wallet: { network: 'evm', address: WALLET }, signer: null, refresh: false })).claimed
      ?.account_id ?? null;

  it('counts a capture under a live credential: linked, with the capturing operator verification level', async () => {
    const operator = await createOperator(h.deps.db, 'kyc_verified');
    await captureWallet(h.deps.db, operator, WALLET, WINDOW);
    const repo = h.deps.repos.reputation;
    expect(await repo.isLinkedWallet({ network: 'evm', address: WALLET })).toBe(true);
    expect(await repo.verificationLevel({ network: 'evm', address: WALLET })).toBe('kyc_verified');
    expect((await repo.capturesOf({ network: 'evm', addresses: [WALLET] })).map((c) => [c.account_id, c.transaction_count])).toEqual([[operator, 2]]);
    expect(await lookupOwner()).toBe(operator);
  });

  it('ignores a capture once its credential is revoked, in reputation and in the assess lookup alike', async () => {
    const operator = await createOperator(h.deps.db, 'kyc_verified');
    await captureWallet(h.deps.db, operator, WALLET, WINDOW);
    await h.deps
      .db('credentials')
      .where({ account_id: operator })
      .update({ revoked_at: new Date('2026-03-03T00:00:00Z') });
    const repo = h.deps.repos.reputation;
    expect(await repo.isLinkedWallet({ network: 'evm', address: WALLET })).toBe(false);
    expect(await repo.verificationLevel({ network: 'evm', address: WALLET })).toBe('none');
    expect(await repo.capturesOf({ network: 'evm', addresses: [WALLET] })).toEqual([]);
    expect(await lookupOwner()).toBeNull();
  });

  it('keeps counting a capture whose credential merely expired', async () => {
    const operator = await createOperator(h.deps.db, 'wallet_claimed');
    await captureWallet(h.deps.db, operator, WALLET, WINDOW);
    await h.deps
      .db('credentials')
      .where({ account_id: operator })
      .update({ expires_at: new Date('2026-03-03T00:00:00Z') });
    expect(await h.deps.repos.reputation.verificationLevel({ network: 'evm', address: WALLET })).toBe('wallet_claimed');
    expect(await lookupOwner()).toBe(operator);
  });

  it('counts a claimed wallet whatever the state of the operator credentials', async () => {
    const operator = await createOperator(h.deps.db, 'wallet_claimed');
    await claimWallet(h.deps.db, operator, WALLET);
    expect(await h.deps.repos.reputation.isLinkedWallet({ network: 'evm', address: WALLET })).toBe(true);
    expect(await h.deps.repos.reputation.verificationLevel({ network: 'evm', address: WALLET })).toBe('wallet_claimed');
    expect(await lookupOwner()).toBe(operator);
  });
});
