// The live monthly quota counters: Redis (shared by every instance) or in-process (embedded mode). Each Redis
// counter carries a generation and the PostgreSQL snapshot it was rebuilt from, which makes the rebuild after
// FLUSHALL or a Redis restart exact with several instances serving:
// - the rebuild sets the counter from the durable count only if it is still absent (one Lua script);
// - a call counted on an older generation (its increment was wiped) whose commit the rebuild's snapshot did not
//   include is added by `reconcile` after its batch commits; one counted on the current generation already is;
// - a refund only ever undoes an increment of the current generation.
import type { Redis } from './redis';
import type { CircuitBreaker } from '../circuit';

export interface CounterHit {
  used: number;
  /** Generation of the counter this call was counted on. */
  gen: string;
}

export interface QuotaCounters {
  /** Counts one call when the counter exists; null when it does not (new month, Redis restart, FLUSHALL). */
  increment(key: string): Promise<CounterHit | null>;
  /** Seeds an absent counter from the durable count read in `snapshot` (first writer wins), then counts one call. */
  rebuild(key: string, durable: number, snapshot: string, gen: string, ttlMs: number): Promise<CounterHit>;
  /** Undoes one increment of generation `gen`; a no-op once the counter was rebuilt or is gone. */
  refund(key: string, gen: string): Promise<void>;
  /** After commit `xid`: adds the calls of older generations that the current generation's snapshot did not include. */
  reconcile(key: string, xid: string, countsByGen: Map<string, number>): Promise<void>;
  /** Drops a counter (it missed increments during an outage); the next call rebuilds it. */
  drop(key: string): Promise<void>;
}

const INCREMENT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local v = redis.call('INCRBY', KEYS[1], 1)
return {v, redis.call('HGET', KEYS[2], 'gen') or ''}`;

const REBUILD = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local v = redis.call('INCRBY', KEYS[1], 1)
  return {v, redis.call('HGET', KEYS[2], 'gen') or ''}
end
local v = tonumber(ARGV[1]) + 1
redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'gen', ARGV[3], 'xmin', ARGV[4], 'xmax', ARGV[5], 'xip', ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {v, ARGV[3]}`;

const REFUND = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (redis.call('HGET', KEYS[2], 'gen') or '') ~= ARGV[1] then return 0 end
redis.call('DECRBY', KEYS[1], 1)
return 1`;

// Visibility as PostgreSQL defines it: below xmin committed before the snapshot; at or above xmax started after
// it; in between, seen unless still in progress (listed in xip).
const RECONCILE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local m = redis.call('HMGET', KEYS[2], 'gen', 'xmin', 'xmax', 'xip')
if not m[1] then return 0 end
local xid = tonumber(ARGV[1])
local seen = xid < tonumber(m[2])
if not seen and xid < tonumber(m[3]) then
  seen = true
  for x in string.gmatch(m[4], '[^,]+') do
    if tonumber(x) == xid then seen = false end
  end
end
if seen then return 0 end
local add = 0
for i = 2, #ARGV, 2 do
  if ARGV[i] ~= m[1] then add = add + tonumber(ARGV[i + 1]) end
end
if add > 0 then redis.call('INCRBY', KEYS[1], add) end
return add`;

interface ScriptedRedis {
  kyaQuotaIncrement(key: string, meta: string): Promise<[number, string] | null>;
  kyaQuotaRebuild(key: string, meta: string, durable: number, ttlMs: number, gen: string, xmin: string, xmax: string, xip: string): Promise<[number, string]>;
  kyaQuotaRefund(key: string, meta: string, gen: string): Promise<number>;
  kyaQuotaReconcile(key: string, meta: string, xid: string, ...genCounts: Array<string | number>): Promise<number>;
}

/** `xmin:xmax:xip,…` as returned by pg_current_snapshot(). */
function parseSnapshot(snapshot: string): [string, string, string] {
  const [xmin, xmax, xip = ''] = snapshot.split(':');
  return [xmin, xmax, xip];
}

export class RedisQuotaCounters implements QuotaCounters {
  private readonly scripts: ScriptedRedis;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly circuit: CircuitBreaker,
  ) {
    redis.defineCommand('kyaQuotaIncrement', { numberOfKeys: 2, lua: INCREMENT });
    redis.defineCommand('kyaQuotaRebuild', { numberOfKeys: 2, lua: REBUILD });
    redis.defineCommand('kyaQuotaRefund', { numberOfKeys: 2, lua: REFUND });
    redis.defineCommand('kyaQuotaReconcile', { numberOfKeys: 2, lua: RECONCILE });
    this.scripts = redis as unknown as ScriptedRedis;
  }

  private keys(key: string): [string, string] {
    return [this.prefix + key, `${this.prefix}${key}:gen`];
  }

  async increment(key: string) {
    const hit = await this.circuit.run(() => this.scripts.kyaQuotaIncrement(...this.keys(key)));
    return hit ? { used: Number(hit[0]), gen: hit[1] } : null;
  }
  async rebuild(key: string, durable: number, snapshot: string, gen: string, ttlMs: number) {
    const hit = await this.circuit.run(() => this.scripts.kyaQuotaRebuild(...this.keys(key), durable, ttlMs, gen, ...parseSnapshot(snapshot)));
    return { used: Number(hit[0]), gen: hit[1] };
  }
  async refund(key: string, gen: string) {
    await this.circuit.run(() => this.scripts.kyaQuotaRefund(...this.keys(key), gen));
  }
  async reconcile(key: string, xid: string, countsByGen: Map<string, number>) {
    const args: Array<string | number> = [];
    for (const [gen, count] of countsByGen) args.push(gen, count);
    await this.circuit.run(() => this.scripts.kyaQuotaReconcile(...this.keys(key), xid, ...args));
  }
  async drop(key: string) {
    const [counter, meta] = this.keys(key);
    await this.circuit.run(() => this.redis.del(counter, meta));
  }
}

/** One process owns the counters: nothing can wipe them behind its back, so one generation is enough. */
export class MemoryQuotaCounters implements QuotaCounters {
  private readonly counters = new Map<string, { value: number; expiresAt: number }>();
  constructor(private readonly now: () => number = Date.now) {}

  private live(key: string) {
    const entry = this.counters.get(key);
    if (entry && entry.expiresAt <= this.now()) {
      this.counters.delete(key);
      return undefined;
    }
    return entry;
  }
  async increment(key: string) {
    const entry = this.live(key);
    if (!entry) return null;
    entry.value += 1;
    return { used: entry.value, gen: '' };
  }
  async rebuild(key: string, durable: number, _snapshot: string, _gen: string, ttlMs: number) {
    const entry = this.live(key) ?? { value: durable, expiresAt: this.now() + ttlMs };
    entry.value += 1;
    this.counters.set(key, entry);
    if (this.counters.size > 50_000) for (const k of [...this.counters.keys()]) this.live(k);
    return { used: entry.value, gen: '' };
  }
  async refund(key: string) {
    const entry = this.live(key);
    if (entry) entry.value -= 1;
  }
  async reconcile() {}
  async drop(key: string) {
    this.counters.delete(key);
  }
}
