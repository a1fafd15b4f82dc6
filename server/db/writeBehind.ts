// Write-behind for values a hot path records but nobody waits for (a credential's last use): kept in memory by
// key, the latest value per key winning, and written as one batch every `intervalMs` and once more on stop().
// A failed batch is logged and dropped, so use it only where a lost write costs precision, never correctness;
// a write the caller must see committed goes through GroupCommit (groupCommit.ts) instead.
import type { Logger } from '../logger';

export interface WriteBehindOptions<K, V> {
  /** Names the write in the log line of a failed batch ("<what> failed"). */
  what: string;
  intervalMs: number;
  /** Writes one batch (one statement, typically a repository method taking every entry). */
  write: (batch: Map<K, V>) => Promise<void>;
  logger: Logger;
}

export class WriteBehind<K, V> {
  private pending = new Map<K, V>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly options: WriteBehindOptions<K, V>) {}

  /** Records `value` for `key`; replaces a value not yet written. */
  set(key: K, value: V): void {
    this.pending.set(key, value);
  }

  /** Entries recorded and not yet handed to a write. */
  get size(): number {
    return this.pending.size;
  }

  /** Starts the periodic flush (the timer never keeps the process alive). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Writes what is pending now; resolves once that batch is written or has failed (never rejects). */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.options.write(batch);
    } catch (err) {
      this.options.logger.debug({ err: (err as Error).message }, `${this.options.what} failed`);
    }
  }

  /** Stops the timer and writes what is still pending. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}
