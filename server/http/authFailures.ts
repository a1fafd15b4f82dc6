// Failed API-key authentication, limited per client address: once a client has failed `limit` times in a
// minute, its next requests presenting a key get 429 with Retry-After before the key is even looked up, so
// keys cannot be guessed at database speed. Failures are counted in Redis (all instances together; in this
// instance's memory while Redis fails); the answer to "is this address blocked?" is kept in memory, so a
// request that authenticates costs no extra Redis round trip. An instance learns of a block from the count
// its own next failure returns: spread over N instances, a client gets at most N - 1 extra attempts.
import type { RequestHandler } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../../shared/errors';
import { presentedApiKey } from './auth';
import type { LimiterFactory } from './rateLimit';

const WINDOW_MS = 60_000;

export function authFailureGuard(limiters: LimiterFactory, limit: number): RequestHandler {
  const failures = limiters.counter({ name: 'auth-fail', windowMs: WINDOW_MS });
  /** Client address → when its block ends (ms since epoch). Bounded: an attacker rotating addresses cannot grow it. */
  const blocked = new LRUCache<string, number>({ max: 100_000 });
  return (req, _res, next) => {
    if (!presentedApiKey(req.headers)) return next();
    const client = ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
    const until = blocked.get(client);
    const now = Date.now();
    if (until !== undefined && until > now) {
      const retryAfter = Math.max(1, Math.ceil((until - now) / 1000));
      return next(
        new ApiError('rate_limited', `Too many failed API-key attempts from this address; retry in ${retryAfter} s.`, {
          headers: { 'Retry-After': String(retryAfter) },
        }),
      );
    }
    req.recordAuthFailure = async () => {
      const { hits, resetTime } = await failures.increment(client);
      if (hits >= limit) blocked.set(client, resetTime?.getTime() ?? Date.now() + WINDOW_MS);
    };
    next();
  };
}
