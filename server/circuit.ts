// A circuit breaker per dependency (PostgreSQL, Redis), and the classification of infrastructure errors it
// and the error handler share. After an outage is detected (a timeout or an unreachable server), calls fail at
// once instead of each waiting out its own timeout; a background probe closes the circuit as soon as the
// dependency answers again. Hand-written rather than opossum: opossum's half-open state lets the next real
// request through as the probe, and on a dependency that is still hung that request would wait the full timeout.

export class CircuitOpenError extends Error {
  readonly code = 'ECIRCUITOPEN';
  constructor(readonly dependency: string) {
    super(`${dependency} is unavailable (circuit open)`);
    this.name = 'CircuitOpenError';
  }
}

const INFRA_CODES = new Set([
  'ECIRCUITOPEN',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  '57P01',
  '57P03',
  '08006',
  '08001',
  '08003',
  '57014',
]);
const INFRA_MESSAGES =
  /Connection is closed|Stream isn't writeable|Command timed out|Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Query read timeout|connect ECONNREFUSED|Client has encountered a connection error|PGlite is closed/i;

/** Database/Redis/connection failures: transient, the caller should retry later. */
export function isInfrastructureError(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === 'KnexTimeoutError' || e.name === 'MaxRetriesPerRequestError') return true;
  if (e.code && INFRA_CODES.has(e.code)) return true;
  return INFRA_MESSAGES.test(e.message ?? '');
}

const PG_OUTAGE_CODES = new Set(['ECONNREFUSED', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', '57P03']);
const PG_OUTAGE_MESSAGES =
  /Query read timeout|timeout exceeded when trying to connect|Connection terminated due to connection timeout|^timeout expired$|connect ECONNREFUSED/i;

/**
 * PostgreSQL failures that mean the server is out: timeouts (a hung server) and refused connections. One
 * dropped pooled connection (ECONNRESET, terminated backend) is not an outage: the pool replaces it.
 */
export function isPostgresOutage(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === 'KnexTimeoutError') return true;
  if (e.code && PG_OUTAGE_CODES.has(e.code)) return true;
  return PG_OUTAGE_MESSAGES.test(e.message ?? '');
}

export interface CircuitOptions {
  name: string;
  /** A cheap call that succeeds only when the dependency answers (PING, `select 1` on a fresh connection). */
  probe: () => Promise<unknown>;
  /** Pause between probes while open. */
  probeIntervalMs: number;
  /** A probe that has not answered by then counts as failed. */
  probeTimeoutMs: number;
  /** Which failures open the circuit. */
  trips: (err: unknown) => boolean;
  /**
   * A call not settled by then fails (and opens the circuit) even if the client's own timeout has not fired:
   * ioredis starts an auto-pipelined command's timeout only once the pipeline ahead of it has settled, so on a
   * hung Redis the second wave of commands would otherwise wait two timeouts.
   */
  callTimeoutMs?: number;
  logger: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

export class CircuitBreaker {
  private openedAt: number | null = null;
  private confirming = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly closeListeners: Array<() => void> = [];
  private readonly inFlight = new Set<(err: unknown) => void>();

  constructor(private readonly options: CircuitOptions) {}

  get name(): string {
    return this.options.name;
  }

  get isOpen(): boolean {
    return this.openedAt !== null;
  }

  /** Throws CircuitOpenError while open: the caller answers at once instead of waiting on the dependency. */
  check(): void {
    if (this.openedAt !== null) throw new CircuitOpenError(this.options.name);
  }

  /**
   * Runs `work` unless open; a failure that `trips` opens the circuit (and is rethrown). When the circuit opens
   * while calls are still waiting, they fail at once with CircuitOpenError: the first detected outage bounds
   * every call in flight, instead of each waiting out its own timeout (or two, when queued behind another).
   */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.openedAt !== null) return Promise.reject(new CircuitOpenError(this.options.name));
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const abort = (err: unknown) => {
        clearTimeout(timer);
        this.inFlight.delete(abort);
        reject(err);
      };
      this.inFlight.add(abort);
      const limit = this.options.callTimeoutMs;
      if (limit) timer = setTimeout(() => this.failure(Object.assign(new Error('Command timed out'), { code: 'ETIMEDOUT' }), abort), limit);
      work().then(
        (value) => {
          clearTimeout(timer);
          this.inFlight.delete(abort);
          resolve(value);
        },
        (err) => {
          this.failure(err, abort);
          abort(err);
        },
      );
    });
  }

  /**
   * Reports a failure (seen by `own`, which is aborted with it). A failure that looks like an outage is first
   * confirmed by one probe: a single slow statement or command (a lock wait, a large write, a busy machine)
   * must not take the dependency away from every other caller. Only when the probe fails too does the circuit
   * open. Calls made meanwhile run as usual, each bounded by its own timeout.
   */
  failure(err: unknown, own?: (err: unknown) => void): void {
    own?.(err);
    if (this.openedAt !== null || this.stopped || this.confirming || !this.options.trips(err)) return;
    this.confirming = true;
    void this.probeOnce().then((answered) => {
      this.confirming = false;
      if (!answered) this.open(err);
    });
  }

  private open(err: unknown): void {
    if (this.openedAt !== null || this.stopped) return;
    this.openedAt = Date.now();
    this.options.logger.warn(
      { dependency: this.options.name, err: (err as Error)?.message },
      'dependency unavailable; circuit open, answering without waiting on it',
    );
    const waiting = [...this.inFlight];
    this.inFlight.clear();
    for (const abort of waiting) abort(new CircuitOpenError(this.options.name));
    this.schedule();
  }

  /** Called when a probe sees the dependency back. */
  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule() {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.probe(), this.options.probeIntervalMs);
    this.timer.unref();
  }

  /** One probe, bounded by `probeTimeoutMs`: true when the dependency answered. */
  private async probeOnce(): Promise<boolean> {
    let timeout: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.options.probe(),
        new Promise((_, reject) => {
          timeout = setTimeout(() => reject(new Error('probe timed out')), this.options.probeTimeoutMs);
        }),
      ]);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timeout);
    }
  }

  private async probe() {
    this.timer = null;
    if (this.openedAt === null || this.stopped) return;
    if (!(await this.probeOnce())) {
      this.schedule();
      return;
    }
    const outageMs = Date.now() - this.openedAt;
    this.openedAt = null;
    this.options.logger.info({ dependency: this.options.name, outageMs }, 'dependency available again; circuit closed');
    for (const listener of this.closeListeners) listener();
  }
}
