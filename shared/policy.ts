// The assess policy object: its joi schema and a parser that returns the typed policy, the rules it
// switches on, and problems naming each bad field (an unknown key is one: a typo must never switch a
// compliance rule off silently). Shared by the server and the gate.
import Joi from 'joi';
import { distance } from 'fastest-levenshtein';
import { COUNTRY_CODES } from './countries';
import type { FieldProblem } from './errors';
import type { AssessWarning, Policy, PolicyRule } from './types';

/** Longest jurisdiction list accepted (there are 250 known codes; a few repeats are tolerated). */
export const MAX_JURISDICTIONS = 300;
export const MIN_AGES = [18, 21] as const;
/** Evaluation order; also the order of `checks`, `explanation` and (first occurrence) `decision_reasons`. */
export const POLICY_RULES: readonly PolicyRule[] = ['require_kyc', 'require_sanctions_clear', 'min_age', 'blocked_jurisdictions', 'allowed_jurisdictions'];

const COUNTRY_MESSAGE = 'must be an uppercase ISO 3166-1 alpha-2 country code (e.g. US, DE)';
const country = Joi.string()
  .valid(...COUNTRY_CODES)
  .messages({ 'any.only': COUNTRY_MESSAGE, 'string.base': COUNTRY_MESSAGE });
const countryList = Joi.array()
  .items(country)
  .max(MAX_JURISDICTIONS)
  .messages({ 'array.base': 'must be an array of ISO 3166-1 alpha-2 country codes', 'array.max': `must list at most ${MAX_JURISDICTIONS} countries` });

export const policySchema = Joi.object({
  require_kyc: Joi.boolean().messages({ 'boolean.base': 'must be true or false' }),
  require_sanctions_clear: Joi.boolean().messages({ 'boolean.base': 'must be true or false' }),
  min_age: Joi.any()
    .valid(...MIN_AGES)
    .messages({ 'any.only': 'must be 18 or 21' }),
  blocked_jurisdictions: countryList,
  allowed_jurisdictions: countryList,
}).unknown(true);

export interface ParsedPolicy {
  /** Null when no policy was supplied, or it switched on no rule (then `no_policy_applied`). */
  policy: Policy | null;
  rules: PolicyRule[];
  warnings: AssessWarning[];
  problems: FieldProblem[];
}

function fieldOf(root: string, path: Array<string | number>): string {
  let out = root;
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `.${p}`;
  return out;
}

/** The policy key `key` was probably meant to be: same words in another case or separator, or a near typo. */
function suggestPolicyKey(key: string): string | null {
  const normalised = key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[\s-]+/g, '_')
    .toLowerCase();
  let best: { rule: string; d: number } | null = null;
  for (const rule of POLICY_RULES) {
    const d = distance(normalised, rule);
    if (!best || d < best.d) best = { rule, d };
  }
  // A few edits (at most a third of the name) is a typo; anything further is a different word.
  return best && best.d <= Math.max(2, Math.floor(best.rule.length / 3)) ? best.rule : null;
}

function unknownKeyProblem(root: string, key: string): FieldProblem {
  const suggestion = suggestPolicyKey(key);
  const field = `${root}.${key}`;
  return {
    field,
    message: suggestion ? `${field} is not allowed; did you mean ${suggestion}?` : `${field} is not allowed; policy keys are ${POLICY_RULES.join(', ')}`,
  };
}

/**
 * Parses `value` (the request's `policy`). Absent or null → no policy. Wrong types, `min_age` other than
 * 18/21, lowercase or 3-letter country codes, oversized lists and unknown keys are problems.
 */
export function parsePolicy(value: unknown, root = 'policy'): ParsedPolicy {
  if (value === undefined || value === null) return { policy: null, rules: [], warnings: [], problems: [] };
  if (typeof value !== 'object' || Array.isArray(value)) {
    return { policy: null, rules: [], warnings: [], problems: [{ field: root, message: 'must be an object' }] };
  }
  const input = value as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  // Check list sizes first: validating 10,000 items only to report 10,000 problems helps nobody.
  const sized: Record<string, unknown> = { ...input };
  for (const key of ['blocked_jurisdictions', 'allowed_jurisdictions']) {
    const list = input[key];
    if (Array.isArray(list) && list.length > MAX_JURISDICTIONS) {
      problems.push({ field: `${root}.${key}`, message: `must list at most ${MAX_JURISDICTIONS} countries (got ${list.length})` });
      delete sized[key];
    }
  }
  const known = new Set<string>(POLICY_RULES);
  for (const key of Object.keys(input)) {
    if (problems.length >= 50) break;
    if (!known.has(key)) problems.push(unknownKeyProblem(root, key));
  }
  const { error } = policySchema.validate(sized, { abortEarly: false, convert: false });
  for (const d of error?.details ?? []) {
    if (problems.length >= 50) break;
    problems.push({ field: fieldOf(root, d.path), message: d.message.replace(/^"[^"]*" /, '') });
  }
  const warnings: AssessWarning[] = [];
  if (problems.length) return { policy: null, rules: [], warnings, problems };

  const policy: Policy = {};
  if (typeof input.require_kyc === 'boolean') policy.require_kyc = input.require_kyc;
  if (typeof input.require_sanctions_clear === 'boolean') policy.require_sanctions_clear = input.require_sanctions_clear;
  if (input.min_age === 18 || input.min_age === 21) policy.min_age = input.min_age;
  if (Array.isArray(input.blocked_jurisdictions)) policy.blocked_jurisdictions = [...new Set(input.blocked_jurisdictions as string[])];
  if (Array.isArray(input.allowed_jurisdictions)) policy.allowed_jurisdictions = [...new Set(input.allowed_jurisdictions as string[])];
  const rules = POLICY_RULES.filter((r) => policy[r] !== undefined);
  return { policy: rules.length ? policy : null, rules, warnings, problems };
}
