// Group commit: callers submit rows and wait; rows are collected for a few milliseconds and written together
// by one `write` call (one statement), and every waiting caller is released with that write's result, or
// with its error. One write runs at a time; rows that arrive meanwhile form the next batch, so under load
// batches grow instead of statements queueing.

export interface GroupCommitOptions {
  /** How long the first row of a batch waits for company; 0 = until the current turn of the event loop ends. */
  windowMs: number;
  /** A batch is written as soon as it holds this many rows. */
  maxBatch: number;
  /**
   * Errors after which the rows queued behind the failed write fail with it instead of being written: they
   * have already waited that whole write (a dependency timeout), and a second one would break the bound on an
   * answer's time. Other errors (a constraint, a bug) fail only their own batch.
   */
  shedQueuedOn?: (err: unknown) => boolean;
}

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<T, R> {
  private queue: Array<Waiting<T, R>> = [];
  private timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  private writing: Promise<void> | null = null;

  constructor(
    private readonly write: (items: T[]) => Promise<R>,
    private readonly options: GroupCommitOptions,
  ) {}

  /** Resolves once `item` is committed (with the batch's result); rejects if its batch failed. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.writing) return; // the running write starts the next batch when it ends
      if (this.queue.length >= this.options.maxBatch) this.startWrite();
      else if (!this.timer)
        this.timer = this.options.windowMs > 0 ? setTimeout(() => this.startWrite(), this.options.windowMs) : setImmediate(() => this.startWrite());
    });
  }

  /** Rows submitted but not yet committed. */
  get pending(): number {
    return this.queue.length;
  }

  /** Resolves once everything submitted so far has been written (or has failed). */
  async drain(): Promise<void> {
    while (this.writing || this.queue.length) {
      if (!this.writing) this.startWrite();
      await this.writing;
    }
  }

  private startWrite() {
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = null;
    }
    if (this.writing || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.options.maxBatch);
    let run: Promise<R>;
    try {
      run = this.write(batch.map((w) => w.item));
    } catch (err) {
      run = Promise.reject(err);
    }
    this.writing = run
      .then(
        (result) => {
          for (const w of batch) w.resolve(result);
        },
        (err) => {
          const failed = this.options.shedQueuedOn?.(err) ? [...batch, ...this.queue.splice(0)] : batch;
          for (const w of failed) w.reject(err);
        },
      )
      .finally(() => {
        this.writing = null;
        // Rows that arrived during the write have already waited a whole write: no extra window for them.
        if (this.queue.length) this.startWrite();
      });
  }
}
