// The score model in one place (pure functions, no I/O): five dimensions 0–100, a confidence 0–1 that grows
// with evidence volume, the score, the grade (A ≥ 80, B ≥ 65, C ≥ 50, D ≥ 35, F), the entity classification
// with reasons, and the tail-risk weighted operator score. Bump SCORE_VERSION when a formula changes meaning.
//
// v2: the score starts at a neutral prior and evidence moves it (the weighted dimensions count in proportion to
// confidence), so a wallet with little evidence scores near the prior ("not enough evidence", grade C) instead
// of failing: absence of on-chain history is not evidence of risk. v1 multiplied the weighted dimensions by
// 0.6 + 0.4·confidence, which graded a new KYC-verified buyer's wallet F.

import type { VerificationLevel } from '../../shared/types';

export const SCORE_VERSION = 'v2';

/** Where a score with no evidence sits: the middle of the C band. Operator verification raises it. */
export const NEUTRAL_PRIOR = 50;
const VERIFICATION_PRIOR: Record<VerificationLevel, number> = { none: 0, wallet_claimed: 5, kyc_verified: 10 };

/** Below this confidence the profile carries a caveat: the score says "not enough evidence", not "risky". */
export const LOW_EVIDENCE_CONFIDENCE = 0.5;

export type Grade = 'A' | 'B' | 'C' | 'D' | 'F';
export type EntityType = 'agent' | 'operator' | 'service' | 'wallet' | 'unknown';

export interface Dimensions {
  identity: number;
  activity: number;
  capability: number;
  reach: number;
  trust: number;
}

/** Everything the formulas look at, for one subject (an address on one chain, or one agent). */
export interface Features {
  /** Registered ERC-8004 agents this subject owns or is (on this chain). */
  registeredAgents: number;
  /** The subject is the `agentWallet` of a registered agent. */
  isAgentWallet: boolean;
  registrationResolved: boolean;
  hasName: boolean;
  /** Lowercased service names from the registration file(s): a2a, mcp, web, ens, did, email, … */
  services: string[];
  x402Support: boolean;
  active: boolean | null;
  hasA2aCard: boolean;
  hasWebsite: boolean;
  websiteReachable: boolean | null;
  websiteMentionsMcp: boolean | null;
  websiteMentionsX402: boolean | null;
  hasGithub: boolean;
  githubStars: number | null;
  hasEns: boolean;
  verificationLevel: VerificationLevel;
  candidate: { asPayer: number; asPayee: number; counterparties: number; activeDays: number; activeMonths: number };
  verified: { asPayer: number; asPayee: number };
  /** Non-revoked feedback on the subject's agents. trustAvg is 0–100 or null when there is none. */
  feedback: { count: number; clients: number; trustAvg: number | null };
}

export const emptyFeatures = (): Features => ({
  registeredAgents: 0,
  isAgentWallet: false,
  registrationResolved: false,
  hasName: false,
  services: [],
  x402Support: false,
  active: null,
  hasA2aCard: false,
  hasWebsite: false,
  websiteReachable: null,
  websiteMentionsMcp: null,
  websiteMentionsX402: null,
  hasGithub: false,
  githubStars: null,
  hasEns: false,
  verificationLevel: 'none',
  candidate: { asPayer: 0, asPayee: 0, counterparties: 0, activeDays: 0, activeMonths: 0 },
  verified: { asPayer: 0, asPayee: 0 },
  feedback: { count: 0, clients: 0, trustAvg: null },
});

/** Logarithmic saturation: 0 at 0, 1 at `k` and beyond. Early evidence counts most. */
export function sat(x: number, k: number): number {
  if (!(x > 0)) return 0;
  return Math.min(1, Math.log1p(x) / Math.log1p(k));
}

const clamp100 = (x: number) => Math.max(0, Math.min(100, x));
const round1 = (x: number) => Math.round(x * 10) / 10;
const b = (v: boolean | null | undefined) => (v ? 1 : 0);

export const WEIGHTS: Dimensions = { identity: 0.2, activity: 0.25, capability: 0.15, reach: 0.15, trust: 0.25 };

