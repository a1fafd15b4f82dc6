// An RPC outage leaves scores stale, never wrong: while the chain's JSON-RPC endpoint is down the indexer
// records the failure, the scorer refuses to recompute that chain, and the profile keeps its last values
// (turning `stale` after 24 h, with a caveat). When the RPC returns, indexing and scoring catch up.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createHarness, createMerchant, TestClock, type Harness } from '../support/harness';
import { startLocalChain, dataUri, type LocalChain } from '../fixtures/contracts/localChain';
import { indexJobName } from '../../server/reputation/jobs';
import { FakeFetcher, resetReputationTables, writeChainsFile } from './support';

jest.setTimeout(120_000);

/** A JSON-RPC pass-through that can be switched off (connections are dropped, like a dead node). */
async function startSwitchableProxy(target: string) {
  let up = true;
  const server = http.createServer((req, res) => {
    if (!up) return req.socket.destroy();
    const upstream = http.request(target, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setUp: (value: boolean) => {
      up = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('reputation during an RPC outage', () => {
  let chain: LocalChain;
  let proxy: Awaited<ReturnType<typeof startSwitchableProxy>>;
  let h: Harness;
  let key: string;
  const clock = new TestClock(new Date('2026-03-10T00:00:00Z'));
  let operator: string;
  let agentId: bigint;

  const profile = async () => (await request(h.app).get(`/v1/reputation/${operator}`).set('X-API-Key', key)).body;
  const runIndexJob = async () => {
    await h.deps.jobs.add(indexJobName('base'), { chain: 'base' }, { attempts: 1 });
    await h.deps.jobs.idle();
  };
  const rescore = async () => {
    await h.deps.services.reputation.workers.rescoreStale();
    await h.deps.jobs.idle();
  };

  beforeAll(async () => {
    await resetReputationTables();
    chain = await startLocalChain();
    proxy = await startSwitchableProxy(chain.url);
    const [, op, client] = chain.wallets;
    operator = op.address.toLowerCase();
    agentId = await chain.register(op, dataUri({ name: 'Solo', services: [{ name: 'MCP', endpoint: 'https://solo.example/mcp' }] }));
    await chain.feedback(client, agentId, 95, 0, 'starred');
    await chain.pay(client, op.address, 100n);
    await chain.mine(2);
    h = await createHarness({
      env: { REPUTATION_CHAINS_FILE: writeChainsFile(chain, { maxIndexLagSeconds: 600 }, proxy.url), REDIS_URL: '' },
      overrides: { clock, reputationFetcher: new FakeFetcher({}) },
    });
    await h.deps.jobs.idle(); // first index run, which queues the operator's score
    key = (await createMerchant(h.deps, { tier: 'paid' })).apiKey;
  });

  afterAll(async () => {
    await h?.close();
    await proxy?.close();
    await chain?.close();
  });

  it('keeps the last good profile, turns it stale and says why, then catches up when the RPC returns', async () => {
    const healthy = await profile();
    expect(healthy.score.status).toBe('scored');
    expect(healthy.reputation).toMatchObject({ feedback_count: 1, trust_avg: 95 });

    // On chain meanwhile: damning feedback and more payments the server cannot see during the outage.
    const [, , , c2, c3] = chain.wallets;
    await chain.feedback(c2, agentId, 0, 0, 'starred');
    await chain.feedback(c3, agentId, 0, 0, 'starred');
    await chain.pay(c2, operator, 5n);
    await chain.mine(2);
    proxy.setUp(false);

    clock.advance(25 * 3600_000);
    await runIndexJob(); // fails: connection dropped
    const state = await h.deps.db('chain_sync_state').where({ chain: 'base' }).first();
    expect(state.last_error).toBeTruthy();
    expect(new Date(state.last_error_at).toISOString()).toBe(clock.now().toISOString());

    // The re-score runs, but the scorer skips a chain whose index is not in sync.
    const outcome = await h.deps.services.reputation.scorer.score({ address: operator, network: 'evm', chain: null, reason: 'test' });
    expect(outcome).toEqual({ scored: [], skipped: ['base'] });
    await rescore();

    const stale = await profile();
    expect(stale.score).toEqual({ ...healthy.score, status: 'stale' });
    expect(stale.chains).toEqual(healthy.chains.map((c: { score: object }) => ({ ...c, score: { ...c.score, status: 'stale' } })));
    expect(stale.reputation).toEqual(healthy.reputation);
    expect(stale.operator_score).toEqual(healthy.operator_score);
    expect(stale.caveats).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Chain index for base is behind \(chain RPC unavailable\), last synced 2026-03-10T00:00:00.000Z/),
        expect.stringContaining('Score is stale'),
      ]),
    );

    // Recovery: the index catches up, the re-score publishes fresh figures including what happened meanwhile.
    proxy.setUp(true);
    await runIndexJob();
    await rescore();
    const recovered = await profile();
    expect(recovered.score.status).toBe('scored');
    expect(recovered.score.scored_at).toBe(clock.now().toISOString());
    expect(recovered.reputation).toMatchObject({ feedback_count: 3, client_count: 3, trust_avg: 31.7 });
    expect(recovered.chains[0].activity).toMatchObject({ as_candidate_payee: 2 });
    expect(recovered.chains[0].score.dimensions.trust).toBeLessThan(healthy.chains[0].score.dimensions.trust);
    expect(recovered.caveats.some((c: string) => c.startsWith('Chain index'))).toBe(false);
  });
});
