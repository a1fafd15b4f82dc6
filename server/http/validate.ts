// joi validation that turns every problem into a `details` entry naming the field (dotted path).
import type Joi from 'joi';
import { badRequest, type ErrorCode, type FieldProblem } from '../../shared/errors';

export function joiProblems(error: Joi.ValidationError, root?: string): FieldProblem[] {
  return error.details.map((d) => {
    const field = [root, ...d.path.map(String)].filter(Boolean).join('.') || root || 'body';
    return { field, message: d.message.replace(/"([^"]+)"/g, '$1') };
  });
}

/**
 * Validates without type coercion ("7" is not 7). Unknown keys are allowed unless the schema says otherwise.
 * Throws a 400 whose details name every offending field.
 */
export function validate<T>(schema: Joi.Schema, value: unknown, options: { code?: ErrorCode; root?: string } = {}): T {
  if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest([{ field: options.root ?? 'body', message: 'must be a JSON object' }], options.code ?? 'bad_request');
  }
  const { error, value: result } = schema.validate(value, { abortEarly: false, convert: false, allowUnknown: true });
  if (error) throw badRequest(joiProblems(error, options.root), options.code ?? 'bad_request');
  return result as T;
}
