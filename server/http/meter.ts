// Metering for API-key routes: the per-second rate limit for every call, and the monthly quota for the
// metered endpoints (assess, session creation). Both counters are incremented in the same tick, so with
// ioredis auto-pipelining they cost one Redis round trip together. A metered response is held until what the
// call recorded (its quota count, assess's audit row) is committed; a failed commit turns it into a 503.
import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../../shared/errors';
import type { LimiterFactory } from './rateLimit';
import { toApiError } from './errorHandler';
import type { QuotaService, QuotaState, Reservation } from '../services/quota';
import type { MeteredRecorder } from '../services/meteredRecords';

export interface Meter {
  /** Rate limit + monthly quota (quota only consumed by successful responses). */
  metered(options?: { skip?: (req: Request) => boolean }): RequestHandler;
  /** Rate limit only. */
  limited(): RequestHandler;
}

export function quotaHeaders(res: Response, state: QuotaState) {
  res.setHeader('X-Quota-Limit', String(state.limit));
  res.setHeader('X-Quota-Used', String(state.used));
  res.setHeader('X-Quota-Reset', state.reset);
}

/** Headers of the held response that describe its body; replaced when the response becomes a 503. */
const BODY_HEADERS = ['content-type', 'content-length', 'etag'];

/**
 * Holds `res.end` until the call's audit rows and quota count are committed. Hooking end (rather than each
 * route awaiting) covers every metered route and every way a route answers.
 */
function holdUntilDurable(req: Request, res: Response, reservation: Reservation | null, recorder: MeteredRecorder) {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- restored and applied with the response as `this`
  const end = res.end;
  res.end = function heldEnd(this: Response, ...args: unknown[]) {
    res.end = end;
    const audit = recorder.auditWritten(String(req.id));
    const counted = reservation?.settle(res.statusCode);
    if (!audit && !counted) return (end as (...a: unknown[]) => Response).apply(this, args);
    Promise.all([audit, counted]).then(
      () => (end as (...a: unknown[]) => Response).apply(this, args),
      (err) => {
        const apiError = toApiError(err, req.log);
        for (const name of BODY_HEADERS) res.removeHeader(name);
        for (const [name, value] of Object.entries(apiError.headers ?? {})) res.setHeader(name, value);
        const body = JSON.stringify(apiError.toBody());
        res.statusCode = apiError.status;
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.setHeader('Content-Length', Buffer.byteLength(body));
        (end as (...a: unknown[]) => Response).call(res, body);
      },
    );
    return this;
  } as Response['end'];
}

export function createMeter(limiters: LimiterFactory, quota: QuotaService, recorder: MeteredRecorder): Meter {
  const perSecond = limiters.create({
    name: 'rps',
    windowMs: 1000,
    limit: (req) => req.principal?.rps ?? null,
    key: (req) => req.principal!.accountId,
  });

  const runLimiter = (req: Request, res: Response) => new Promise<unknown>((resolve) => perSecond(req, res, (err?: unknown) => resolve(err)));

  return {
    limited: () => perSecond,
    metered(options = {}) {
      return async (req, res, next) => {
        if (options.skip?.(req)) return next();
        const principal = req.principal!;
        try {
          const [limitErr, reservation] = await Promise.all([
            runLimiter(req, res),
            principal.quota === null ? Promise.resolve(null) : quota.reserve(principal.accountId, principal.quota),
          ]);
          if (limitErr) {
            if (reservation) {
              // Refunded: the headers show the count without this call (quota headers are on every 429 too, so a
              // client always sees where it stands).
              void reservation.settle(429);
              const { state } = reservation;
              quotaHeaders(res, { ...state, used: state.exceeded ? state.used : state.used - 1 });
            }
            return next(limitErr);
          }
          if (reservation) {
            quotaHeaders(res, reservation.state);
            req.quota = reservation.state;
            if (reservation.state.exceeded) {
              return next(
                new ApiError('quota_exceeded', 'Monthly quota exceeded; retrying does not help until the quota resets.', {
                  extra: { quota_reset: reservation.state.reset },
                }),
              );
            }
            // A client gone before the route answered: refunded (the route's answer, if any, is not counted).
            res.on('close', () => void reservation.settle(res.writableFinished ? res.statusCode : 499).catch(() => undefined));
          }
          holdUntilDurable(req, res, reservation, recorder);
          next();
        } catch (err) {
          next(err);
        }
      };
    },
  };
}
