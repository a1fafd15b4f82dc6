// The assess policy engine: pure functions from (policy, operator KYC state, time) to checks, reasons and
// explanations. No I/O, no clock reads: everything it needs is passed in, so it is exhaustively unit-tested.
import { POLICY_RULES } from '../../shared/policy';
import type {
  Decision,
  DecisionReason,
  Explanation,
  KycActual,
  Policy,
  PolicyCheck,
  PolicyResult,
  PolicyRule,
  SanctionsActual,
  VerificationLevel,
} from '../../shared/types';

/** What the engine knows about the operator behind an identity (all "none" when there is no operator). */
export interface OperatorState {
  kycStatus: KycActual;
  kycVerifiedAt: Date | null;
  operatorType: string | null;
  jurisdiction: string | null;
  /** '18+' | '21+' | 'under_18' | null. */
  ageBracket: string | null;
  ageVerified: boolean;
  sanctionsStatus: 'clear' | 'flagged' | null;
  sanctionsCheckedAt: Date | null;
  verificationLevel: VerificationLevel;
}

export const NO_OPERATOR: Readonly<OperatorState> = Object.freeze({
  kycStatus: 'none',
  kycVerifiedAt: null,
  operatorType: null,
  jurisdiction: null,
  ageBracket: null,
  ageVerified: false,
  sanctionsStatus: null,
  sanctionsCheckedAt: null,
  verificationLevel: 'none',
});

export interface PolicyContext {
  now: Date;
  /** Screening older than this many days no longer counts as clear (account override or config default). */
  freshnessDays: number;
}

interface RuleOutcome {
  check: PolicyCheck;
  reason: DecisionReason | null;
  message: string;
  howToRemedy: string | null;
}

export interface PolicyEvaluation {
  decision: Decision;
  reasons: DecisionReason[];
  /** Absent when no policy applied. */
  policyResult?: PolicyResult;
  explanation?: Explanation[];
}

const VERIFY = 'Have the operator complete identity verification at verify_url, then retry.';
const DAY_MS = 86_400_000;
const AGE_OF_BRACKET: Record<string, number> = { '21+': 21, '18+': 18, under_18: 0 };

function isVerified(op: OperatorState): boolean {
  return op.kycStatus === 'verified';
}

/** Why a rule that needs verified KYC data cannot pass for an operator without it. */
function unverified(op: OperatorState): { reason: DecisionReason; message: string; howToRemedy: string | null } {
  switch (op.kycStatus) {
    case 'pending':
      return {
        reason: 'kyc_pending',
        message: 'Identity verification is in progress.',
        howToRemedy: 'Wait for the verification in progress to finish, then retry.',
      };
    case 'failed':
      return {
        reason: 'kyc_failed',
        message: "The operator's identity verification failed.",
        howToRemedy: 'Retry identity verification at verify_url with a clear, valid ID document.',
      };
    case 'flagged':
      return { reason: 'sanctions_flagged', message: "The operator's verification was flagged by sanctions screening and is under review.", howToRemedy: null };
    case 'verified':
      // Verified, but the provider did not establish this attribute: a new verification can.
      return { reason: 'kyc_required', message: 'The identity verification on record did not establish this attribute.', howToRemedy: VERIFY };
    default:
      return { reason: 'kyc_required', message: 'The operator has not completed identity verification.', howToRemedy: VERIFY };
  }
}

function requireKyc(required: boolean, op: OperatorState): RuleOutcome {
  const check: PolicyCheck = { rule: 'require_kyc', passed: true, required, actual: op.kycStatus };
  if (!required) return { check, reason: null, message: 'Identity verification is not required by this policy.', howToRemedy: null };
  if (isVerified(op)) return { check, reason: null, message: 'The operator has completed identity verification.', howToRemedy: null };
  const why = unverified(op);
  return { check: { ...check, passed: false }, reason: why.reason, message: why.message, howToRemedy: why.howToRemedy };
}

function sanctionsActual(op: OperatorState, ctx: PolicyContext): { actual: SanctionsActual; ageDays: number | null } {
  if (op.sanctionsStatus === 'flagged' || op.kycStatus === 'flagged') return { actual: 'flagged', ageDays: null };
  if (op.kycStatus === 'none' && !op.sanctionsCheckedAt) return { actual: 'none', ageDays: null };
  if (op.sanctionsStatus !== 'clear' || !op.sanctionsCheckedAt) return { actual: 'unscreened', ageDays: null };
  const ageDays = (ctx.now.getTime() - op.sanctionsCheckedAt.getTime()) / DAY_MS;
  // A clear screening older than the window no longer vouches for the operator.
  return { actual: ageDays <= ctx.freshnessDays ? 'clear' : 'unscreened', ageDays };
}

function requireSanctionsClear(required: boolean, op: OperatorState, ctx: PolicyContext): RuleOutcome {
  const { actual, ageDays } = sanctionsActual(op, ctx);
  const check: PolicyCheck = { rule: 'require_sanctions_clear', passed: true, required, actual };
  if (!required) return { check, reason: null, message: 'Sanctions screening is not required by this policy.', howToRemedy: null };
  const fail = (reason: DecisionReason, message: string, howToRemedy: string | null): RuleOutcome => ({
    check: { ...check, passed: false },
    reason,
    message,
    howToRemedy,
  });
  switch (actual) {
    case 'clear':
      return {
        check,
        reason: null,
        message: `The operator was screened clear against sanctions lists ${Math.floor(ageDays!)} day(s) ago (window: ${ctx.freshnessDays} days).`,
        howToRemedy: null,
      };
    case 'flagged':
      return fail('sanctions_flagged', 'The operator matched a sanctions list during screening.', null);
    case 'none':
      return fail('kyc_required', 'The operator has not completed identity verification, so has never been screened against sanctions lists.', VERIFY);
    default:
      return ageDays !== null
        ? fail(
            'kyc_required',
            `The operator's last sanctions screening is older than the ${ctx.freshnessDays}-day freshness window.`,
            'Have the operator verify again at verify_url to refresh the screening, then retry.',
          )
        : fail('kyc_required', 'The operator has never been screened against sanctions lists.', VERIFY);
  }
}

