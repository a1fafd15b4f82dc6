// The circuit breaker and the group commit on their own: which failures open a circuit, that an open circuit
// answers at once, that only a successful probe closes it; that concurrent submissions share one write, each
// caller gets its batch's result or error, and rows arriving during a write form the next batch.
import { CircuitBreaker, CircuitOpenError, isInfrastructureError, isPostgresOutage } from '../../server/circuit';
import { GroupCommit } from '../../server/db/groupCommit';

const quiet = { warn: () => undefined, info: () => undefined };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const timeout = () => Object.assign(new Error('Query read timeout'), {});

function breaker(probe: () => Promise<unknown>, extra: Partial<ConstructorParameters<typeof CircuitBreaker>[0]> = {}) {
  return new CircuitBreaker({ name: 'dep', probe, probeIntervalMs: 20, probeTimeoutMs: 50, trips: isPostgresOutage, logger: quiet, ...extra });
}

describe('CircuitBreaker', () => {
  it('opens on an outage-like failure and then fails calls at once with an infrastructure error', async () => {
    const c = breaker(() => Promise.reject(new Error('still down')));
    try {
      await expect(c.run(() => Promise.reject(timeout()))).rejects.toThrow('Query read timeout');
      await sleep(100); // the confirming probe fails
      expect(c.isOpen).toBe(true);
      let called = false;
      const started = performance.now();
      const err = await c.run(async () => (called = true)).catch((e) => e);
      expect(performance.now() - started).toBeLessThan(20);
      expect(called).toBe(false);
      expect(err).toBeInstanceOf(CircuitOpenError);
      expect(isInfrastructureError(err)).toBe(true);
    } finally {
      c.stop();
    }
  });

  it('stays closed on failures that are not outages (a dropped connection, a constraint violation)', async () => {
    const c = breaker(() => Promise.resolve());
    try {
      await c.run(() => Promise.reject(Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' }))).catch(() => undefined);
      await c.run(() => Promise.reject(Object.assign(new Error('duplicate key'), { code: '23505' }))).catch(() => undefined);
      expect(c.isOpen).toBe(false);
    } finally {
      c.stop();
    }
  });

  it('closes only when a probe succeeds, and tells its listeners', async () => {
    let up = false;
    const c = breaker(async () => {
      if (!up) throw new Error('down');
    });
    const closed: number[] = [];
    c.onClose(() => closed.push(Date.now()));
    try {
      c.failure(timeout());
      await sleep(80);
      expect(c.isOpen).toBe(true);
      up = true;
      const back = Date.now();
      while (c.isOpen && Date.now() - back < 1000) await sleep(5);
      expect(c.isOpen).toBe(false);
      expect(closed).toHaveLength(1);
      expect(await c.run(async () => 'ok')).toBe('ok');
    } finally {
      c.stop();
    }
  });

  it('counts a probe that hangs as failed', async () => {
    let hang = true;
    const c = breaker(() => (hang ? new Promise(() => undefined) : Promise.resolve()));
    try {
      c.failure(timeout());
      await sleep(150);
      expect(c.isOpen).toBe(true);
      hang = false;
      await sleep(150);
      expect(c.isOpen).toBe(false);
    } finally {
      c.stop();
    }
  });

  it('stays closed when one call times out but the probe finds the dependency answering (a slow statement is not an outage)', async () => {
    const c = breaker(() => Promise.resolve('ok'));
    try {
      await expect(c.run(() => Promise.reject(timeout()))).rejects.toThrow('Query read timeout');
      await sleep(100);
      expect(c.isOpen).toBe(false);
      await expect(c.run(async () => 'served')).resolves.toBe('served');
    } finally {
      c.stop();
    }
  });

  it('fails a call that outlives callTimeoutMs and opens', async () => {
    const c = breaker(() => new Promise(() => undefined), { callTimeoutMs: 30, trips: isInfrastructureError });
    try {
      const started = performance.now();
      await expect(c.run(() => new Promise(() => undefined))).rejects.toMatchObject({ code: 'ETIMEDOUT' });
      expect(performance.now() - started).toBeLessThan(200);
      await sleep(100); // the confirming probe times out
      expect(c.isOpen).toBe(true);
    } finally {
      c.stop();
    }
  });
});

describe('GroupCommit', () => {
  it('writes concurrent submissions as one batch and releases every caller with its result', async () => {
    const batches: number[][] = [];
    const g = new GroupCommit(
      async (items: number[]) => {
        batches.push(items);
        return `batch${batches.length}`;
      },
      { windowMs: 5, maxBatch: 100 },
    );
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => g.submit(n)));
    expect(batches).toEqual([[1, 2, 3, 4, 5]]);
    expect(results).toEqual(['batch1', 'batch1', 'batch1', 'batch1', 'batch1']);
  });

  it('rejects every caller of a failed batch, and the next batch still runs', async () => {
    let fail = true;
    const g = new GroupCommit(
      async (items: string[]) => {
        if (fail) throw new Error('commit failed');
        return items.length;
      },
      { windowMs: 0, maxBatch: 100 },
    );
    const failed = await Promise.allSettled([g.submit('a'), g.submit('b')]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await g.submit('c')).toBe(1);
  });

  it('runs one write at a time: rows arriving during a write form the next batch, capped at maxBatch', async () => {
    const batches: number[][] = [];
    let release: () => void = () => undefined;
    const g = new GroupCommit(
      (items: number[]) => {
        batches.push(items);
        return batches.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
      },
      { windowMs: 0, maxBatch: 3 },
    );
    const first = g.submit(0);
    await sleep(5);
    const rest = [1, 2, 3, 4].map((n) => g.submit(n));
    await sleep(5);
    expect(batches).toEqual([[0]]);
    release();
    await Promise.all([first, ...rest]);
    expect(batches).toEqual([[0], [1, 2, 3], [4]]);
  });

  /** A group commit whose first write hangs until `fail` is called; later writes succeed. 'a' is in that write, 'b' and 'c' queued. */
  async function firstWriteFailing() {
    const batches: string[][] = [];
    let fail: (err: Error) => void = () => undefined;
    const g = new GroupCommit(
      (items: string[]) => {
        batches.push(items);
        return batches.length === 1 ? new Promise<void>((_resolve, reject) => (fail = reject)) : Promise.resolve();
      },
      { windowMs: 0, maxBatch: 100, shedQueuedOn: isPostgresOutage },
    );
    const first = g.submit('a');
    await sleep(5);
    const queued = [g.submit('b'), g.submit('c')];
    return { g, batches, first, queued, fail: (err: Error) => fail(err) };
  }

  it('fails the rows queued behind a write that timed out with it, instead of making them wait a second timeout', async () => {
    const { g, batches, first, queued, fail } = await firstWriteFailing();
    fail(timeout());
    const settled = await Promise.allSettled([first, ...queued]);
    expect(settled.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'written'))).toEqual([
      'Query read timeout',
      'Query read timeout',
      'Query read timeout',
    ]);
    expect(batches).toEqual([['a']]);
    // Rows that arrive afterwards are written as usual.
    await g.submit('d');
    expect(batches).toEqual([['a'], ['d']]);
  });

  it('still writes the queued rows after a write failed for another reason', async () => {
    const { batches, first, queued, fail } = await firstWriteFailing();
    fail(Object.assign(new Error('duplicate key'), { code: '23505' }));
    await expect(first).rejects.toThrow('duplicate key');
    await Promise.all(queued);
    expect(batches).toEqual([['a'], ['b', 'c']]);
  });

  it('drain() waits for everything submitted so far', async () => {
    const written: number[] = [];
    const g = new GroupCommit(
      async (items: number[]) => {
        await sleep(10);
        written.push(...items);
      },
      { windowMs: 20, maxBatch: 100 },
    );
    void g.submit(1);
    void g.submit(2);
    await g.drain();
    expect(written).toEqual([1, 2]);
    expect(g.pending).toBe(0);
  });
});