const VERIFICATION_IDENTITY: Record<VerificationLevel, number> = { none: 0, wallet_claimed: 15, kyc_verified: 30 };
const VERIFICATION_TRUST: Record<VerificationLevel, number> = { none: 0, wallet_claimed: 10, kyc_verified: 25 };

export function identityDimension(f: Features): number {
  return clamp100(
    30 * b(f.registeredAgents > 0 || f.isAgentWallet) +
      10 * b(f.registrationResolved) +
      10 * b(f.hasName) +
      10 * b(f.hasWebsite) +
      5 * b(f.websiteReachable) +
      10 * b(f.hasGithub) +
      5 * b(f.hasEns) +
      VERIFICATION_IDENTITY[f.verificationLevel],
  );
}

export function activityDimension(f: Features): number {
  const tx = f.candidate.asPayer + f.candidate.asPayee + 2 * (f.verified.asPayer + f.verified.asPayee);
  return clamp100(100 * (0.45 * sat(tx, 100) + 0.35 * sat(f.candidate.activeDays, 60) + 0.2 * sat(f.candidate.activeMonths, 12)));
}

export function capabilityDimension(f: Features): number {
  const has = (name: string) => f.services.includes(name);
  const other = f.services.filter((s) => s !== 'a2a' && s !== 'mcp').length;
  return clamp100(
    25 * b(has('a2a')) +
      10 * b(f.hasA2aCard) +
      20 * b(has('mcp')) +
      5 * Math.min(2, other) +
      20 * b(f.x402Support) +
      5 * b(f.websiteMentionsMcp) +
      5 * b(f.websiteMentionsX402) +
      5 * b(f.active === true),
  );
}

export function reachDimension(f: Features): number {
  return clamp100(100 * (0.5 * sat(f.candidate.counterparties, 50) + 0.3 * sat(f.feedback.clients, 20) + 0.2 * sat(f.githubStars ?? 0, 500)));
}

/** A prior from verification and verified payments, pulled toward the feedback average as feedback accrues. */
export function trustDimension(f: Features): number {
  const verifiedTx = f.verified.asPayer + f.verified.asPayee;
  const prior = 40 + VERIFICATION_TRUST[f.verificationLevel] + 15 * sat(verifiedTx, 20);
  if (f.feedback.count === 0 || f.feedback.trustAvg === null) return clamp100(prior);
  const w = f.feedback.count / (f.feedback.count + 5);
  return clamp100(prior * (1 - w) + clamp100(f.feedback.trustAvg) * w);
}

export function dimensions(f: Features): Dimensions {
  return {
    identity: round1(identityDimension(f)),
    activity: round1(activityDimension(f)),
    capability: round1(capabilityDimension(f)),
    reach: round1(reachDimension(f)),
    trust: round1(trustDimension(f)),
  };
}

/**
 * 0–1: how much on-chain evidence stands behind the score. Operator verification is not counted: it already
 * lifts the prior, and counting it here too would pull a new verified wallet from its raised prior toward its
 * (still empty) dimensions, scoring it below an unverified one.
 */
export function confidence(f: Features): number {
  const evidence =
    f.candidate.asPayer +
    f.candidate.asPayee +
    2 * (f.verified.asPayer + f.verified.asPayee) +
    3 * f.feedback.count +
    5 * Math.min(3, f.registeredAgents + b(f.isAgentWallet)) +
    3 * b(f.registrationResolved);
  return Math.round((1 - Math.exp(-evidence / 15)) * 100) / 100;
}

/** The score an address with no evidence gets: the neutral prior, raised by its operator's verification. */
export function scorePrior(level: VerificationLevel): number {
  return NEUTRAL_PRIOR + VERIFICATION_PRIOR[level];
}

/**
 * prior + confidence·(weighted dimensions − prior): with no evidence the score is the prior, with strong
 * evidence it is the weighted dimensions, and thin evidence moves it only part of the way either side.
 */
export function scoreValue(d: Dimensions, conf: number, prior: number = NEUTRAL_PRIOR): number {
  const raw =
    WEIGHTS.identity * d.identity + WEIGHTS.activity * d.activity + WEIGHTS.capability * d.capability + WEIGHTS.reach * d.reach + WEIGHTS.trust * d.trust;
  const c = Math.max(0, Math.min(1, conf));
  return Math.round(clamp100(prior + c * (raw - prior)));
}

