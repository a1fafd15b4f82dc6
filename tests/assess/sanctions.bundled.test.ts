// With no sanctions settings, the bundled OFAC snapshots are the lists: real listed wallets are denied as
// signers (with their OFAC label and SDN uid), unlisted ones are clear, a clear person verified on a fresh
// install passes require_sanctions_clear, and a listed person is flagged with the reason recorded.
import request from 'supertest';
import { getAddress } from 'ethers';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { claimWallet, evmAddress } from './seed';
import { completeKyc, createSession, SESSION_TABLES } from '../sessions/support';

jest.setTimeout(60_000);

// Listed in the bundled snapshot: under ETH in sdn.csv (Lazarus Group, ent_num 27307); under USDT in sdn.csv
// (ent_num 47635) and the plain USDT list; and only in the plain ETH list (no SDN uid there), written here in
// its mixed-case checksum form.
const LAZARUS_ETH = '0x098B716B8Aaf21512996dC57EB0615e2383E2f96';
const USDT_EVM = '0x175d44451403Edf28469dF03A9280c1197ADb92c';
const PLAIN_ETH_MIXED = getAddress('0x19aa5fe80d33a56d56c78e82ea5e50e5d80b4dff');

describe('bundled OFAC snapshots as the default lists', () => {
  let h: Harness;
  let apiKey: string;

  beforeAll(async () => {
    // A list loaded or fetched earlier would take precedence over the bundled default: start from none.
    const cleanup = await createHarness();
    await resetTables(cleanup.deps, ['sanctions_wallet_lists', 'sanctions_name_lists']);
    await cleanup.close();
    h = await createHarness({ env: { SANCTIONS_NAME_SOURCE: undefined, SANCTIONS_NAME_ALT_SOURCE: undefined } }); // no SANCTIONS_* variables
    await resetTables(h.deps, SESSION_TABLES);
    ({ apiKey } = await createMerchant(h.deps));
  });
  afterAll(() => h.close());

  const assessSigner = (address: string) =>
    request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', apiKey)
      .send({ address: evmAddress(), signer: { address, network: 'evm' } });

  it('denies real listed signer wallets sanctions_flagged with their OFAC label and SDN uid', async () => {
    expect(PLAIN_ETH_MIXED).not.toBe(PLAIN_ETH_MIXED.toLowerCase());
    const cases: Array<[string, Record<string, unknown>]> = [
      [LAZARUS_ETH, { sanctioned: true, ofac_label: 'ETH', sdn_uid: '27307', listed_at: null }],
      [USDT_EVM, { sanctioned: true, ofac_label: 'USDT', sdn_uid: '47635', listed_at: null }],
      [PLAIN_ETH_MIXED, { sanctioned: true, ofac_label: 'ETH', sdn_uid: 'unknown', listed_at: null }],
    ];
    for (const [address, hit] of cases) {
      const res = await assessSigner(address);
      expect(res.status).toBe(200);
      expect(res.body.decision).toBe('deny');
      expect(res.body.decision_reasons).toEqual(['sanctions_flagged']);
      expect(res.body.signer_sanctions).toEqual(hit);
    }
  });

  it('clears an unlisted signer', async () => {
    const res = await assessSigner(evmAddress());
    expect(res.body.decision).toBe('allow');
    expect(res.body.signer_sanctions).toEqual({ status: 'clear' });
  });

  it('reports each list with its source, entries, as_of and age in /readyz', async () => {
    const res = await request(h.app).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body.failed).toEqual([]);
    expect(res.body.sanctions.wallets).toEqual({
      list: 'wallets',
      status: 'ok',
      source: 'bundled',
      entries: 637,
      as_of: '2024-09-27T00:00:00.000Z',
      age_seconds: expect.any(Number),
      max_age_hours: null,
      reason: null,
    });
    expect(res.body.sanctions.names).toMatchObject({ list: 'names', status: 'ok', source: 'bundled', as_of: '2024-05-03T00:00:00.000Z' });
    expect(res.body.sanctions.names.entries).toBeGreaterThan(10_000);
    expect(res.body.sanctions.wallets.age_seconds).toBeGreaterThan(365 * 86_400);
  });

  it('screens a person at verification, so require_sanctions_clear passes for a clear one on a fresh install', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id, { full_name: 'Alice Example', date_of_birth: '1990-04-12', country: 'DE', document_number: 'P1234567' });
    const session = await h.deps.db('sessions').where({ id: s.session_id }).first();
    expect(session.status).toBe('verified');
    const operator = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(operator).toMatchObject({ kyc_status: 'verified', sanctions_status: 'clear', sanctions_match: null });
    expect(operator.sanctions_checked_at).toBeInstanceOf(Date);
    const wallet = evmAddress();
    await claimWallet(h.deps, operator.id, wallet);
    const res = await request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', apiKey)
      .send({ address: wallet, policy: { require_kyc: true, require_sanctions_clear: true } });
    expect(res.body.decision).toBe('allow');
    expect(res.body.policy_result.checks).toContainEqual({ rule: 'require_sanctions_clear', passed: true, required: true, actual: 'clear' });
  });

  it('flags a listed person at verification and records which listed name matched, the score and the qualifiers', async () => {
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id, { full_name: 'Vladimir Vladimirovich Putin', date_of_birth: '1952-10-07', country: 'RU', document_number: 'RU0001' });
    const session = await h.deps.db('sessions').where({ id: s.session_id }).first();
    expect(session.status).toBe('flagged');
    const operator = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(operator).toMatchObject({ kyc_status: 'flagged', sanctions_status: 'flagged' });
    expect(operator.sanctions_match).toEqual({
      uid: '35096',
      name: 'PUTIN, Vladimir Vladimirovich',
      matched_name: expect.any(String),
      score: 1,
      name_score: 1,
      dob: 'match',
      country: 'match',
      listed_dob_years: [1952],
      listed_countries: ['RU'],
    });
  });
});
