import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { ASSESS_TABLES, evmAddress } from './seed';

const addr = (n: number) => '0x' + n.toString(16).padStart(40, '0');

describe('POST /v1/assess test mode', () => {
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    h = await createHarness();
    await resetTables(h.deps, ASSESS_TABLES);
    ({ apiKey: key } = await createMerchant(h.deps, { tier: 'free', quota: 1, rps: 1 }));
  });
  afterAll(() => h.close());

  const assess = (body: Record<string, unknown>) =>
    request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', key)
      .send({ test: true, ...body });

  it('allows the verified US 21+ fixture against a full policy', async () => {
    const res = await assess({
      address: addr(1),
      policy: { require_kyc: true, require_sanctions_clear: true, min_age: 21, blocked_jurisdictions: ['IR'], allowed_jurisdictions: ['US'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      decision: 'allow',
      decision_reasons: [],
      policy_result: { all_passed: true },
      identity_method: 'wallet',
      operator_verification: { level: 'kyc_verified', operator_type: 'individual', verified_at: '2025-01-15T12:00:00.000Z' },
      resolved_operator: addr(1),
      linked_wallets: [addr(1)],
      test: true,
    });
  });

  it.each([
    [2, { require_kyc: true }, 'deny', ['kyc_required'], true],
    [3, { require_sanctions_clear: true }, 'deny', ['sanctions_flagged'], false],
    [3, { require_kyc: true }, 'deny', ['sanctions_flagged'], false],
    [4, { require_kyc: true, allowed_jurisdictions: ['DE'] }, 'allow', [], false],
    [5, { min_age: 18 }, 'allow', [], false],
    [5, { min_age: 21 }, 'deny', ['age_insufficient'], false],
    [6, { require_kyc: true }, 'allow', [], false],
    [6, { blocked_jurisdictions: ['IR'] }, 'deny', ['jurisdiction_restricted'], false],
    [7, { allowed_jurisdictions: ['BR'] }, 'allow', [], false],
    [7, { allowed_jurisdictions: ['US'] }, 'deny', ['jurisdiction_restricted'], false],
  ])('fixture %i with policy %j → %s %j', async (n, policy, decision, reasons, hasVerifyUrl) => {
    const res = await assess({ address: addr(n), policy });
    expect(res.status).toBe(200);
    expect(res.body.decision).toBe(decision);
    expect(res.body.decision_reasons).toEqual(reasons);
    expect(res.body.policy_result.all_passed).toBe(decision === 'allow');
    expect(Boolean(res.body.verify_url)).toBe(hasVerifyUrl);
    expect(res.body.test).toBe(true);
  });

  it('answers no_policy_applied without a policy, like production', async () => {
    const res = await assess({ address: addr(2) });
    expect(res.body).toMatchObject({ decision: 'allow', decision_reasons: ['no_policy_applied'], operator_verification: { level: 'none' }, test: true });
  });

  it('is neither rate limited nor billed: many calls on a 1/s, 1/month account all succeed without quota headers', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await assess({ address: addr(1) });
      expect(res.status).toBe(200);
      expect(res.headers['x-quota-used']).toBeUndefined();
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('writes no audit row and records no address', async () => {
    await h.deps.services.auditLog.flush();
    expect(await h.deps.db('assess_audit')).toHaveLength(0);
    expect(await h.deps.db('known_addresses')).toHaveLength(0);
  });

  it('answers invalid_test_address for any other valid address', async () => {
    const res = await assess({ address: evmAddress() });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'invalid_test_address',
        message: 'Test mode works only with the reserved test addresses (0x…0001 to 0x…0007).',
        details: [{ field: 'address', message: 'is not a reserved test address' }],
      },
    });
  });

  it('answers invalid_address for a malformed reserved address', async () => {
    const res = await assess({ address: '0x000000000000000000000000000000000000001' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'invalid_address', message: 'Invalid wallet address.', details: [{ field: 'address', message: 'is not a valid EVM or Solana address' }] },
    });
  });

  it('computes signer_match against the fixture', async () => {
    const same = await assess({ address: addr(1), signer: { address: addr(1), network: 'evm' } });
    expect(same.body.signer_match.kind).toBe('pass');
    const other = await assess({ address: addr(1), signer: { address: addr(4), network: 'evm' } });
    expect(other.body.signer_match).toMatchObject({
      kind: 'wallet_signer_mismatch',
      claimed_operator: addr(1),
      signer_operator: addr(4),
      expected_signer: addr(1),
      actual_signer: addr(4),
    });
  });
});

describe('test mode with the database stopped', () => {
  it('still answers (the API key principal is cached in-process) while normal calls fail', async () => {
    const h = await createHarness();
    const { apiKey } = await createMerchant(h.deps, { tier: 'enterprise' });
    try {
      await request(h.app).post('/v1/assess').set('X-API-Key', apiKey).send({ address: evmAddress() }).expect(200);
      await h.deps.services.auditLog.flush();
      await h.deps.db.destroy();
      const test = await request(h.app)
        .post('/v1/assess')
        .set('X-API-Key', apiKey)
        .send({ test: true, address: addr(5), policy: { min_age: 21 } });
      expect(test.status).toBe(200);
      expect(test.body).toMatchObject({ decision: 'deny', decision_reasons: ['age_insufficient'], test: true });
      const real = await request(h.app).post('/v1/assess').set('X-API-Key', apiKey).send({ address: evmAddress() });
      // Proves the database really is gone for this app (a destroyed pool, not a network fault: 5xx).
      expect(real.status).toBeGreaterThanOrEqual(500);
    } finally {
      await h.close();
    }
  });
});
