import fc from 'fast-check';
import { parsePolicy, POLICY_RULES } from '../../shared/policy';
import { parseAssessRequest, parsePolicyOnce } from '../../server/routes/assess';
import { COUNTRY_CODES, isCountryCode } from '../../shared/countries';
import { evaluatePolicy, NO_OPERATOR, uniqueReasons, withExtraReasons, type OperatorState } from '../../server/services/policy';
import type { DecisionReason, KycActual, Policy } from '../../shared/types';

const NOW = new Date('2026-05-10T12:00:00Z');
const DAY = 86_400_000;
const ctx = { now: NOW, freshnessDays: 90 };
const verified = (over: Partial<OperatorState> = {}): OperatorState => ({
  kycStatus: 'verified',
  kycVerifiedAt: new Date('2026-01-01T00:00:00Z'),
  operatorType: 'individual',
  jurisdiction: 'US',
  ageBracket: '21+',
  ageVerified: true,
  sanctionsStatus: 'clear',
  sanctionsCheckedAt: new Date(NOW.getTime() - 10 * DAY),
  verificationLevel: 'kyc_verified',
  ...over,
});

describe('policy engine', () => {
  it('allows with no_policy_applied and no policy_result when no policy is given', () => {
    expect(evaluatePolicy(null, NO_OPERATOR, ctx)).toEqual({ decision: 'allow', reasons: ['no_policy_applied'] });
    expect(evaluatePolicy({}, verified(), ctx)).toEqual({ decision: 'allow', reasons: ['no_policy_applied'] });
  });

  describe('require_kyc', () => {
    it.each<[KycActual, boolean, DecisionReason | null, boolean]>([
      ['verified', true, null, false],
      ['none', false, 'kyc_required', true],
      ['pending', false, 'kyc_pending', true],
      ['failed', false, 'kyc_failed', true],
      ['flagged', false, 'sanctions_flagged', false],
    ])('kyc %s → passed %s, reason %s (remedy %s)', (kyc, passed, reason, remedy) => {
      const r = evaluatePolicy({ require_kyc: true }, verified({ kycStatus: kyc }), ctx);
      expect(r.policyResult).toEqual({ all_passed: passed, checks: [{ rule: 'require_kyc', passed, required: true, actual: kyc }] });
      expect(r.reasons).toEqual(reason ? [reason] : []);
      expect(r.decision).toBe(passed ? 'allow' : 'deny');
      expect(r.explanation![0].how_to_remedy === null).toBe(!remedy);
    });

    it('passes require_kyc: false for anyone', () => {
      expect(evaluatePolicy({ require_kyc: false }, NO_OPERATOR, ctx)).toMatchObject({ decision: 'allow', reasons: [] });
    });
  });

  describe('require_sanctions_clear', () => {
    const check = (op: OperatorState, freshnessDays = 90) => evaluatePolicy({ require_sanctions_clear: true }, op, { now: NOW, freshnessDays });
    it('passes when screened clear within the window', () => {
      expect(check(verified()).policyResult!.checks[0]).toEqual({ rule: 'require_sanctions_clear', passed: true, required: true, actual: 'clear' });
    });
    it('passes on the last day of the window and denies kyc_required one day later', () => {
      expect(check(verified({ sanctionsCheckedAt: new Date(NOW.getTime() - 90 * DAY) })).decision).toBe('allow');
      const stale = check(verified({ sanctionsCheckedAt: new Date(NOW.getTime() - 91 * DAY) }));
      expect(stale.reasons).toEqual(['kyc_required']);
      expect(stale.policyResult!.checks[0].actual).toBe('unscreened');
    });
    it('uses the account freshness window when it is shorter', () => {
      expect(check(verified({ sanctionsCheckedAt: new Date(NOW.getTime() - 10 * DAY) }), 7).reasons).toEqual(['kyc_required']);
    });
    it('denies kyc_required for never screened and never verified operators', () => {
      expect(check(verified({ sanctionsStatus: null, sanctionsCheckedAt: null })).policyResult!.checks[0].actual).toBe('unscreened');
      const none = check(NO_OPERATOR);
      expect(none.reasons).toEqual(['kyc_required']);
      expect(none.policyResult!.checks[0].actual).toBe('none');
    });
    it('denies sanctions_flagged without a remedy for a screening hit', () => {
      const hit = check(verified({ sanctionsStatus: 'flagged', kycStatus: 'flagged' }));
      expect(hit.reasons).toEqual(['sanctions_flagged']);
      expect(hit.policyResult!.checks[0].actual).toBe('flagged');
      expect(hit.explanation![0].how_to_remedy).toBeNull();
    });
  });

  describe('min_age', () => {
    it.each([
      [18, '18+', true],
      [18, '21+', true],
      [21, '21+', true],
      [21, '18+', false],
      [18, 'under_18', false],
    ] as const)('min_age %i with bracket %s → passed %s', (min, bracket, passed) => {
      const r = evaluatePolicy({ min_age: min }, verified({ ageBracket: bracket }), ctx);
      expect(r.policyResult!.checks[0]).toEqual({ rule: 'min_age', passed, required: min, actual: bracket });
      expect(r.reasons).toEqual(passed ? [] : ['age_insufficient']);
      // A verified age below the minimum cannot be remedied.
      expect(r.explanation![0].how_to_remedy).toBeNull();
    });
    it('asks for verification when the age is unknown', () => {
      const r = evaluatePolicy({ min_age: 18 }, NO_OPERATOR, ctx);
      expect(r.reasons).toEqual(['kyc_required']);
      expect(r.policyResult!.checks[0].actual).toBe('none');
      expect(evaluatePolicy({ min_age: 18 }, verified({ ageVerified: false }), ctx).reasons).toEqual(['kyc_required']);
    });
  });

  describe('jurisdictions', () => {
    it('blocks a listed country and allows others', () => {
      expect(evaluatePolicy({ blocked_jurisdictions: ['IR', 'KP'] }, verified({ jurisdiction: 'IR' }), ctx).reasons).toEqual(['jurisdiction_restricted']);
      expect(evaluatePolicy({ blocked_jurisdictions: ['IR'] }, verified({ jurisdiction: 'US' }), ctx).decision).toBe('allow');
    });
    it('allows only listed countries', () => {
      expect(evaluatePolicy({ allowed_jurisdictions: ['US'] }, verified({ jurisdiction: 'BR' }), ctx).reasons).toEqual(['jurisdiction_restricted']);
      expect(evaluatePolicy({ allowed_jurisdictions: ['US', 'BR'] }, verified({ jurisdiction: 'BR' }), ctx).decision).toBe('allow');
    });
    it('emits jurisdiction_restricted only once KYC is verified', () => {
      expect(evaluatePolicy({ blocked_jurisdictions: ['IR'] }, NO_OPERATOR, ctx).reasons).toEqual(['kyc_required']);
      expect(evaluatePolicy({ allowed_jurisdictions: ['US'] }, verified({ kycStatus: 'pending', jurisdiction: 'IR' }), ctx).reasons).toEqual(['kyc_pending']);
    });
    it('treats an empty list as no restriction', () => {
      expect(evaluatePolicy({ blocked_jurisdictions: [], allowed_jurisdictions: [] }, NO_OPERATOR, ctx)).toMatchObject({ decision: 'allow', reasons: [] });
    });
  });

  it('deduplicates reasons in rule order and keeps one check and one explanation per rule', () => {
    const r = evaluatePolicy(
      { require_kyc: true, require_sanctions_clear: true, min_age: 21, blocked_jurisdictions: ['IR'], allowed_jurisdictions: ['US'] },
      NO_OPERATOR,
      ctx,
    );
    expect(r.reasons).toEqual(['kyc_required']);
    expect(r.policyResult!.checks.map((c) => c.rule)).toEqual(POLICY_RULES);
    expect(r.explanation).toHaveLength(5);
    const mixed = evaluatePolicy({ require_kyc: true, min_age: 21, allowed_jurisdictions: ['US'] }, verified({ ageBracket: '18+', jurisdiction: 'BR' }), ctx);
    expect(mixed.reasons).toEqual(['age_insufficient', 'jurisdiction_restricted']);
  });

  it('adds signer reasons after policy reasons and drops no_policy_applied', () => {
    expect(withExtraReasons(evaluatePolicy(null, NO_OPERATOR, ctx), ['sanctions_flagged'])).toEqual({ decision: 'deny', reasons: ['sanctions_flagged'] });
    expect(uniqueReasons(['kyc_required', 'sanctions_flagged', 'kyc_required'])).toEqual(['kyc_required', 'sanctions_flagged']);
  });

  it('holds for any policy and operator: deny iff a check failed, reasons unique, explanations mirror checks', () => {
    const country = fc.constantFrom('US', 'DE', 'IR', 'BR', 'FR');
    const policyArb = fc.record(
      {
        require_kyc: fc.boolean(),
        require_sanctions_clear: fc.boolean(),
        min_age: fc.constantFrom(18 as const, 21 as const),
        blocked_jurisdictions: fc.array(country, { maxLength: 3 }),
        allowed_jurisdictions: fc.array(country, { maxLength: 3 }),
      },
      { requiredKeys: [] },
    );
    const opArb = fc.record({
      kycStatus: fc.constantFrom<KycActual>('none', 'pending', 'verified', 'failed', 'flagged'),
      jurisdiction: fc.option(country, { nil: null }),
      ageBracket: fc.constantFrom('18+', '21+', 'under_18', null),
      ageVerified: fc.boolean(),
      sanctionsStatus: fc.constantFrom<'clear' | 'flagged' | null>('clear', 'flagged', null),
      checkedDaysAgo: fc.option(fc.integer({ min: 0, max: 400 }), { nil: null }),
    });
    fc.assert(
      fc.property(policyArb, opArb, (policy: Policy, o) => {
        const op = verified({ ...o, sanctionsCheckedAt: o.checkedDaysAgo === null ? null : new Date(NOW.getTime() - o.checkedDaysAgo * DAY) });
        const r = evaluatePolicy(policy, op, ctx);
        const rules = Object.keys(policy);
        if (rules.length === 0) return r.reasons[0] === 'no_policy_applied' && r.decision === 'allow';
        const failed = r.policyResult!.checks.filter((c) => !c.passed);
        const jurisdictionRestricted = r.reasons.includes('jurisdiction_restricted');
        return (
          (r.decision === 'deny') === failed.length > 0 &&
          new Set(r.reasons).size === r.reasons.length &&
          (failed.length === 0) === (r.reasons.length === 0) &&
          r.explanation!.length === r.policyResult!.checks.length &&
          r.explanation!.every((e) => (e.passed ? e.how_to_remedy === null : true)) &&
          (!jurisdictionRestricted || op.kycStatus === 'verified')
        );
      }),
      { numRuns: 2000 },
    );
  });
});