export function grade(score: number): Grade {
  if (score >= 80) return 'A';
  if (score >= 65) return 'B';
  if (score >= 50) return 'C';
  if (score >= 35) return 'D';
  return 'F';
}

export interface Scored {
  score: number;
  grade: Grade;
  confidence: number;
  dimensions: Dimensions;
}

export function scoreFeatures(f: Features): Scored {
  const d = dimensions(f);
  const conf = confidence(f);
  const score = scoreValue(d, conf, scorePrior(f.verificationLevel));
  return { score, grade: grade(score), confidence: conf, dimensions: d };
}

export interface Classification {
  entity_type: EntityType;
  confidence: number;
  reasons: string[];
}

/**
 * agent: the agentWallet of a registered ERC-8004 agent; operator: owns registered agents; service: mostly
 * a payee (≥ 3 incoming and at least twice the outgoing); wallet: any payer activity; unknown: nothing.
 */
export function classify(f: Features, ownsAgents: number): Classification {
  const incoming = f.candidate.asPayee + f.verified.asPayee;
  const outgoing = f.candidate.asPayer + f.verified.asPayer;
  const reasons: string[] = [];
  if (f.candidate.asPayer + f.candidate.asPayee > 0) reasons.push('has_candidate_payment_activity');
  if (f.verified.asPayer + f.verified.asPayee > 0) reasons.push('has_verified_payment_activity');
  if (f.verificationLevel !== 'none') reasons.push(`operator_${f.verificationLevel}`);
  if (f.isAgentWallet) {
    return { entity_type: 'agent', confidence: 0.9, reasons: ['agent_wallet_of_registered_erc8004_agent', ...reasons] };
  }
  if (ownsAgents > 0) {
    return { entity_type: 'operator', confidence: 0.95, reasons: ['owns_registered_erc8004_agents', ...reasons] };
  }
  if (incoming >= 3 && incoming >= 2 * outgoing) {
    return {
      entity_type: 'service',
      confidence: Math.round(Math.min(0.9, 0.5 + 0.1 * Math.log2(incoming)) * 100) / 100,
      reasons: ['mostly_payee', ...reasons],
    };
  }
  if (outgoing + incoming > 0) {
    return {
      entity_type: 'wallet',
      confidence: Math.round(Math.min(0.85, 0.5 + 0.1 * Math.log2(1 + outgoing + incoming)) * 100) / 100,
      reasons: ['payer_activity', ...reasons],
    };
  }
  return { entity_type: 'unknown', confidence: 0, reasons: ['no_indexed_activity', ...reasons] };
}

/** Tail-risk weight temperature: an agent 40 points lower weighs e ≈ 2.7 times more. */
export const TAIL_RISK_TAU = 40;

/**
 * Operator score: Σ wᵢ·sᵢ / Σ wᵢ with wᵢ = exp(−sᵢ/τ), over all of the operator's agents on all chains.
 * Weak agents pull the operator down more than strong ones lift it: one bad agent is a real risk.
 */
export function operatorScore(agentScores: number[]): number | null {
  if (agentScores.length === 0) return null;
  let num = 0;
  let den = 0;
  for (const s of agentScores) {
    const w = Math.exp(-s / TAIL_RISK_TAU);
    num += w * s;
    den += w;
  }
  return Math.round(num / den);
}

export type FeedbackKind = 'trust' | 'uptime' | 'activity';

/** Which average a feedback tag feeds (ERC-8004 tags seen: starred 0–100, uptime %, successRate %). */
export function feedbackKind(tag1: string): FeedbackKind {
  const t = tag1.trim().toLowerCase();
  if (t === 'uptime') return 'uptime';
  if (t === 'successrate' || t === 'activity' || t === 'success_rate') return 'activity';
  return 'trust';
}

/** value / 10^decimals, clamped to 0–100 (values are int128 on chain and may be negative or huge). */
export function feedbackValue(value: string, decimals: number): number {
  const n = Number(value) / 10 ** Math.min(Math.max(decimals, 0), 30);
  return Number.isFinite(n) ? clamp100(n) : 0;
}
