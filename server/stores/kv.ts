// Small key-value and pub/sub interfaces with a Redis implementation (production, shared by all instances)
// and an in-process one (embedded mode). Keys are namespaced with the configured prefix.
import { EventEmitter } from 'node:events';
import type { Redis } from './redis';
import type { CircuitBreaker } from '../circuit';

export interface KeyValueStore {
  readonly shared: boolean;
  get(key: string): Promise<string | null>;
  /** Sets a value; `nx` only when absent. Returns whether it was set. */
  set(key: string, value: string, ttlMs: number, options?: { nx?: boolean }): Promise<boolean>;
  /** Atomically increments by `by` and (re)applies the TTL when the key is new. Returns the new value. */
  incr(key: string, ttlMs: number, by?: number): Promise<number>;
}

export interface PubSub {
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): Promise<void>;
  /**
   * Called after the subscription connection came back from an outage: messages published meanwhile were
   * lost, so subscribers that cache should drop what they hold. Never called for the in-process bus.
   */
  onResubscribe?(handler: () => void): void;
  close(): Promise<void>;
}

const INCR_SCRIPT = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(v) == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v`;

/** The script as an ioredis custom command: sent as EVALSHA (the script text travels once, on NOSCRIPT). */
interface ScriptedRedis {
  kyaIncr(key: string, by: number, ttlMs: number): Promise<number>;
}

export class RedisKeyValueStore implements KeyValueStore {
  readonly shared = true;
  private readonly scripts: ScriptedRedis;

  /** Every command goes through `circuit`: while Redis is out, calls fail at once instead of timing out. */
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly circuit: CircuitBreaker,
  ) {
    redis.defineCommand('kyaIncr', { numberOfKeys: 1, lua: INCR_SCRIPT });
    this.scripts = redis as unknown as ScriptedRedis;
  }

  async get(key: string) {
    return this.circuit.run(() => this.redis.get(this.prefix + key));
  }
  async set(key: string, value: string, ttlMs: number, options: { nx?: boolean } = {}) {
    const k = this.prefix + key;
    const result = await this.circuit.run(() => (options.nx ? this.redis.set(k, value, 'PX', ttlMs, 'NX') : this.redis.set(k, value, 'PX', ttlMs)));
    return result === 'OK';
  }
  async incr(key: string, ttlMs: number, by = 1) {
    return Number(await this.circuit.run(() => this.scripts.kyaIncr(this.prefix + key, by, ttlMs)));
  }
}

export class MemoryKeyValueStore implements KeyValueStore {
  readonly shared = false;
  private readonly entries = new Map<string, { value: string; expiresAt: number }>();
  constructor(private readonly now: () => number = Date.now) {}

  private live(key: string) {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }
  async get(key: string) {
    return this.live(key)?.value ?? null;
  }
  async set(key: string, value: string, ttlMs: number, options: { nx?: boolean } = {}) {
    if (options.nx && this.live(key)) return false;
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    this.sweep();
    return true;
  }
  async incr(key: string, ttlMs: number, by = 1) {
    const entry = this.live(key);
    const value = (entry ? Number(entry.value) : 0) + by;
    this.entries.set(key, { value: String(value), expiresAt: entry?.expiresAt ?? this.now() + ttlMs });
    this.sweep();
    return value;
  }
  /** Bounded memory: drop expired entries once the map grows. */
  private sweep() {
    if (this.entries.size < 50_000) return;
    const now = this.now();
    for (const [k, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(k);
  }
}

export class RedisPubSub implements PubSub {
  private readonly handlers = new Map<string, Array<(m: string) => void>>();
  private readonly resubscribed: Array<() => void> = [];
  /** Publishing goes through `circuit` (fails at once while Redis is out); subscribing relies on the subscriber's offline queue. */
  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly prefix: string,
    private readonly circuit: CircuitBreaker,
  ) {
    subscriber.on('message', (channel: string, message: string) => {
      for (const h of this.handlers.get(channel) ?? []) h(message);
    });
    // ioredis re-issues SUBSCRIBE on every reconnect. This is constructed after the first connection
    // attempt, so every 'ready' seen here follows a period in which messages may have been missed.
    subscriber.on('ready', () => {
      for (const h of this.resubscribed) h();
    });
  }
  onResubscribe(handler: () => void) {
    this.resubscribed.push(handler);
  }
  async publish(channel: string, message: string) {
    await this.circuit.run(() => this.publisher.publish(this.prefix + channel, message));
  }
  async subscribe(channel: string, handler: (m: string) => void) {
    const full = this.prefix + channel;
    const list = this.handlers.get(full) ?? [];
    list.push(handler);
    this.handlers.set(full, list);
    if (list.length === 1) {
      // While Redis is down the SUBSCRIBE waits in the offline queue and is sent on reconnect; only wait for
      // it when connected, so start-up never blocks on Redis.
      const subscribed = this.subscriber.subscribe(full);
      subscribed.catch(() => undefined);
      if (this.subscriber.status === 'ready') await subscribed;
    }
  }
  async close() {
    this.handlers.clear();
    this.resubscribed.length = 0;
  }
}

export class MemoryPubSub implements PubSub {
  private readonly emitter = new EventEmitter();
  async publish(channel: string, message: string) {
    this.emitter.emit(channel, message);
  }
  async subscribe(channel: string, handler: (m: string) => void) {
    this.emitter.on(channel, handler);
  }
  async close() {
    this.emitter.removeAllListeners();
  }
}
