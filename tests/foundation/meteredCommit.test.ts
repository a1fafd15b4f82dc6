// The group-commit statement's durability setting is its own: with synchronous commit relaxed, the batch is
// committed and visible at once, and the pooled connection it ran on keeps the server's setting for every
// other statement (set_config(..., true) is local to the statement's implicit transaction).
import crypto from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { MeteredRecordsRepository } from '../../server/repositories/meteredRecords';
import { loadConfig } from '../../server/config';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { TEST_DATABASE_URL } from '../support/env';

describe('metered records commit', () => {
  let h: Harness;
  let single: Knex;
  beforeAll(async () => {
    h = await createHarness({ overrides: { runWorkers: false } });
    single = knexFactory({ client: 'pg', connection: TEST_DATABASE_URL, pool: { min: 1, max: 1 } });
  });
  afterAll(async () => {
    await single?.destroy();
    await h?.close();
  });
  beforeEach(() => resetTables(h.deps, ['accounts']));

  const entry = (accountId: string) => ({
    account_id: accountId,
    request_id: crypto.randomUUID(),
    identity_kind: 'wallet' as const,
    identity_value: '0x' + crypto.randomBytes(20).toString('hex'),
    decision: 'allow' as const,
    reasons: [],
    signer_kind: null,
    signer_sanctions: null,
    created_at: new Date(),
  });

  it.each([
    ['relaxed', false],
    ['synchronous', true],
  ])('commits a %s batch visibly and leaves the connection on the server setting', async (_name, synchronousCommit) => {
    const { accountId } = await createMerchant(h.deps);
    const repo = new MeteredRecordsRepository(single, { synchronousCommit });
    const before = (await single.raw<{ rows: Array<{ synchronous_commit: string }> }>('show synchronous_commit')).rows[0].synchronous_commit;
    const xid = await repo.commit({ audit: [entry(accountId), entry(accountId)], usage: [{ accountId, period: '2026-11', shard: 0, count: 2 }] });

    expect(xid).toMatch(/^\d+$/);
    expect(Number((await h.deps.db('assess_audit').where({ account_id: accountId }).count({ n: '*' }))[0].n)).toBe(2);
    expect(await h.deps.db('usage_monthly').where({ account_id: accountId }).select('period', 'shard', 'count')).toEqual([
      { period: '2026-11', shard: 0, count: 2 },
    ]);
    const after = (await single.raw<{ rows: Array<{ synchronous_commit: string }> }>('show synchronous_commit')).rows[0].synchronous_commit;
    expect(after).toBe(before);
  });

  it('runs the batch as one named prepared statement per connection, planned once for every later batch', async () => {
    const { accountId } = await createMerchant(h.deps);
    const fresh = knexFactory({ client: 'pg', connection: TEST_DATABASE_URL, pool: { min: 1, max: 1 } });
    try {
      const repo = new MeteredRecordsRepository(fresh, { synchronousCommit: false });
      const prepared = async () =>
        (await fresh.raw<{ rows: Array<{ name: string }> }>(`select name from pg_prepared_statements where name like 'kya\\_metered\\_%'`)).rows.length;
      expect(await prepared()).toBe(0);
      for (let i = 0; i < 3; i++) await repo.commit({ audit: [entry(accountId)], usage: [{ accountId, period: '2026-11', shard: i, count: 1 }] });
      expect(await prepared()).toBe(1);
      expect(Number((await h.deps.db('assess_audit').where({ account_id: accountId }).count({ n: '*' }))[0].n)).toBe(3);
    } finally {
      await fresh.destroy();
    }
  });

  it('relaxes synchronous commit by default and takes on/off/true/false from METERED_SYNCHRONOUS_COMMIT', () => {
    const base = { NODE_ENV: 'test', DATABASE_URL: TEST_DATABASE_URL };
    expect(loadConfig(base).meteredSynchronousCommit).toBe(false);
    expect(loadConfig({ ...base, METERED_SYNCHRONOUS_COMMIT: 'on' }).meteredSynchronousCommit).toBe(true);
    expect(loadConfig({ ...base, METERED_SYNCHRONOUS_COMMIT: 'true' }).meteredSynchronousCommit).toBe(true);
    expect(loadConfig({ ...base, METERED_SYNCHRONOUS_COMMIT: 'off' }).meteredSynchronousCommit).toBe(false);
    expect(() => loadConfig({ ...base, METERED_SYNCHRONOUS_COMMIT: 'maybe' })).toThrow(/METERED_SYNCHRONOUS_COMMIT/);
  });
});
