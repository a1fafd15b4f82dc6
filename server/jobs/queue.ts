// Background jobs behind one small interface: BullMQ on Redis in production (workers may run in separate
// processes), an in-process runner in embedded mode. Jobs are deduplicated by `jobId` while queued.
import { Queue, Worker, JobsOptions } from 'bullmq';
import type { Logger } from '../logger';

export interface JobOptions {
  /** Deduplication key: a job with the same id that is still waiting is not added twice. */
  jobId?: string;
  delayMs?: number;
  attempts?: number;
}

export type JobHandler<T> = (data: T) => Promise<void>;

export interface JobQueue {
  add<T>(name: string, data: T, options?: JobOptions): Promise<void>;
  /** Registers the handler for `name`; with `runWorkers` false (API-only instances) handlers are not run here. */
  process<T>(name: string, handler: JobHandler<T>, options?: { concurrency?: number }): void;
  /** Runs `name` every `everyMs` (one schedule cluster-wide in BullMQ). */
  repeat<T>(name: string, data: T, everyMs: number): Promise<void>;
  /** Resolves when nothing is queued or running (in-process runner; tests and shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

interface Pending {
  name: string;
  data: unknown;
  jobId?: string;
  attemptsLeft: number;
}

export class InProcessJobQueue implements JobQueue {
  private readonly handlers = new Map<string, { handler: JobHandler<unknown>; concurrency: number }>();
  private readonly queue: Pending[] = [];
  private readonly queuedIds = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private running = 0;
  private closed = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly logger: Logger) {}

  async add<T>(name: string, data: T, options: JobOptions = {}) {
    if (this.closed) return;
    const key = options.jobId ? `${name}:${options.jobId}` : undefined;
    if (key && this.queuedIds.has(key)) return;
    if (key) this.queuedIds.add(key);
    const job: Pending = { name, data, jobId: key, attemptsLeft: options.attempts ?? 3 };
    if (options.delayMs) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.enqueue(job);
      }, options.delayMs);
      timer.unref();
      this.timers.add(timer);
    } else {
      this.enqueue(job);
    }
  }

  process<T>(name: string, handler: JobHandler<T>, options: { concurrency?: number } = {}) {
    this.handlers.set(name, { handler: handler as JobHandler<unknown>, concurrency: options.concurrency ?? 1 });
    this.pump();
  }

  async repeat<T>(name: string, data: T, everyMs: number) {
    const timer = setInterval(() => void this.add(name, data, { jobId: `repeat:${name}` }), everyMs);
    timer.unref();
    this.timers.add(timer);
  }

  async idle() {
    if (this.queue.length === 0 && this.running === 0) return;
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  async close() {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await this.idle();
  }

  private enqueue(job: Pending) {
    this.queue.push(job);
    setImmediate(() => this.pump());
  }

  private pump() {
    for (let i = 0; i < this.queue.length; i++) {
      const job = this.queue[i];
      const entry = this.handlers.get(job.name);
      if (!entry || this.running >= entry.concurrency) continue;
      this.queue.splice(i--, 1);
      if (job.jobId) this.queuedIds.delete(job.jobId);
      this.running++;
      entry
        .handler(job.data)
        .catch((err: Error) => {
          this.logger.warn({ err: err.message, job: job.name }, 'job failed');
          if (--job.attemptsLeft > 0 && !this.closed) {
            const timer = setTimeout(() => this.enqueue(job), 1000);
            timer.unref();
          }
        })
        .finally(() => {
          this.running--;
          this.pump();
          this.notifyIdle();
        });
    }
    this.notifyIdle();
  }

  private notifyIdle() {
    if (this.queue.length === 0 && this.running === 0) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    }
  }
}

export class BullJobQueue implements JobQueue {
  private readonly queues = new Map<string, Queue>();
  private readonly workers: Worker[] = [];
  private readonly retries = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly redisUrl: string,
    private readonly prefix: string,
    private readonly logger: Logger,
    private readonly runWorkers = true,
    /** Longest a caller waits to enqueue while Redis is down or hung (BullMQ itself would wait forever). */
    private readonly timeoutMs = 1500,
  ) {}

  /** Rejects with an ETIMEDOUT error (→ 503 api_error on a request) instead of blocking the caller. */
  private bounded<T>(what: string, work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error(`job queue: ${what} not acknowledged within ${this.timeoutMs} ms`), { code: 'ETIMEDOUT' })),
        this.timeoutMs,
      );
    });
    work.catch(() => undefined); // a late failure after the timeout must not become an unhandled rejection
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }

  private connection() {
    const url = new URL(this.redisUrl);
    return {
      host: url.hostname,
      port: Number(url.port || 6379),
      db: url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0,
      username: url.username || undefined,
      password: url.password || undefined,
      tls: url.protocol === 'rediss:' ? {} : undefined,
      maxRetriesPerRequest: null,
      retryStrategy: (attempt: number) => Math.min(50 * attempt, 500),
    };
  }

  private queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.connection(), prefix: this.prefix + 'bull' });
      q.on('error', (err) => this.logger.warn({ err: err.message, queue: name }, 'queue error'));
      this.queues.set(name, q);
    }
    return q;
  }

  async add<T>(name: string, data: T, options: JobOptions = {}) {
    const opts: JobsOptions = {
      jobId: options.jobId ? options.jobId.replace(/:/g, '_') : undefined,
      delay: options.delayMs,
      attempts: options.attempts ?? 3,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: true,
      removeOnFail: 1000,
    };
    await this.bounded(`add ${name}`, this.queue(name).add(name, data, opts));
  }

  process<T>(name: string, handler: JobHandler<T>, options: { concurrency?: number } = {}) {
    if (!this.runWorkers) return;
    const worker = new Worker(name, async (job) => handler(job.data as T), {
      connection: this.connection(),
      prefix: this.prefix + 'bull',
      concurrency: options.concurrency ?? 1,
    });
    worker.on('error', (err) => this.logger.warn({ err: err.message, queue: name }, 'worker error'));
    worker.on('failed', (job, err) => this.logger.warn({ err: err.message, queue: name, id: job?.id }, 'job failed'));
    this.workers.push(worker);
  }

  /**
   * Registers the schedule (idempotent). Start-up must not fail or hang on a Redis outage, so when Redis does
   * not answer in time the registration is retried in the background until it succeeds or the queue closes.
   */
  async repeat<T>(name: string, data: T, everyMs: number) {
    const register = () => this.bounded(`repeat ${name}`, this.queue(name).upsertJobScheduler(`repeat-${name}`, { every: everyMs }, { name, data }));
    try {
      await register();
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, queue: name }, 'could not register a repeating job yet; retrying in the background');
      const retry = setInterval(() => {
        if (this.closed) return clearInterval(retry);
        register().then(
          () => clearInterval(retry),
          () => undefined,
        );
      }, 5000);
      retry.unref();
      this.retries.add(retry);
    }
  }

  async idle() {
    /* BullMQ jobs are durable in Redis; nothing to wait for locally beyond close(). */
  }

  async close() {
    this.closed = true;
    for (const t of this.retries) clearInterval(t);
    await Promise.all(this.workers.map((w) => w.close()));
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}
