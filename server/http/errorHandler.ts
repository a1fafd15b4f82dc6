// The one place that turns errors into HTTP responses. Domain code throws ApiError; infrastructure
// failures (database, Redis) become 503 api_error; anything else is a 500 with a generic message.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ApiError, type AgentInstructions } from '../../shared/errors';

export const RETRY_WITH_BACKOFF: AgentInstructions = {
  action: 'retry_with_backoff',
  steps: [
    'Wait 5 seconds, then retry the same request.',
    'Double the wait after each failure, up to 30 seconds.',
    'If it still fails after 5 minutes, tell the user the identity service is unavailable.',
  ],
  user_message: 'The identity service is temporarily unavailable. Retrying shortly.',
};

const INFRA_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', '57P01', '57P03', '08006', '08001', '08003', '57014']);

/** Database/Redis/connection failures: transient, the caller should retry later. */
export function isInfrastructureError(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === 'KnexTimeoutError' || e.name === 'MaxRetriesPerRequestError') return true;
  if (e.code && INFRA_CODES.has(e.code)) return true;
  const message = e.message ?? '';
  return /Connection is closed|Stream isn't writeable|Command timed out|Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Query read timeout|connect ECONNREFUSED|Client has encountered a connection error|PGlite is closed/i.test(message);
}

function fromBodyParser(err: { type?: string; status?: number }): ApiError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return new ApiError('bad_request', 'Malformed JSON in request body.', { details: [{ field: 'body', message: 'is not valid JSON' }] });
    case 'entity.too.large':
      return new ApiError('payload_too_large', 'Request body is too large.', { details: [{ field: 'body', message: 'exceeds the size limit' }] });
    case 'encoding.unsupported':
    case 'charset.unsupported':
    case 'request.aborted':
    case 'request.size.invalid':
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
      top: { agent_instructions: RETRY_WITH_BACKOFF },
      headers: { 'Retry-After': '5' },
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
  res.status(apiError.status).json(apiError.toBody());
};
