// The write-behind batcher: the latest value per key is written in one batch, on flush() and on stop(); a failed
// batch is dropped (logged), never retried or thrown at the caller.
import { WriteBehind } from '../../server/db/writeBehind';
import { createLogger } from '../../server/logger';

describe('WriteBehind', () => {
  const logger = createLogger('silent');

  it('writes the latest value of each key in one batch', async () => {
    const batches: Array<Array<[string, number]>> = [];
    const wb = new WriteBehind<string, number>({ what: 'test write', intervalMs: 60_000, logger, write: async (batch) => void batches.push([...batch]) });
    wb.set('a', 1);
    wb.set('b', 2);
    wb.set('a', 3);
    expect(wb.size).toBe(2);
    await wb.flush();
    expect(batches).toEqual([
      [
        ['a', 3],
        ['b', 2],
      ],
    ]);
    expect(wb.size).toBe(0);
    await wb.flush();
    expect(batches).toHaveLength(1);
  });

  it('writes what is pending when stopped', async () => {
    const written: string[] = [];
    const wb = new WriteBehind<string, number>({ what: 'test write', intervalMs: 60_000, logger, write: async (batch) => void written.push(...batch.keys()) });
    wb.start();
    wb.set('k', 1);
    await wb.stop();
    expect(written).toEqual(['k']);
  });

  it('drops a failed batch without throwing, and writes later values normally', async () => {
    let fail = true;
    const written: string[] = [];
    const wb = new WriteBehind<string, number>({
      what: 'test write',
      intervalMs: 60_000,
      logger,
      write: async (batch) => {
        if (fail) throw new Error('database down');
        written.push(...batch.keys());
      },
    });
    wb.set('lost', 1);
    await expect(wb.flush()).resolves.toBeUndefined();
    fail = false;
    wb.set('kept', 2);
    await wb.flush();
    expect(written).toEqual(['kept']);
  });
});
