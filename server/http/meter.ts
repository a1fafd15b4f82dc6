// Metering for API-key routes: the per-second rate limit for every call, and the monthly quota for the
// metered endpoints (assess, session creation). Both counters are incremented in the same tick, so with
// ioredis auto-pipelining they cost one Redis round trip together.
import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../../shared/errors';
import type { LimiterFactory } from './rateLimit';
import type { QuotaService, QuotaState } from '../services/quota';

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

export function createMeter(limiters: LimiterFactory, quota: QuotaService): Meter {
  const perSecond = limiters.create({
    name: 'rps',
    windowMs: 1000,
    limit: (req) => req.principal?.rps ?? null,
    key: (req) => req.principal!.accountId,
  });

  const runLimiter = (req: Request, res: Response) =>
    new Promise<unknown>((resolve) => perSecond(req, res, (err?: unknown) => resolve(err)));

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
              // Refunded: the headers show the count without this call (spec: quota headers on every 429 too).
              reservation.settle(429);
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
            res.on('finish', () => reservation.settle(res.statusCode));
            res.on('close', () => reservation.settle(res.writableFinished ? res.statusCode : 499));
          }
          next();
        } catch (err) {
          next(err);
        }
      };
    },
  };
}
