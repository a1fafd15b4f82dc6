// The hot-path budget: one Postgres and one Redis round trip per non-test assess (auth from the in-process
// cache, rate limit + quota pipelined), counted at the pg driver (every statement sent, whether through knex or
// as a prepared statement) and by wrapping the ioredis socket.
import pg from 'pg';
import request from 'supertest';
import type { Redis } from 'ioredis';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { ASSESS_TABLES, claimWallet, createOperator, evmAddress, mintCredential } from './seed';

// Batched write-behind work (audit rows, usage counts, last_used_at) runs on timers, never per request.
const WRITE_BEHIND = /assess_audit|usage_monthly|update credentials/;

describe('assess hot-path round trips', () => {
  let h: Harness;
  let key: string;
  let queries: string[] = [];
  let redisCommands: string[] = [];
  let redisWrites = 0;

  beforeAll(async () => {
    // No job workers in this process (an API-only instance): scoring runs elsewhere and would add its own queries.
    h = await createHarness({ overrides: { runWorkers: false } });
    await resetTables(h.deps, ASSESS_TABLES);
    ({ apiKey: key } = await createMerchant(h.deps, { tier: 'paid' }));
    const query = pg.Client.prototype.query;
    restore.push(() => (pg.Client.prototype.query = query));
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const q = args[0] as string | { text: string };
      queries.push(typeof q === 'string' ? q : q.text);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    const redis = h.deps.redis as Redis & { stream: { write: (...a: unknown[]) => boolean } };
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      redisCommands.push(command.name);
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    }) as typeof redis.sendCommand;
    const write = redis.stream.write.bind(redis.stream);
    redis.stream.write = (...args: unknown[]) => {
      redisWrites++;
      return (write as (...a: unknown[]) => boolean)(...args);
    };
  });
  const restore: Array<() => void> = [];
  afterAll(async () => {
    for (const r of restore) r();
    await h.close();
  });

  async function measure(body: object) {
    queries = [];
    redisCommands = [];
    redisWrites = 0;
    const res = await request(h.app).post('/v1/assess').set('X-API-Key', key).send(body);
    return { res, queries: queries.filter((q) => !WRITE_BEHIND.test(q)), redisCommands, redisWrites };
  }

  it('costs one query and one Redis round trip in wallet mode with a policy and a signer', async () => {
    const op = await createOperator(h.deps);
    const wallet = evmAddress();
    const signer = evmAddress();
    await claimWallet(h.deps, op, wallet);
    await claimWallet(h.deps, op, signer);
    const body = { address: wallet, policy: { require_kyc: true, min_age: 21, blocked_jurisdictions: ['IR'] }, signer: { address: signer, network: 'evm' } };
    await measure(body); // warm: API key cache, quota counter, rate-limit script
    const m = await measure(body);
    expect(m.res.status).toBe(200);
    expect(m.res.body.signer_match.kind).toBe('pass');
    expect(m.queries).toHaveLength(1);
    expect(m.redisCommands.length).toBeGreaterThanOrEqual(2); // rate limit + quota…
    expect(m.redisWrites).toBe(1); // …in one pipelined round trip
  });

  it('costs one query in token mode', async () => {
    const op = await createOperator(h.deps);
    const { token } = await mintCredential(h.deps, op);
    const body = { operator_token: token, policy: { require_kyc: true }, signer: { address: evmAddress(), network: 'evm' } };
    await measure(body);
    const m = await measure(body);
    expect(m.res.status).toBe(200);
    expect(m.queries).toHaveLength(1);
    expect(m.redisWrites).toBe(1);
  });

  it('costs no query and no Redis command in test mode', async () => {
    const m = await measure({ test: true, address: '0x0000000000000000000000000000000000000001' });
    expect(m.res.status).toBe(200);
    expect(m.queries).toHaveLength(0);
    expect(m.redisCommands).toHaveLength(0);
  });
});
