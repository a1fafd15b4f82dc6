// The production job path: with Redis configured, the per-chain index job and the score jobs it queues run
// on BullMQ workers (repeatable schedule + start run), and the profile becomes available without any call.
import request from 'supertest';
import { createHarness, createMerchant, type Harness } from '../support/harness';
import { eventually } from '../support/eventually';
import { startLocalChain, dataUri, type LocalChain } from '../fixtures/contracts/localChain';
import { FakeFetcher, resetReputationTables, writeChainsFile } from './support';

jest.setTimeout(120_000);

describe('reputation jobs on BullMQ', () => {
  let chain: LocalChain;
  let h: Harness;

  beforeAll(async () => {
    await resetReputationTables();
    chain = await startLocalChain();
    const [, owner, client] = chain.wallets;
    const agent = await chain.register(owner, dataUri({ name: 'Queued', services: [{ name: 'MCP', endpoint: 'https://q.example/mcp' }] }));
    await chain.feedback(client, agent, 88, 0, 'starred');
    await chain.mine(3);
    h = await createHarness({
      env: { REPUTATION_CHAINS_FILE: writeChainsFile(chain, { pollIntervalSeconds: 1 }) },
      overrides: { reputationFetcher: new FakeFetcher({}) },
    });
  });

  afterAll(async () => {
    await h?.close();
    await chain?.close();
  });

  it('indexes and scores through the queue, then serves the profile', async () => {
    expect(h.deps.redis).not.toBeNull();
    const owner = chain.wallets[1].address.toLowerCase();
    const row = await eventually(async () => {
      const subject = await h.deps.db('reputation_subjects').where({ network: 'evm', address: owner }).first();
      return subject?.scored_at ? subject : null;
    }, 30_000);
    expect(row.scored_at).toBeTruthy();
    const { apiKey } = await createMerchant(h.deps, { tier: 'paid' });
    const res = await request(h.app).get(`/v1/reputation/${owner}`).set('X-API-Key', apiKey);
    expect(res.status).toBe(200);
    expect(res.body.score.status).toBe('scored');
    expect(res.body.agents).toEqual([{ token_id: 0, chain: 'base', name: 'Queued', score: expect.any(Number), grade: expect.any(String) }]);
    expect(res.body.reputation).toMatchObject({ feedback_count: 1, trust_avg: 88 });
  });
});
