// joi validation for every route: a compiled validator per schema that turns every problem into a 400 whose
// `details` name the field, and whose error code comes from the schema (custom rules raise `<code>.<rule>`).
import type Joi from 'joi';
import { ApiError, ERROR_STATUS, badRequest, isErrorCode, type ErrorCode, type FieldProblem } from '../../shared/errors';

/** Preferences every validator uses: no coercion ("7" is not 7); unknown keys allowed unless the schema forbids them. */
const PREFS: Joi.ValidationOptions = { abortEarly: false, convert: false, allowUnknown: true };

/** `policy.blocked_jurisdictions[0]`: dotted keys, bracketed array indexes. */
export function fieldPath(root: string | undefined, path: ReadonlyArray<string | number>): string {
  let out = root ?? '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${p}` : p;
  return out;
}

/** Context a custom rule attaches to its error (see `fail`): the field, its problem, and the 400's message. */
interface ProblemContext {
  field?: string;
  problem?: string;
  summary?: string;
}

export function joiProblems(error: Joi.ValidationError, root?: string): FieldProblem[] {
  return error.details.map((d) => {
    const ctx = (d.context ?? {}) as ProblemContext;
    const field = ctx.field ?? (fieldPath(root, d.path) || root || 'body');
    return { field, message: ctx.problem ?? d.message.replace(/"([^"]+)"/g, '$1') };
  });
}

/**
 * The error a custom rule raises: `code` is the API error code the 400 answers with, `problem` the detail's
 * message (kept verbatim), `field` overrides the detail's path (rules on an object name the key they judge),
 * and `summary` the 400's top-level message.
 */
export function fail(helpers: Joi.CustomHelpers, code: ErrorCode, problem: string, options: { field?: string; summary?: string } = {}): Joi.ErrorReport {
  return helpers.message({ custom: problem.replace(/[{}]/g, '') }, { kyaCode: code, problem, ...options });
}

/** Several errors from one custom rule. */
export function failAll(helpers: Joi.CustomHelpers, reports: Joi.ErrorReport[]): Joi.ErrorReport[] {
  const out = (helpers as unknown as { errorsArray(): Joi.ErrorReport[] }).errorsArray();
  out.push(...reports);
  return out;
}

export interface ValidatorOptions {
  /** Error code of joi's own errors (type, range, ...). Default bad_request. */
  code?: ErrorCode;
  /** Prefix of every field (a query or params object). */
  root?: string;
  /** When details carry several codes, the first listed that occurs answers. Default: bad_request first. */
  precedence?: ErrorCode[];
  /** Top-level message per code (default `Invalid request: <fields>`). A rule's `summary` wins. */
  messages?: Partial<Record<ErrorCode, string>>;
}

export type Validator<T> = (value: unknown) => T;

/** Compiles `schema` once into a validator that returns the typed, already-valid value or throws the 400. */
export function validator<T>(schema: Joi.Schema, options: ValidatorOptions = {}): Validator<T> {
  const fallback = options.code ?? 'bad_request';
  const precedence = options.precedence ?? ['bad_request'];
  // Preferences set on the schema once, not merged into defaults on every call (the hot path pays for that).
  const compiled = schema.prefs(PREFS);
  return (value: unknown): T => {
    if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw badRequest([{ field: options.root ?? 'body', message: 'must be a JSON object' }], fallback);
    }
    const { error, value: result } = compiled.validate(value) as { error?: Joi.ValidationError; value: unknown };
    if (error) throw toApiError(error, fallback, precedence, options);
    return result as T;
  };
}

function toApiError(error: Joi.ValidationError, fallback: ErrorCode, precedence: ErrorCode[], options: ValidatorOptions): ApiError {
  const problems = joiProblems(error, options.root);
  const codes = error.details.map((d) => {
    const code = (d.context as { kyaCode?: unknown } | undefined)?.kyaCode;
    return isErrorCode(code) && ERROR_STATUS[code] === 400 ? code : fallback;
  });
  const chosen = precedence.find((c) => codes.includes(c)) ?? codes[0];
  const picked = problems.filter((_, i) => codes[i] === chosen);
  const summary = error.details.map((d) => (d.context as ProblemContext | undefined)?.summary).find((s, i) => s && codes[i] === chosen);
  return badRequest(picked, chosen, summary ?? options.messages?.[chosen]);
}

/** One-off validation (prefer `validator` for anything on a request path: it is compiled once). */
export function validate<T>(schema: Joi.Schema, value: unknown, options: ValidatorOptions = {}): T {
  return validator<T>(schema, options)(value);
}