function minAge(required: 18 | 21, op: OperatorState): RuleOutcome {
  const age = op.ageBracket ? AGE_OF_BRACKET[op.ageBracket] : undefined;
  const known = isVerified(op) && op.ageVerified && age !== undefined;
  const check: PolicyCheck = { rule: 'min_age', passed: false, required, actual: known ? op.ageBracket! : 'none' };
  if (!known) {
    const why = unverified(op);
    return { check, reason: why.reason, message: `The operator's age has not been verified. ${why.message}`, howToRemedy: why.howToRemedy };
  }
  if (age >= required) {
    return {
      check: { ...check, passed: true },
      reason: null,
      message: `The operator's verified age bracket ${op.ageBracket} meets the minimum age of ${required}.`,
      howToRemedy: null,
    };
  }
  // A verified ID below the minimum cannot be fixed by the agent or the operator.
  return {
    check,
    reason: 'age_insufficient',
    message: `The operator's verified age bracket ${op.ageBracket} is below the minimum age of ${required}.`,
    howToRemedy: null,
  };
}

function jurisdiction(rule: 'blocked_jurisdictions' | 'allowed_jurisdictions', list: string[], op: OperatorState): RuleOutcome {
  const known = isVerified(op) && Boolean(op.jurisdiction);
  const country = known ? op.jurisdiction!.trim().toUpperCase() : null;
  const check: PolicyCheck = { rule, passed: true, required: list, actual: country ?? 'none' };
  // An empty list restricts nothing (gates send [] for "not configured").
  if (list.length === 0) return { check, reason: null, message: 'The list is empty; no jurisdiction is restricted.', howToRemedy: null };
  if (!country) {
    const why = unverified(op);
    return {
      check: { ...check, passed: false },
      reason: why.reason,
      message: `The operator's jurisdiction has not been verified. ${why.message}`,
      howToRemedy: why.howToRemedy,
    };
  }
  const listed = list.includes(country);
  const passed = rule === 'blocked_jurisdictions' ? !listed : listed;
  if (passed) {
    const message =
      rule === 'blocked_jurisdictions' ? `The operator's jurisdiction ${country} is not blocked.` : `The operator's jurisdiction ${country} is allowed.`;
    return { check, reason: null, message, howToRemedy: null };
  }
  const message =
    rule === 'blocked_jurisdictions'
      ? `The operator's jurisdiction ${country} is blocked by this merchant.`
      : `The operator's jurisdiction ${country} is not in this merchant's allowed list.`;
  return { check: { ...check, passed: false }, reason: 'jurisdiction_restricted', message, howToRemedy: null };
}

function evaluateRule(rule: PolicyRule, policy: Policy, op: OperatorState, ctx: PolicyContext): RuleOutcome {
  switch (rule) {
    case 'require_kyc':
      return requireKyc(policy.require_kyc!, op);
    case 'require_sanctions_clear':
      return requireSanctionsClear(policy.require_sanctions_clear!, op, ctx);
    case 'min_age':
      return minAge(policy.min_age!, op);
    case 'blocked_jurisdictions':
      return jurisdiction(rule, policy.blocked_jurisdictions!, op);
    case 'allowed_jurisdictions':
      return jurisdiction(rule, policy.allowed_jurisdictions!, op);
  }
}

/** Deduplicates while keeping the first occurrence's position (a stable order callers can rely on). */
export function uniqueReasons(reasons: Iterable<DecisionReason>): DecisionReason[] {
  return [...new Set(reasons)];
}

/**
 * Evaluates `policy` (null = none supplied) against the operator. Without a policy the decision is `allow`
 * with `["no_policy_applied"]` and no policy_result / explanation.
 */
export function evaluatePolicy(policy: Policy | null, op: OperatorState, ctx: PolicyContext): PolicyEvaluation {
  const rules = policy ? POLICY_RULES.filter((r) => policy[r] !== undefined) : [];
  if (!policy || rules.length === 0) return { decision: 'allow', reasons: ['no_policy_applied'] };
  const outcomes = rules.map((rule) => evaluateRule(rule, policy, op, ctx));
  const reasons = uniqueReasons(outcomes.flatMap((o) => (o.reason ? [o.reason] : [])));
  const allPassed = outcomes.every((o) => o.check.passed);
  return {
    decision: allPassed ? 'allow' : 'deny',
    reasons,
    policyResult: { all_passed: allPassed, checks: outcomes.map((o) => o.check) },
    explanation: outcomes.map((o) => ({ ...o.check, message: o.message, how_to_remedy: o.check.passed ? null : o.howToRemedy })),
  };
}

/**
 * Adds denials that come from outside the policy (the always-on signer wallet sanctions check). Any extra
 * reason turns the decision into `deny`; `no_policy_applied` is dropped once there is a real reason.
 */
export function withExtraReasons(evaluation: PolicyEvaluation, extra: DecisionReason[]): PolicyEvaluation {
  if (extra.length === 0) return evaluation;
  const base = evaluation.reasons.filter((r) => r !== 'no_policy_applied');
  return { ...evaluation, decision: 'deny', reasons: uniqueReasons([...base, ...extra]) };
}
