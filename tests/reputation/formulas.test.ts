// The v1 score model: grade boundaries, dimension ranges, confidence, classification rules and the tail-risk
// operator average (pure functions; property checks with fast-check).
import fc from 'fast-check';
import {
  classify, confidence, dimensions, emptyFeatures, feedbackKind, feedbackValue, grade, operatorScore, sat, scoreFeatures, trustDimension, type Features,
} from '../../server/reputation/formulas';

const features = (patch: Partial<Features> = {}): Features => ({ ...emptyFeatures(), ...patch });

const arbFeatures: fc.Arbitrary<Features> = fc.record({
  registeredAgents: fc.nat(20),
  isAgentWallet: fc.boolean(),
  registrationResolved: fc.boolean(),
  hasName: fc.boolean(),
  services: fc.subarray(['a2a', 'mcp', 'web', 'ens', 'did', 'email']),
  x402Support: fc.boolean(),
  active: fc.constantFrom(true, false, null),
  hasA2aCard: fc.boolean(),
  hasWebsite: fc.boolean(),
  websiteReachable: fc.constantFrom(true, false, null),
  websiteMentionsMcp: fc.constantFrom(true, false, null),
  websiteMentionsX402: fc.constantFrom(true, false, null),
  hasGithub: fc.boolean(),
  githubStars: fc.option(fc.nat(1_000_000)),
  hasEns: fc.boolean(),
  verificationLevel: fc.constantFrom('none' as const, 'wallet_claimed' as const, 'kyc_verified' as const),
  candidate: fc.record({ asPayer: fc.nat(1e6), asPayee: fc.nat(1e6), counterparties: fc.nat(1e5), activeDays: fc.nat(3650), activeMonths: fc.nat(120) }),
  verified: fc.record({ asPayer: fc.nat(1e5), asPayee: fc.nat(1e5) }),
  feedback: fc.record({ count: fc.nat(1e4), clients: fc.nat(1e4), trustAvg: fc.option(fc.double({ min: -1e6, max: 1e6, noNaN: true })) }),
});

describe('score model v1', () => {
  it('grades A at 80, B at 65, C at 50, D at 35 and F below', () => {
    expect([100, 80, 79, 65, 64, 50, 49, 35, 34, 0].map(grade)).toEqual(['A', 'A', 'B', 'B', 'C', 'C', 'D', 'D', 'F', 'F']);
  });

  it('keeps every dimension within 0–100, confidence within 0–1 and the grade consistent with the score', () => {
    fc.assert(
      fc.property(arbFeatures, (f) => {
        const r = scoreFeatures(f);
        for (const v of Object.values(r.dimensions)) expect(v >= 0 && v <= 100).toBe(true);
        expect(r.confidence >= 0 && r.confidence <= 1).toBe(true);
        expect(Number.isInteger(r.score) && r.score >= 0 && r.score <= 100).toBe(true);
        expect(r.grade).toBe(grade(r.score));
      }),
    );
  });

  it('gives an address with no evidence a low F score, zero confidence and entity type unknown', () => {
    const r = scoreFeatures(features());
    expect(r).toEqual({ score: 6, grade: 'F', confidence: 0, dimensions: { identity: 0, activity: 0, capability: 0, reach: 0, trust: 40 } });
    expect(classify(features(), 0)).toEqual({ entity_type: 'unknown', confidence: 0, reasons: ['no_indexed_activity'] });
  });

  it('grows confidence with evidence volume', () => {
    const levels = [0, 1, 5, 20, 100].map((n) => confidence(features({ candidate: { asPayer: n, asPayee: 0, counterparties: 1, activeDays: 1, activeMonths: 1 } })));
    for (let i = 1; i < levels.length; i++) expect(levels[i]).toBeGreaterThan(levels[i - 1]);
    expect(levels[4]).toBeGreaterThan(0.99);
  });

  it('scores more evidence of the same kind no lower (activity is monotone in transactions)', () => {
    fc.assert(
      fc.property(arbFeatures, fc.nat(1000), (f, extra) => {
        const more = { ...f, candidate: { ...f.candidate, asPayer: f.candidate.asPayer + extra } };
        expect(dimensions(more).activity).toBeGreaterThanOrEqual(dimensions(f).activity);
      }),
    );
  });

  it('pulls trust from its prior toward the feedback average as feedback accrues', () => {
    const prior = trustDimension(features({ verificationLevel: 'kyc_verified' }));
    expect(prior).toBe(65);
    const some = trustDimension(features({ verificationLevel: 'kyc_verified', feedback: { count: 5, clients: 5, trustAvg: 0 } }));
    const many = trustDimension(features({ verificationLevel: 'kyc_verified', feedback: { count: 500, clients: 50, trustAvg: 0 } }));
    expect(some).toBeCloseTo(32.5);
    expect(many).toBeLessThan(1);
  });

  it('classifies agent wallets, operators, services and wallets with reasons', () => {
    const pay = (asPayer: number, asPayee: number) => features({ candidate: { asPayer, asPayee, counterparties: 1, activeDays: 1, activeMonths: 1 } });
    expect(classify(features({ isAgentWallet: true }), 0)).toEqual({ entity_type: 'agent', confidence: 0.9, reasons: ['agent_wallet_of_registered_erc8004_agent'] });
    expect(classify(features({ verificationLevel: 'kyc_verified' }), 2)).toEqual({ entity_type: 'operator', confidence: 0.95, reasons: ['owns_registered_erc8004_agents', 'operator_kyc_verified'] });
    expect(classify(pay(1, 4), 0)).toEqual({ entity_type: 'service', confidence: 0.7, reasons: ['mostly_payee', 'has_candidate_payment_activity'] });
    expect(classify(pay(3, 4), 0).entity_type).toBe('wallet');
    expect(classify(pay(0, 2), 0).entity_type).toBe('wallet'); // too few payments to call it a service
    expect(classify(features({ verified: { asPayer: 2, asPayee: 0 } }), 0)).toEqual({ entity_type: 'wallet', confidence: 0.66, reasons: ['payer_activity', 'has_verified_payment_activity'] });
  });

  it('weights weak agents more in the operator score (tail risk)', () => {
    expect(operatorScore([])).toBeNull();
    expect(operatorScore([70, 70, 70])).toBe(70);
    const mixed = operatorScore([90, 90, 20])!;
    expect(mixed).toBeLessThan((90 + 90 + 20) / 3);
    expect(mixed).toBeGreaterThan(20);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 30 }), (scores) => {
        const op = operatorScore(scores)!;
        const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
        expect(op).toBeGreaterThanOrEqual(Math.min(...scores));
        expect(op).toBeLessThanOrEqual(Math.round(mean));
      }),
    );
  });

  it('normalises feedback values by their decimals, clamped to 0–100, and routes tags to averages', () => {
    expect(feedbackValue('9950', 2)).toBe(99.5);
    expect(feedbackValue('-5', 0)).toBe(0);
    expect(feedbackValue('340282366920938463463374607431768211455', 0)).toBe(100);
    expect([feedbackKind('uptime'), feedbackKind('successRate'), feedbackKind('starred'), feedbackKind('')]).toEqual(['uptime', 'activity', 'trust', 'trust']);
  });

  it('saturates logarithmically', () => {
    expect(sat(0, 10)).toBe(0);
    expect(sat(10, 10)).toBe(1);
    expect(sat(1000, 10)).toBe(1);
    expect(sat(3, 10)).toBeCloseTo(Math.log(4) / Math.log(11));
  });
});
