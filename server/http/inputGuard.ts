// Input no route can store: a NUL character (U+0000) anywhere in a request's strings. PostgreSQL text cannot
// hold it, so it is refused here, once for every route, as a 400 naming the field, instead of surfacing as a
// database error from whichever statement first meets it.
import type { RequestHandler } from 'express';
import { badRequest } from '../../shared/errors';

const NUL = '\u0000';
const MESSAGE = 'must not contain a NUL character (\\u0000)';

function child(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

/**
 * The path of the first string (value or key) holding a NUL, or null. Iterative: a deeply nested body must
 * not exhaust the stack.
 */
export function findNul(value: unknown, root = ''): string | null {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length) {
    const [current, path] = stack.pop()!;
    if (typeof current === 'string') {
      if (current.includes(NUL)) return path || 'body';
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], child(path, i)]);
    } else if (current !== null && typeof current === 'object') {
      const keys = Object.keys(current);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i];
        if (key.includes(NUL)) return child(path, key.replaceAll(NUL, '\\u0000'));
        stack.push([(current as Record<string, unknown>)[key], child(path, key)]);
      }
    }
  }
  return null;
}

/** Whether any string (value or key) holds a NUL: the cheap check, building no paths. */
function hasNul(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (current.includes(NUL)) return true;
    } else if (Array.isArray(current)) {
      for (const item of current) stack.push(item);
    } else if (current !== null && typeof current === 'object') {
      for (const key in current) {
        if (key.includes(NUL)) return true;
        stack.push((current as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/** After a body parser: refuses a body with a NUL in any string. */
export const rejectNulInBody: RequestHandler = (req, _res, next) => {
  // The path of the offending field is only worked out for the rare body that has one.
  const field = hasNul(req.body) ? findNul(req.body) : null;
  next(field ? badRequest([{ field, message: MESSAGE }]) : undefined);
};

/** Before any route: refuses a NUL in the path or the query string. */
export const rejectNulInUrl: RequestHandler = (req, _res, next) => {
  let path = req.path;
  try {
    path = decodeURIComponent(path);
  } catch {
    // Malformed percent-encoding is answered by the router's own 400.
  }
  if (path.includes(NUL)) return next(badRequest([{ field: 'path', message: MESSAGE }]));
  const field = req.url.includes('?') ? findNul(req.query, 'query') : null;
  next(field ? badRequest([{ field, message: MESSAGE }]) : undefined);
};