describe('policy parsing', () => {
  it('parses each distinct policy once and answers repeats with the same, unchanged result', () => {
    const raw = { require_kyc: true, min_age: 21, blocked_jurisdictions: ['IR'] };
    const first = parsePolicyOnce(raw);
    expect(parsePolicyOnce({ ...raw })).toBe(first);
    expect(first).toEqual(parsePolicy(raw));
    const body = { address: '0x' + 'ab'.repeat(20), policy: raw };
    expect(parseAssessRequest(body)).toEqual(parseAssessRequest(body));
    expect(parsePolicyOnce(raw)).toEqual(parsePolicy(raw));
    const bad = { require_kyc: 'yes', foo: 1 };
    expect(parsePolicyOnce(bad)).toEqual(parsePolicy(bad));
    expect(parsePolicyOnce({ ...bad })).toEqual(parsePolicy(bad));
  });

  it('returns the typed policy and its rules; an unknown key is a problem with the close spelling suggested', () => {
    expect(parsePolicy({ require_kyc: true, min_age: 21, allowed_jurisdictions: ['US', 'US'] })).toEqual({
      policy: { require_kyc: true, min_age: 21, allowed_jurisdictions: ['US'] },
      rules: ['require_kyc', 'min_age', 'allowed_jurisdictions'],
      warnings: [],
      problems: [],
    });
    expect(parsePolicy({ require_kyc: true, requireSanctionsClear: true, foo: 1 })).toEqual({
      policy: null,
      rules: [],
      warnings: [],
      problems: [
        { field: 'policy.requireSanctionsClear', message: 'policy.requireSanctionsClear is not allowed; did you mean require_sanctions_clear?' },
        {
          field: 'policy.foo',
          message: 'policy.foo is not allowed; policy keys are require_kyc, require_sanctions_clear, min_age, blocked_jurisdictions, allowed_jurisdictions',
        },
      ],
    });
    expect(parsePolicy(undefined)).toEqual({ policy: null, rules: [], warnings: [], problems: [] });
  });

  it('knows all 249 ISO 3166-1 alpha-2 codes and Kosovo (XK), uppercase only', () => {
    expect(COUNTRY_CODES).toHaveLength(250);
    expect(isCountryCode('XK')).toBe(true);
    expect(isCountryCode('US')).toBe(true);
    expect(isCountryCode('us')).toBe(false);
    expect(isCountryCode('USA')).toBe(false);
    expect(isCountryCode('UK')).toBe(false);
  });
});
