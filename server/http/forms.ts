// HTML forms validate with joi too, through this one helper. A form's answer to bad input is the same page with a
// message beside each field, so problems come back as a value (one message per field) instead of a thrown 400.
// Form values are text: conversion is on (trimming, upper-casing, one value for a list field).
import type Joi from 'joi';
import { fieldPath } from './validate';

const FORM_PREFS: Joi.ValidationOptions = { abortEarly: false, convert: true, allowUnknown: true, stripUnknown: true };

/** One message per field, in the order the form lists them. */
export type FormErrors = Record<string, string>;

export type FormOutcome<T> = { ok: true; value: T } | { ok: false; errors: FormErrors };

/**
 * Compiles a form schema once. `messages` gives the message shown for any of joi's own errors on a field
 * (missing, empty, too long, wrong pattern): a form says what to enter, not which rule failed. A custom rule's
 * own problem (raised with `fail` from ./validate) wins. `context` reaches custom rules as `helpers.prefs.context`.
 */
export function formValidator<T>(
  schema: Joi.ObjectSchema,
  messages: Record<string, string>,
): (body: unknown, context?: Record<string, unknown>) => FormOutcome<T> {
  const compiled = schema.prefs(FORM_PREFS);
  return (body, context) => {
    const input = body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {};
    const { error, value } = compiled.validate(input, context ? { context } : {}) as { error?: Joi.ValidationError; value: T };
    if (!error) return { ok: true, value };
    const errors: FormErrors = {};
    for (const d of error.details) {
      const ctx = (d.context ?? {}) as { field?: string; problem?: string };
      const field = ctx.field ?? (fieldPath(undefined, d.path.slice(0, 1)) || 'form');
      errors[field] ??= ctx.problem ?? messages[field] ?? d.message.replace(/"([^"]+)"/g, '$1');
    }
    return { ok: false, errors };
  };
}

/** The submitted text of each field, to show again in a form that did not validate (anything else is empty). */
export function submittedValues<K extends string>(body: unknown, keys: readonly K[]): Record<K, string> {
  const record = (body ?? {}) as Record<string, unknown>;
  return Object.fromEntries(keys.map((k) => [k, typeof record[k] === 'string' ? record[k] : ''])) as Record<K, string>;
}
