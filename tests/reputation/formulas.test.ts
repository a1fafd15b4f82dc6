// The score model (v2): grade boundaries, dimension ranges, confidence, classification rules and the tail-risk
// operator average (pure functions; property checks with fast-check).
import fc from 'fast-check';
import {
  classify,
  confidence,
  dimensions,
  emptyFeatures,
  feedbackKind,
  feedbackValue,
  grade,
  LOW_EVIDENCE_CONFIDENCE,
  NEUTRAL_PRIOR,
  operatorScore,
  sat,
  scoreFeatures,
  scorePrior,
  scoreValue,
  SCORE_VERSION,
  trustDimension,
  WEIGHTS,
  type Dimensions,
  type Features,
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

describe('score model', () => {
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

  it('is version v2 (the neutral prior changed what a score means)', () => {
    expect(SCORE_VERSION).toBe('v2');
  });

  it('gives an address with no evidence the neutral prior (grade C), zero confidence and entity type unknown', () => {
    const r = scoreFeatures(features());
    expect(r).toEqual({ score: 50, grade: 'C', confidence: 0, dimensions: { identity: 0, activity: 0, capability: 0, reach: 0, trust: 40 } });
    expect(classify(features(), 0)).toEqual({ entity_type: 'unknown', confidence: 0, reasons: ['no_indexed_activity'] });
  });

  it('does not grade a new KYC-verified wallet F: it scores above the neutral prior with low confidence', () => {
    const r = scoreFeatures(features({ verificationLevel: 'kyc_verified' }));
    expect(r).toEqual({ score: 60, grade: 'C', confidence: 0, dimensions: { identity: 30, activity: 0, capability: 0, reach: 0, trust: 65 } });
    expect(r.confidence).toBeLessThan(LOW_EVIDENCE_CONFIDENCE);
    expect(scorePrior('kyc_verified')).toBeGreaterThan(scorePrior('wallet_claimed'));
    expect(scorePrior('wallet_claimed')).toBeGreaterThan(scorePrior('none'));
    expect(scorePrior('none')).toBe(NEUTRAL_PRIOR);
  });

  it('never lowers a score when the operator verifies: none ≤ wallet_claimed ≤ kyc_verified for the same evidence', () => {
    fc.assert(
      fc.property(arbFeatures, (f) => {
        const [none, claimed, kyc] = (['none', 'wallet_claimed', 'kyc_verified'] as const).map((level) => scoreFeatures({ ...f, verificationLevel: level }));
        expect(claimed.score).toBeGreaterThanOrEqual(none.score);
        expect(kyc.score).toBeGreaterThanOrEqual(claimed.score);
        // verification lifts the prior; it is not on-chain evidence, so it leaves confidence alone
        expect(new Set([none.confidence, claimed.confidence, kyc.confidence]).size).toBe(1);
      }),
      { seed: 18, numRuns: 2000 },
    );
    const bare = scoreFeatures(features());
    const claimed = scoreFeatures(features({ verificationLevel: 'wallet_claimed' }));
    expect([bare.score, bare.grade, claimed.score, claimed.grade]).toEqual([50, 'C', 55, 'C']);
  });

  it('never grades a KYC-verified wallet without bad feedback F while evidence is thin', () => {
    fc.assert(
      fc.property(arbFeatures, (f) => {
        // thin evidence: a few payments, no registered agent, no feedback
        const kyc: Features = {
          ...f,
          registeredAgents: 0,
          isAgentWallet: false,
          verificationLevel: 'kyc_verified',
          candidate: { ...f.candidate, asPayer: f.candidate.asPayer % 4, asPayee: f.candidate.asPayee % 4 },
          verified: { asPayer: 0, asPayee: 0 },
          feedback: { count: 0, clients: 0, trustAvg: null },
        };
        const r = scoreFeatures(kyc);
        // below the low-evidence line a KYC-verified wallet stays in D or better, whatever the evidence says
        if (r.confidence < LOW_EVIDENCE_CONFIDENCE) expect(r.score).toBeGreaterThan(40);
        else expect(r.score).toBeGreaterThanOrEqual(35);
      }),
    );
  });

  it('keeps a low-confidence score within confidence × the distance to 0 or 100 of its prior (thin evidence moves it little)', () => {
    fc.assert(
      fc.property(arbFeatures, (f) => {
        const r = scoreFeatures(f);
        const prior = scorePrior(f.verificationLevel);
        expect(Math.abs(r.score - prior)).toBeLessThanOrEqual(r.confidence * Math.max(prior, 100 - prior) + 0.5);
      }),
    );
  });

  it('moves the score from the prior to the weighted dimensions as confidence goes from 0 to 1', () => {
    const arbDims: fc.Arbitrary<Dimensions> = fc.record({
      identity: fc.double({ min: 0, max: 100, noNaN: true }),
      activity: fc.double({ min: 0, max: 100, noNaN: true }),
      capability: fc.double({ min: 0, max: 100, noNaN: true }),
      reach: fc.double({ min: 0, max: 100, noNaN: true }),
      trust: fc.double({ min: 0, max: 100, noNaN: true }),
    });
    fc.assert(
      fc.property(arbDims, fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (d, c1, c2) => {
        const raw = (Object.keys(WEIGHTS) as (keyof Dimensions)[]).reduce((sum, k) => sum + WEIGHTS[k] * d[k], 0);
        expect(scoreValue(d, 0)).toBe(NEUTRAL_PRIOR);
        expect(scoreValue(d, 1)).toBe(Math.round(raw));
        const [lo, hi] = c1 <= c2 ? [c1, c2] : [c2, c1];
        // more confidence never takes the score further from the evidence
        expect(Math.abs(scoreValue(d, hi) - raw)).toBeLessThanOrEqual(Math.abs(scoreValue(d, lo) - raw) + 1);
      }),
    );
  });

  it('lets strong evidence grade both ways: a busy, well-reviewed agent above B, one with bad feedback below the prior', () => {
    const busy = features({
      registeredAgents: 3,
      registrationResolved: true,
      hasName: true,
      services: ['a2a', 'mcp', 'web'],
      x402Support: true,
      active: true,
      hasA2aCard: true,
      hasWebsite: true,
      websiteReachable: true,
      hasGithub: true,
      githubStars: 300,
      hasEns: true,
      verificationLevel: 'kyc_verified',
      candidate: { asPayer: 40, asPayee: 200, counterparties: 60, activeDays: 90, activeMonths: 6 },
      verified: { asPayer: 0, asPayee: 20 },
      feedback: { count: 40, clients: 25, trustAvg: 92 },
    });
    expect(scoreFeatures(busy).grade).toMatch(/^[AB]$/);
    const bad = features({
      candidate: { asPayer: 60, asPayee: 0, counterparties: 2, activeDays: 3, activeMonths: 1 },
      feedback: { count: 30, clients: 10, trustAvg: 0 },
    });
    const r = scoreFeatures(bad);
    expect(r.confidence).toBeGreaterThan(0.9);
    expect(r.score).toBeLessThan(35);
  });

  it('grows confidence with evidence volume', () => {
    const levels = [0, 1, 5, 20, 100].map((n) =>
      confidence(features({ candidate: { asPayer: n, asPayee: 0, counterparties: 1, activeDays: 1, activeMonths: 1 } })),
    );
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
    expect(classify(features({ isAgentWallet: true }), 0)).toEqual({
      entity_type: 'agent',
      confidence: 0.9,
      reasons: ['agent_wallet_of_registered_erc8004_agent'],
    });
    expect(classify(features({ verificationLevel: 'kyc_verified' }), 2)).toEqual({
      entity_type: 'operator',
      confidence: 0.95,
      reasons: ['owns_registered_erc8004_agents', 'operator_kyc_verified'],
    });
    expect(classify(pay(1, 4), 0)).toEqual({ entity_type: 'service', confidence: 0.7, reasons: ['mostly_payee', 'has_candidate_payment_activity'] });
    expect(classify(pay(3, 4), 0).entity_type).toBe('wallet');
    expect(classify(pay(0, 2), 0).entity_type).toBe('wallet'); // too few payments to call it a service
    expect(classify(features({ verified: { asPayer: 2, asPayee: 0 } }), 0)).toEqual({
      entity_type: 'wallet',
      confidence: 0.66,
      reasons: ['payer_activity', 'has_verified_payment_activity'],
    });
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
