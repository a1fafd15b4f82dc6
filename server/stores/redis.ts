// ioredis clients configured for bounded waits: commands fail fast while disconnected (no offline queue),
// each command times out, and reconnects are retried every ≤ 500 ms so service resumes within a second.
import Redis, { RedisOptions } from 'ioredis';
import type { Logger } from '../logger';

export type { Redis };

/**
 * `subscriber` clients only SUBSCRIBE: they keep an offline queue and retry without limit or timeout, so a
 * SUBSCRIBE issued while Redis is down (e.g. at start) is sent once it is back instead of failing start-up.
 */
export function createRedis(url: string, timeoutMs: number, logger: Logger, name = 'main', subscriber = false): Redis {
  const options: RedisOptions = {
    lazyConnect: true,
    enableOfflineQueue: subscriber,
    enableAutoPipelining: !subscriber,
    maxRetriesPerRequest: subscriber ? null : 0,
    commandTimeout: subscriber ? undefined : timeoutMs,
    connectTimeout: Math.min(timeoutMs, 1000),
    retryStrategy: (attempt) => Math.min(50 * attempt, 500),
    reconnectOnError: () => true,
  };
  const client = new Redis(url, options);
  let warned = false;
  client.on('error', (err) => {
    // Never let a connection error kill the process; log once per outage.
    if (!warned) logger.warn({ err: err.message, client: name }, 'redis connection error');
    warned = true;
  });
  client.on('ready', () => {
    if (warned) logger.info({ client: name }, 'redis connection restored');
    warned = false;
  });
  return client;
}

/** Connects and waits for the first ready, bounded by `timeoutMs`. */
export async function connectRedis(client: Redis, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    client.connect(),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`redis not reachable within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Closes a client without waiting on a Redis that is down (QUIT would sit in the offline queue forever). */
export async function closeRedis(client: Redis, timeoutMs = 1000): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    client.quit().catch(() => undefined),
    new Promise((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  client.disconnect();
}
