// The one place that turns errors into HTTP responses. Domain code throws ApiError; infrastructure
// failures (database, Redis, an open circuit) become 503 api_error; anything else is a 500 with a generic message.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ApiError } from '../../shared/errors';
import { isInfrastructureError } from '../circuit';
import { pageSurface, sendErrorPage } from '../verify/errorPage';
import { retryWithBackoff } from '../services/agentCopy';

/** Retry-After of a 503 for a database or Redis outage (the circuit probes far more often than this). */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

export { isInfrastructureError };

/**
 * Every error type body-parser (and raw-body under it) raises. All are about the request, so all are 4xx:
 * stream.encoding.set and stream.not.readable, which body-parser reports as 500, mean the body was consumed
 * or decoded before the parser ran, which no client should be able to turn into a server error.
 */
function fromBodyParser(err: { type?: string; status?: number }): ApiError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return new ApiError('bad_request', 'Malformed JSON in request body.', { details: [{ field: 'body', message: 'is not valid JSON' }] });
    case 'entity.too.large':
      return new ApiError('payload_too_large', 'Request body is too large.', { details: [{ field: 'body', message: 'exceeds the size limit' }] });
    case 'parameters.too.many':
      return new ApiError('payload_too_large', 'Request body has too many fields.', {
        details: [{ field: 'body', message: 'has more fields than this form accepts' }],
      });
    case 'encoding.unsupported':
    case 'charset.unsupported':
    case 'request.aborted':
    case 'request.size.invalid':
    case 'entity.verify.failed':
    case 'stream.encoding.set':
    case 'stream.not.readable':
      return new ApiError('bad_request', 'Request body could not be read.', { details: [{ field: 'body', message: err.type }] });
    default:
      return null;
  }
}

/** Other client errors raised by express itself (e.g. a path parameter that is not valid percent-encoding). */
function fromHttpError(err: { status?: number; statusCode?: number; expose?: boolean; message?: string }): ApiError | null {
  const status = err.status ?? err.statusCode;
  if (status !== 400) return null;
  const field = /decode param/i.test(err.message ?? '') ? 'path' : 'request';
  return new ApiError('bad_request', 'The request could not be understood.', { details: [{ field, message: 'is malformed' }] });
}

export const notFound: RequestHandler = (req, _res, next) => {
  next(new ApiError('not_found', `No route for ${req.method} ${req.path}`));
};

/** Maps anything thrown or passed to next() onto the closed error union. */
export function toApiError(err: unknown, log?: { warn: (o: object, m: string) => void; error: (o: object, m: string) => void }): ApiError {
  if (err instanceof ApiError) return err;
  const known = err && typeof err === 'object' ? (fromBodyParser(err) ?? fromHttpError(err)) : null;
  if (known) return known;
  if (isInfrastructureError(err)) {
    log?.warn({ err: (err as Error).message }, 'dependency failure');
    return new ApiError('api_error', 'A backing service is temporarily unavailable.', {
      // JSON-encoded, the same shape as every other agent_instructions the API and the gate send.
      top: { agent_instructions: JSON.stringify(retryWithBackoff(OUTAGE_RETRY_AFTER_SECONDS)) },
      headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
    });
  }
  // The details go to the log only: a 500 never echoes internal messages, stacks or SQL.
  log?.error({ err }, 'unhandled error');
  return new ApiError('internal_error', 'An unexpected error occurred.');
}

export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const apiError = toApiError(err, req.log ?? console);
  if (res.headersSent) return res.end();
  for (const [name, value] of Object.entries(apiError.headers ?? {})) res.setHeader(name, value);
  // The verify page and the dashboard are for people: their errors are pages too, never a JSON body in a tab.
  const surface = pageSurface(req.path);
  if (surface) return sendErrorPage(res, apiError, surface);
  res.status(apiError.status).json(apiError.toBody());
};
