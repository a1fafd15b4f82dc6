// The hot-path budget of a non-test assess: no Postgres statement on the request path once the identity is in
// the in-process cache (one statement on a miss), one Redis round trip (auth from the cache, rate limit + quota
// pipelined), plus the group commit that makes the audit row and the quota count durable before the response:
// one statement and one Redis reconcile per batch (a lone request is a batch of one). Counted at the pg driver (every statement sent, whether through knex or as a
// prepared statement) and by wrapping the ioredis socket.
import pg from 'pg';
import request from 'supertest';
import type { Redis } from 'ioredis';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { ASSESS_TABLES, claimWallet, createOperator, evmAddress, mintCredential } from './seed';

// last_used_at is written behind on a timer, never per request.
const WRITE_BEHIND = /update credentials/;
const GROUP_COMMIT = /insert into assess_audit/;

describe('assess hot-path round trips', () => {
  let h: Harness;
  let key: string;
  let queries: string[] = [];
  let redisCommands: string[] = [];
  let redisWrites = 0;

  beforeAll(async () => {
    // No job workers in this process (an API-only instance): scoring runs elsewhere and would add its own queries.
    // A 20 ms group-commit window so that concurrent requests reliably share a batch on a loaded machine.
    h = await createHarness({ env: { GROUP_COMMIT_MS: '20' }, overrides: { runWorkers: false } });
    await resetTables(h.deps, ASSESS_TABLES);
    ({ apiKey: key } = await createMerchant(h.deps, { tier: 'paid' }));
    // eslint-disable-next-line @typescript-eslint/unbound-method -- saved to be re-applied with its own `this`
    const query = pg.Client.prototype.query;
    restore.push(() => (pg.Client.prototype.query = query));
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const q = args[0] as string | { text: string };
      queries.push(typeof q === 'string' ? q : q.text);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    const redis = h.deps.redis as Redis & { stream: { write: (...a: unknown[]) => boolean } };
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = (command: { name: string }, ...rest: unknown[]) => {
      redisCommands.push(command.name);
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
    const write = redis.stream.write.bind(redis.stream);
    redis.stream.write = (...args: unknown[]) => {
      redisWrites++;
      return write(...args);
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
    const sent = queries.filter((q) => !WRITE_BEHIND.test(q));
    return { res, queries: sent.filter((q) => !GROUP_COMMIT.test(q)), commits: sent.filter((q) => GROUP_COMMIT.test(q)), redisCommands, redisWrites };
  }

  it('costs no query on a cache hit and one Redis round trip in wallet mode with a policy and a signer, plus its group commit', async () => {
    const op = await createOperator(h.deps);
    const wallet = evmAddress();
    const signer = evmAddress();
    await claimWallet(h.deps, op, wallet);
    await claimWallet(h.deps, op, signer);
    const body = { address: wallet, policy: { require_kyc: true, min_age: 21, blocked_jurisdictions: ['IR'] }, signer: { address: signer, network: 'evm' } };
    const miss = await measure(body); // also warms the API key cache, quota counter, rate-limit script
    expect(miss.queries.filter((q) => /known_addresses/.test(q))).toHaveLength(1);
    const m = await measure(body);
    expect(m.res.status).toBe(200);
    expect(m.res.body).toEqual(miss.res.body);
    expect(m.res.body.signer_match.kind).toBe('pass');
    expect(m.queries).toHaveLength(0);
    expect(m.commits).toHaveLength(1); // audit row + quota count, committed before the response
    expect(m.redisCommands.length).toBeGreaterThanOrEqual(3); // rate limit + quota…, and the batch's reconcile
    expect(m.redisWrites).toBe(2); // …in one pipelined round trip, and one per batch
  });

  it('costs one query on a miss and none on a hit in token mode, plus its group commit', async () => {
    const op = await createOperator(h.deps);
    const { token } = await mintCredential(h.deps, op);
    const body = { operator_token: token, policy: { require_kyc: true }, signer: { address: evmAddress(), network: 'evm' } };
    const miss = await measure(body);
    expect(miss.queries).toHaveLength(1);
    const m = await measure(body);
    expect(m.res.status).toBe(200);
    expect(m.res.body).toEqual(miss.res.body);
    expect(m.queries).toHaveLength(0);
    expect(m.commits).toHaveLength(1);
    expect(m.redisWrites).toBe(2);
  });

  it('records a wallet in known_addresses once: after an expiry the lookup runs again without the insert', async () => {
    const wallet = evmAddress();
    const body = { address: wallet };
    const first = await measure(body);
    expect(first.queries).toHaveLength(1);
    expect(first.queries[0]).toMatch(/insert into known_addresses/);
    h.deps.services.identity.clear(); // as after the TTL: the owner must be read again
    const again = await measure(body);
    const lookups = again.queries.filter((q) => !/api_keys/.test(q)); // the API key was forgotten too
    expect(lookups).toHaveLength(1);
    expect(lookups[0]).not.toMatch(/known_addresses/);
    expect(again.res.body).toEqual(first.res.body);
  });

  it('commits concurrent requests together: fewer statements than requests, every audit row written', async () => {
    const op = await createOperator(h.deps);
    const wallet = evmAddress();
    await claimWallet(h.deps, op, wallet);
    const body = { address: wallet, policy: { require_kyc: true } };
    await measure(body);
    const before = Number((await h.deps.db('assess_audit').count({ n: '*' }))[0].n);
    queries = [];
    const responses = await Promise.all(Array.from({ length: 10 }, () => request(h.app).post('/v1/assess').set('X-API-Key', key).send(body)));
    const commits = queries.filter((q) => GROUP_COMMIT.test(q));
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 200));
    expect(commits.length).toBeGreaterThanOrEqual(1);
    expect(commits.length).toBeLessThan(10);
    expect(Number((await h.deps.db('assess_audit').count({ n: '*' }))[0].n)).toBe(before + 10);
  });

  it('costs no query and no Redis command in test mode', async () => {
    const m = await measure({ test: true, address: '0x0000000000000000000000000000000000000001' });
    expect(m.res.status).toBe(200);
    expect(m.queries).toHaveLength(0);
    expect(m.commits).toHaveLength(0);
    expect(m.redisCommands).toHaveLength(0);
  });
});
