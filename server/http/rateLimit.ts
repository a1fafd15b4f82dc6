// Per-second (and other windowed) rate limits with express-rate-limit. In production the counters live in
// Redis (rate-limit-redis), so the limit is global across instances; if Redis fails, counting falls back to
// this instance's memory (the circuit logs the outage once) rather than failing requests.
import type { Request, RequestHandler, Response } from 'express';
import { rateLimit, MemoryStore, type Store, type Options, type IncrementResponse } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { ApiError } from '../../shared/errors';
import type { CircuitBreaker } from '../circuit';
import type { Redis } from '../stores/redis';

/**
 * Redis first; this instance's memory while Redis's circuit is open. While open, requests do not wait on Redis
 * at all (a hung Redis would otherwise cost every request a command timeout); when the circuit's probe sees
 * Redis back, the Lua scripts are reloaded (a restarted Redis has lost them) and counting returns to Redis.
 */
class FallbackStore implements Store {
  readonly localKeys = false;
  private readonly memory = new MemoryStore();
  private options?: Options;

  constructor(
    private readonly redis: RedisStore,
    private readonly circuit: CircuitBreaker,
    readonly prefix: string,
  ) {
    circuit.onClose(() => {
      if (this.options) this.redis.init(this.options).catch((err) => this.circuit.failure(err));
    });
  }

  async init(options: Options) {
    this.options = options;
    this.memory.init(options);
    await this.redis.init(options).catch((err) => this.circuit.failure(err));
  }

  async increment(key: string): Promise<IncrementResponse> {
    if (this.circuit.isOpen) return this.memory.increment(key);
    try {
      return await this.circuit.run(() => this.redis.increment(key));
    } catch {
      return this.memory.increment(key);
    }
  }
  async decrement(key: string) {
    if (this.circuit.isOpen) return this.memory.decrement(key);
    await this.circuit.run(() => this.redis.decrement(key)).catch(() => this.memory.decrement(key));
  }
  async resetKey(key: string) {
    if (!this.circuit.isOpen) await this.redis.resetKey(key).catch(() => undefined);
    await this.memory.resetKey(key);
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

/** A windowed count bumped only when something happens (e.g. a failure), not on every request. */
export interface WindowCounter {
  /** Counts one event; returns the hits in the current window (all instances) and when the window resets. */
  increment(key: string): Promise<{ hits: number; resetTime: Date | null }>;
}

export interface LimiterFactory {
  create(spec: LimiterSpec): RequestHandler;
  counter(spec: { name: string; windowMs: number }): WindowCounter;
}

export function limiterFactory(redis: Redis | null, prefix: string, circuit: CircuitBreaker | null): LimiterFactory {
  const storeFor = (name: string): FallbackStore | MemoryStore =>
    redis && circuit
      ? new FallbackStore(
          new RedisStore({
            prefix: `${prefix}rl:${name}:`,
            sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<never>,
          }),
          circuit,
          name,
        )
      : new MemoryStore();
  return {
    counter(spec) {
      const store = storeFor(spec.name);
      const ready = Promise.resolve(store.init({ windowMs: spec.windowMs } as Options));
      return {
        async increment(key) {
          await ready;
          const { totalHits, resetTime } = await store.increment(key);
          return { hits: totalHits, resetTime: resetTime ?? null };
        },
      };
    },
    create(spec) {
      const store: Store = storeFor(spec.name);
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
