import path from 'node:path';
import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { ASSESS_TABLES, captureWallet, claimWallet, createOperator, evmAddress, mintCredential } from './seed';

const FIXTURES = path.resolve(__dirname, '../fixtures/sanctions');
const SANCTIONED_ETH = '0x8589427373D6D84E98730D7795D8f6f8731FDA16';
const SOL_A = '7xiCBraX4QcQPFKgSdZzuNHBM3aaxvTvx4Byt2DtcNaz';
const SOL_B = 'BPFLoaderUpgradeab1e11111111111111111111111';

describe('POST /v1/assess in wallet mode', () => {
  let h: Harness;
  let key: string;
  let merchantId: string;
  const jobs: Array<{ name: string; data: unknown; jobId?: string }> = [];

  beforeAll(async () => {
    h = await createHarness({ env: { SANCTIONS_WALLET_SOURCE: path.join(FIXTURES, 'wallets.json') } });
    await resetTables(h.deps, ASSESS_TABLES);
    ({ apiKey: key, accountId: merchantId } = await createMerchant(h.deps, { tier: 'enterprise' }));
    const add = h.deps.jobs.add.bind(h.deps.jobs);
    h.deps.jobs.add = async (name, data, options) => {
      jobs.push({ name, data, jobId: options?.jobId });
      return add(name, data, options);
    };
  });
  afterAll(() => h.close());

  const assess = (body: unknown) =>
    request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', key)
      .send(body as object);

  it('allows with no_policy_applied and describes an unknown wallet as its own operator', async () => {
    const address = evmAddress();
    const res = await assess({ address: address.toUpperCase().replace('0X', '0x') });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      decision: 'allow',
      decision_reasons: ['no_policy_applied'],
      identity_method: 'wallet',
      operator_verification: { level: 'none' },
      resolved_operator: address,
      linked_wallets: [address],
    });
  });

  it('records a new address as known_unscored and queues one scoring job, then none for a known address', async () => {
    const address = evmAddress();
    jobs.length = 0;
    await assess({ address, chain: 'base' }).expect(200);
    const rows = await h.deps.db('known_addresses').where({ address });
    expect(rows).toHaveLength(1);
    expect(jobs).toEqual([{ name: 'reputation.score', data: { address, network: 'evm', chain: 'base', reason: 'new' }, jobId: `evm:${address}` }]);
    await assess({ address }).expect(200);
    expect(jobs).toHaveLength(1);
    await assess({ address, refresh: true }).expect(200);
    expect(jobs[1]).toEqual({ name: 'reputation.score', data: { address, network: 'evm', chain: null, reason: 'refresh' }, jobId: `evm:${address}` });
    const [row] = await h.deps.db('known_addresses').where({ address });
    expect(row.refresh_requested_at).not.toBeNull();
  });

  it('never returns score data', async () => {
    const res = await assess({ address: evmAddress(), policy: { require_kyc: true } });
    expect(JSON.stringify(res.body)).not.toMatch(/score|grade/);
  });

  it('allows a verified operator whose claimed wallet passes every rule, with the full policy_result and explanation', async () => {
    const op = await createOperator(h.deps, { jurisdiction: 'DE', age: '21+' });
    const wallet = evmAddress();
    await claimWallet(h.deps, op, wallet);
    const res = await assess({
      address: wallet,
      policy: { require_kyc: true, require_sanctions_clear: true, min_age: 21, blocked_jurisdictions: ['IR', 'KP'], allowed_jurisdictions: ['DE', 'FR'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.decision).toBe('allow');
    expect(res.body.decision_reasons).toEqual([]);
    expect(res.body.policy_result).toEqual({
      all_passed: true,
      checks: [
        { rule: 'require_kyc', passed: true, required: true, actual: 'verified' },
        { rule: 'require_sanctions_clear', passed: true, required: true, actual: 'clear' },
        { rule: 'min_age', passed: true, required: 21, actual: '21+' },
        { rule: 'blocked_jurisdictions', passed: true, required: ['IR', 'KP'], actual: 'DE' },
        { rule: 'allowed_jurisdictions', passed: true, required: ['DE', 'FR'], actual: 'DE' },
      ],
    });
    expect(res.body.explanation).toHaveLength(5);
    for (const e of res.body.explanation) {
      expect(e.how_to_remedy).toBeNull();
      expect(typeof e.message).toBe('string');
    }
    expect(res.body.operator_verification).toEqual({ level: 'kyc_verified', operator_type: 'individual', verified_at: '2025-03-01T10:00:00.000Z' });
    expect(res.body.verify_url).toBeUndefined();
  });

  it('denies kyc_required with a verify_url that starts a session for this merchant when opened', async () => {
    const res = await assess({ address: evmAddress(), policy: { require_kyc: true } });
    expect(res.body.decision).toBe('deny');
    expect(res.body.decision_reasons).toEqual(['kyc_required']);
    expect(res.body.verify_url).toMatch(/^http:\/\/kya\.test\/v1\/assess\/verify\/[A-Za-z0-9_-]+$/);
    expect(res.body.explanation[0]).toMatchObject({ rule: 'require_kyc', passed: false, actual: 'none' });
    expect(res.body.explanation[0].how_to_remedy).toMatch(/verify_url/);
    const open = await request(h.app).get(new URL(res.body.verify_url).pathname);
    expect(open.status).toBe(303);
    expect(open.headers.location).toMatch(/^http:\/\/kya\.test\/verify\/.+/);
    const sessionId = decodeURIComponent(open.headers.location.split('/verify/')[1]);
    const session = await h.deps.db('sessions').where({ id: sessionId }).first();
    expect(session).toMatchObject({ kind: 'merchant', merchant_account_id: merchantId, status: 'pending' });
  });

  it('answers 404 for a tampered verify link', async () => {
    const res = await assess({ address: evmAddress(), policy: { require_kyc: true } });
    const pathname = new URL(res.body.verify_url).pathname;
    const tampered = pathname.slice(0, -3) + (pathname.endsWith('AAA') ? 'BBB' : 'AAA');
    const open = await request(h.app).get(tampered);
    expect(open.status).toBe(404);
    expect(open.body).toEqual({ error: { code: 'not_found', message: 'This verification link is not valid.' } });
  });

  it('links claimed and captured wallets to one operator: every sibling resolves to the earliest claimed wallet', async () => {
    const op = await createOperator(h.deps);
    const first = evmAddress();
    const second = evmAddress();
    await claimWallet(h.deps, op, second, 'evm', new Date('2025-02-01T00:00:00Z'));
    await claimWallet(h.deps, op, first, 'evm', new Date('2025-01-01T00:00:00Z'));
    await claimWallet(h.deps, op, SOL_A, 'solana', new Date('2025-03-01T00:00:00Z'));
    const cred = await mintCredential(h.deps, op);
    const captured = evmAddress();
    await captureWallet(h.deps, { accountId: op, credentialId: cred.id, address: captured });
    for (const w of [first, second, SOL_A, captured]) {
      const res = await assess({ address: w });
      expect(res.body.resolved_operator).toBe(first);
      expect(res.body.linked_wallets).toEqual([first, second, SOL_A, captured]);
      expect(res.body.operator_verification.level).toBe('kyc_verified');
    }
  });

  it('resolves a capture-only operator to its lexically smallest active captured wallet and ignores revoked credentials', async () => {
    const op = await createOperator(h.deps);
    const live = await mintCredential(h.deps, op);
    const revoked = await mintCredential(h.deps, op);
    const a = '0x' + '1'.repeat(40);
    const b = '0x' + '2'.repeat(40);
    const gone = '0x' + '0'.repeat(39) + '9';
    await captureWallet(h.deps, { accountId: op, credentialId: live.id, address: b });
    await captureWallet(h.deps, { accountId: op, credentialId: live.id, address: a });
    await captureWallet(h.deps, { accountId: op, credentialId: revoked.id, address: gone });
    await h.deps.db('credentials').where({ id: revoked.id }).update({ revoked_at: new Date() });
    const res = await assess({ address: b });
    expect(res.body.resolved_operator).toBe(a);
    expect(res.body.linked_wallets).toEqual([a, b]);
    const orphan = await assess({ address: gone });
    expect(orphan.body.resolved_operator).toBe(gone);
    expect(orphan.body.operator_verification).toEqual({ level: 'none' });
  });

  it('keeps Solana addresses verbatim', async () => {
    const op = await createOperator(h.deps);
    await claimWallet(h.deps, op, SOL_B, 'solana');
    const res = await assess({ address: SOL_B });
    expect(res.body.resolved_operator).toBe(SOL_B);
    expect(res.body.linked_wallets).toEqual([SOL_B]);
    expect(await h.deps.db('known_addresses').where({ address: SOL_B, network: 'solana' })).toHaveLength(1);
    expect(await h.deps.db('known_addresses').where({ address: SOL_B.toLowerCase() })).toHaveLength(0);
  });

  describe('signer', () => {
    let op: string;
    let claimed: string;
    let sibling: string;
    beforeAll(async () => {
      op = await createOperator(h.deps);
      claimed = evmAddress();
      sibling = evmAddress();
      await claimWallet(h.deps, op, claimed, 'evm', new Date('2025-01-01T00:00:00Z'));
      await claimWallet(h.deps, op, sibling, 'evm', new Date('2025-01-02T00:00:00Z'));
    });

    it('passes when the signer is a sibling wallet of the same operator', async () => {
      const res = await assess({ address: claimed, signer: { address: sibling.toUpperCase().replace('0X', '0x'), network: 'evm' } });
      expect(res.body.decision).toBe('allow');
      expect(res.body.signer_match).toEqual({
        kind: 'pass',
        claimed_operator: claimed,
        signer_operator: claimed,
        agent_instructions: expect.any(String),
      });
      expect(JSON.parse(res.body.signer_match.agent_instructions)).toEqual({ action: 'proceed', steps: expect.any(Array), user_message: expect.any(String) });
      expect(res.body.signer_sanctions).toEqual({ status: 'clear' });
    });

    it('passes for byte-equal unlinked addresses and accepts the legacy resolve_signer name', async () => {
      const lone = evmAddress();
      const res = await assess({ address: lone, resolve_signer: { address: lone, network: 'evm' } });
      expect(res.body.signer_match).toEqual({ kind: 'pass', claimed_operator: null, signer_operator: null, agent_instructions: expect.any(String) });
    });

    it('reports a mismatch with expected/actual signer and the wallets the agent could re-sign from', async () => {
      const other = await createOperator(h.deps);
      const foreign = evmAddress();
      await claimWallet(h.deps, other, foreign);
      const res = await assess({ address: sibling, signer: { address: foreign, network: 'evm' } });
      // A mismatch alone does not change the decision: the gate enforces it.
      expect(res.body.decision).toBe('allow');
      expect(res.body.signer_match).toEqual({
        kind: 'wallet_signer_mismatch',
        claimed_operator: claimed,
        signer_operator: foreign,
        expected_signer: sibling,
        actual_signer: foreign,
        linked_wallets: [claimed, sibling],
        agent_instructions: expect.any(String),
      });
      const instructions = JSON.parse(res.body.signer_match.agent_instructions);
      expect(instructions.action).toBe('resign_with_linked_wallet');
      expect(instructions.steps[0]).toContain(claimed);
    });

    it('omits linked_wallets on a mismatch when the claimed wallet is unlinked', async () => {
      const res = await assess({ address: evmAddress(), signer: { address: evmAddress(), network: 'evm' } });
      expect(res.body.signer_match.kind).toBe('wallet_signer_mismatch');
      expect(res.body.signer_match).not.toHaveProperty('linked_wallets');
      expect(res.body.signer_match.claimed_operator).toBeNull();
      expect(res.body.signer_match.signer_operator).toBeNull();
    });

    it('asks for operator-token auth when the rail carries no wallet signature', async () => {
      const res = await assess({ address: claimed, signer: { address: null, network: 'evm' } });
      expect(res.body.signer_match).toEqual({
        kind: 'wallet_auth_requires_wallet_signing',
        claimed_operator: claimed,
        signer_operator: null,
        agent_instructions: expect.any(String),
      });
      expect(JSON.parse(res.body.signer_match.agent_instructions).action).toBe('use_operator_token');
    });

    it('denies sanctions_flagged when the signer is on the wallet list, whatever the policy', async () => {
      const res = await assess({ address: claimed, signer: { address: SANCTIONED_ETH.toLowerCase(), network: 'evm' } });
      expect(res.body.decision).toBe('deny');
      expect(res.body.decision_reasons).toEqual(['sanctions_flagged']);
      expect(res.body.signer_sanctions).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '32644', listed_at: '2022-08-08' });
      expect(res.body.verify_url).toBeUndefined();
    });

    it('appends sanctions_flagged after policy reasons without duplicates', async () => {
      const res = await assess({
        address: evmAddress(),
        policy: { require_kyc: true, require_sanctions_clear: true },
        signer: { address: SANCTIONED_ETH, network: 'evm' },
      });
      expect(res.body.decision_reasons).toEqual(['kyc_required', 'sanctions_flagged']);
    });
  });

  it('writes one audit row per assess behind the response, with a hash instead of the token', async () => {
    await h.deps.services.auditLog.flush();
    await resetTables(h.deps, ['assess_audit']);
    const address = evmAddress();
    const res = await assess({ address, policy: { require_kyc: true }, signer: { address: null, network: 'evm' } });
    await h.deps.services.auditLog.flush();
    const rows = await h.deps.repos.audit.listForAccount({ accountId: merchantId });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      account_id: merchantId,
      request_id: res.headers['x-request-id'],
      identity_kind: 'wallet',
      identity_value: address,
      decision: 'deny',
      reasons: ['kyc_required'],
      signer_kind: 'wallet_auth_requires_wallet_signing',
      signer_sanctions: 'clear',
    });
  });

  it('flushes buffered audit rows on a clean shutdown', async () => {
    const other = await createHarness({});
    let accountId = '';
    try {
      const merchant = await createMerchant(other.deps, { tier: 'enterprise' });
      accountId = merchant.accountId;
      const apiKey = merchant.apiKey;
      for (let i = 0; i < 5; i++) {
        await request(other.app).post('/v1/assess').set('X-API-Key', apiKey).send({ address: evmAddress() }).expect(200);
      }
    } finally {
      await other.close();
    }
    expect(await h.deps.repos.audit.listForAccount({ accountId })).toHaveLength(5);
  });
});
