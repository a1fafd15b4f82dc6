// Per-second (and other windowed) rate limits with express-rate-limit. In production the counters live in
// Redis (rate-limit-redis), so the limit is global across instances; if Redis fails, counting falls back to
// this instance's memory (a warning is logged) rather than failing requests.
import type { Request, RequestHandler, Response } from 'express';
import { rateLimit, MemoryStore, type Store, type Options, type IncrementResponse } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { ApiError } from '../../shared/errors';
import type { Logger } from '../logger';
import type { Redis } from '../stores/redis';

/**
 * Redis first; this instance's memory while Redis is failing. While failing, requests do not wait on Redis
 * at all (a hung Redis would otherwise cost every request a command timeout); a background probe reloads
 * the Lua scripts at most every PROBE_INTERVAL_MS and switches back once Redis answers.
 */
const PROBE_INTERVAL_MS = 250;

class FallbackStore implements Store {
  readonly localKeys = false;
  private readonly memory = new MemoryStore();
  private options?: Options;
  private failing = false;
  private lastProbe = 0;
  private probing = false;

  constructor(private readonly redis: RedisStore, private readonly logger: Logger, readonly prefix: string) {}

  async init(options: Options) {
    this.options = options;
    this.memory.init(options);
    await this.redis.init(options).catch((err) => this.fail(err));
  }

  private fail(err: unknown) {
    if (!this.failing) this.logger.warn({ err: (err as Error).message, limiter: this.prefix }, 'rate-limit store unavailable; limiting per instance');
    this.failing = true;
    this.lastProbe = Date.now();
  }

  private probe() {
    if (this.probing || !this.options || Date.now() - this.lastProbe < PROBE_INTERVAL_MS) return;
    this.probing = true;
    this.lastProbe = Date.now();
    this.redis.init(this.options).then(
      () => {
        this.failing = false;
        this.logger.info({ limiter: this.prefix }, 'rate-limit store available again');
      },
      () => undefined,
    ).finally(() => (this.probing = false));
  }

  async increment(key: string): Promise<IncrementResponse> {
    if (this.failing) {
      this.probe();
      return this.memory.increment(key);
    }
    try {
      return await this.redis.increment(key);
    } catch (err) {
      this.fail(err);
      return this.memory.increment(key);
    }
  }
  async decrement(key: string) {
    if (this.failing) return this.memory.decrement(key);
    await this.redis.decrement(key).catch(() => this.memory.decrement(key));
  }
  async resetKey(key: string) {
    await this.redis.resetKey(key).catch(() => undefined);
    this.memory.resetKey(key);
  }
  shutdown() {
    this.memory.shutdown();
  }
}

export interface LimiterSpec {
  /** Key namespace, e.g. `rps` or `poll`. */
  name: string;
  windowMs: number;
  /** Requests per window; null = unlimited (only `X-RateLimit-Limit: unlimited` is sent). */
  limit: (req: Request) => number | null;
  key: (req: Request) => string;
}

export interface LimiterFactory {
  create(spec: LimiterSpec): RequestHandler;
}

export function limiterFactory(redis: Redis | null, prefix: string, logger: Logger): LimiterFactory {
  return {
    create(spec) {
      const store: Store = redis
        ? new FallbackStore(
            new RedisStore({
              prefix: `${prefix}rl:${spec.name}:`,
              sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<never>,
            }),
            logger,
            spec.name,
          )
        : new MemoryStore();
      const limiter = rateLimit({
        windowMs: spec.windowMs,
        limit: (req: Request) => spec.limit(req) ?? 0,
        skip: (req: Request) => spec.limit(req) === null,
        keyGenerator: spec.key,
        standardHeaders: false,
        legacyHeaders: false,
        store,
        validate: { singleCount: false, creationStack: false },
        handler: (req: Request, res: Response, next) => {
          const retryAfter = secondsUntil(req);
          res.setHeader('Retry-After', String(retryAfter));
          next(new ApiError('rate_limited', `Rate limit exceeded; retry in ${retryAfter} s.`));
        },
      });
      return (req, res, next) => {
        if (spec.limit(req) === null) {
          res.setHeader('X-RateLimit-Limit', 'unlimited');
          return next();
        }
        return limiter(req, res, (err?: unknown) => {
          const info = (req as Request & { rateLimit?: { limit: number; remaining: number } }).rateLimit;
          if (info) {
            res.setHeader('X-RateLimit-Limit', String(info.limit));
            res.setHeader('X-RateLimit-Remaining', String(Math.max(0, info.remaining)));
            res.setHeader('X-RateLimit-Reset', String(secondsUntil(req)));
          }
          next(err);
        });
      };
    },
  };
}

function secondsUntil(req: Request): number {
  const reset = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
  return reset ? Math.max(1, Math.ceil((reset.getTime() - Date.now()) / 1000)) : 1;
}
