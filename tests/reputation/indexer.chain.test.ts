// The chain indexer against a real local EVM over JSON-RPC: resumable checkpoints (partial runs, a crash in
// the middle of a range, a process restart) without duplicates, apply-once replays, the confirmation depth,
// and the chain-id guard.
import { ethers } from 'ethers';
import { createHarness, TestClock, type Harness } from '../support/harness';
import { startLocalChain, dataUri, chainsFileEntry, type LocalChain } from '../fixtures/contracts/localChain';
import { parseChains, type ChainConfig } from '../../server/chain/config';
import { ChainIndexer, createChainProvider, type ChainProvider } from '../../server/chain/indexer';
import { RegistrationResolver } from '../../server/chain/registration';
import { EvidenceCollector } from '../../server/chain/evidence';
import { decodeReputationLog, TOPICS } from '../../server/chain/abi';
import { FakeFetcher, resetReputationTables } from './support';

jest.setTimeout(120_000);

describe('chain indexer', () => {
  let chain: LocalChain;
  let h: Harness;
  let config: ChainConfig;
  const clock = new TestClock(new Date('2026-03-10T00:00:00Z'));
  const fetcher = new FakeFetcher({});
  let transferred: bigint;
  let renamed: bigint;

  const indexer = (harness: Harness, provider: ChainProvider = createChainProvider(config), cfg = config) =>
    new ChainIndexer({
      db: harness.deps.db,
      repo: harness.deps.repos.reputationChain,
      chain: cfg,
      provider,
      resolver: new RegistrationResolver(fetcher),
      evidence: new EvidenceCollector(fetcher),
      logger: harness.deps.logger,
      now: () => clock.now(),
    });

  const counts = async (harness: Harness) => {
    const db = harness.deps.db;
    const n = async (table: string) => Number((await db(table).count<{ c: number }[]>('* as c'))[0].c);
    return {
      agents: await n('erc8004_agents'),
      events: await n('erc8004_events'),
      feedback: await n('erc8004_feedback'),
      revoked: Number((await db('erc8004_feedback').whereNotNull('revoked_at').count<{ c: number }[]>('* as c'))[0].c),
      payments: await n('candidate_payments'),
    };
  };
  const checkpoints = async (harness: Harness) =>
    Object.fromEntries((await harness.deps.db('chain_checkpoints').select('kind', 'last_block')).map((r) => [r.kind, Number(r.last_block)]));

  beforeAll(async () => {
    await resetReputationTables();
    chain = await startLocalChain();
    const [, a, b, c, d] = chain.wallets;
    await chain.register(a, dataUri({ name: 'One' }));
    transferred = await chain.register(a, dataUri({ name: 'Two' }));
    renamed = await chain.register(b, dataUri({ name: 'Three' }));
    await chain.transferAgent(a, b.address, transferred);
    await chain.setUri(b, renamed, dataUri({ name: 'Three, renamed' }));
    await chain.feedback(c, 0n, 70, 0, 'starred');
    await chain.feedback(d, 0n, 60, 0, 'starred');
    await chain.feedback(c, renamed, 100, 0, 'starred');
    await chain.feedback(d, renamed, 10, 0, 'starred');
    await chain.revokeFeedback(d, renamed, 1);
    await chain.pay(c, a.address, 10n);
    await chain.pay(d, a.address, 20n);
    await chain.plainTransfer(c, d.address, 5n);
    await chain.pay(a, b.address, 30n);
    await chain.mine(2);
    config = parseChains([chainsFileEntry(chain, { maxBlockRange: 3 })])[0];
    h = await createHarness({ overrides: { clock } });
  });

  afterAll(async () => {
    await h?.close();
    await chain?.close();
  });

  it('resumes from its checkpoints after a partial run, a failed range and a restart, without duplicates', async () => {
    const first = await indexer(h).sync({ maxRanges: 2 });
    expect(first.caughtUp).toBe(false);
    const afterPartial = await checkpoints(h);
    expect(afterPartial).toEqual({ identity: chain.deployBlock + 5 }); // two ranges of 3 blocks from startBlock

    // The second eth_getLogs fails: the range it belonged to is not committed, nothing half-written stays.
    const real = createChainProvider(config);
    let calls = 0;
    const flaky: ChainProvider = {
      getBlockNumber: () => real.getBlockNumber(),
      getBlock: (n) => real.getBlock(n),
      getTransactionReceipt: (t) => real.getTransactionReceipt(t),
      send: (m, p) => real.send(m, p),
      getLogs: (f) => (++calls === 2 ? Promise.reject(new Error('connection reset by RPC')) : real.getLogs(f)),
    };
    await expect(indexer(h, flaky).sync()).rejects.toThrow('connection reset by RPC');
    expect(await checkpoints(h)).toEqual({ identity: chain.deployBlock + 8 }); // one more range committed before the failure
    const state = await h.deps.db('chain_sync_state').where({ chain: 'base' }).first();
    expect(state.last_error).toBe('connection reset by RPC');
    expect(state.last_synced_at).toBeNull();

    // A restart: new process state (deps, indexer, provider), same database.
    await h.close();
    h = await createHarness({ overrides: { clock } });
    const done = await indexer(h).sync();
    expect(done.caughtUp).toBe(true);
    const safe = (await chain.blockNumber()) - 2;
    expect(await checkpoints(h)).toEqual({ identity: safe, reputation: safe, usdc: safe });
    expect(await counts(h)).toEqual({ agents: 3, events: 8, feedback: 4, revoked: 1, payments: 3 });
    const synced = await h.deps.db('chain_sync_state').where({ chain: 'base' }).first();
    expect(synced.last_error).toBeNull();
    expect(new Date(synced.last_synced_at).toISOString()).toBe(clock.now().toISOString());

    const agents = await h.deps.db('erc8004_agents').orderBy('token_id').select('token_id', 'owner', 'registration_status', 'registration');
    expect(agents.map((a) => [a.token_id, a.owner, a.registration_status, a.registration.name])).toEqual([
      ['0', chain.wallets[1].address.toLowerCase(), 'ok', 'One'],
      [transferred.toString(), chain.wallets[2].address.toLowerCase(), 'ok', 'Two'],
      [renamed.toString(), chain.wallets[2].address.toLowerCase(), 'ok', 'Three, renamed'],
    ]);
  });

  it('applies each event once when a range is replayed from an old checkpoint', async () => {
    const before = await counts(h);
    await h.deps.db('chain_checkpoints').update({ last_block: chain.deployBlock - 1 });
    await indexer(h).sync();
    expect(await counts(h)).toEqual(before);
    // The replayed Registered(uri "Three") must not overwrite the later URIUpdated, nor re-queue resolution.
    const renamedRow = await h.deps.db('erc8004_agents').where({ token_id: renamed.toString() }).first();
    expect(renamedRow.registration_status).toBe('ok');
    expect(renamedRow.registration.name).toBe('Three, renamed');
    expect(renamedRow.agent_uri).toBe(dataUri({ name: 'Three, renamed' }));
  });

  it('does not index blocks within the confirmation depth until they are deep enough', async () => {
    const fresh = await chain.register(chain.wallets[3], dataUri({ name: 'Four' }));
    await indexer(h).sync();
    expect(await h.deps.db('erc8004_agents').where({ token_id: fresh.toString() }).first()).toBeUndefined();
    await chain.mine(2);
    await indexer(h).sync();
    expect(await h.deps.db('erc8004_agents').where({ token_id: fresh.toString() }).first()).toMatchObject({ owner: chain.wallets[3].address.toLowerCase() });
  });

  it('refuses to index when the RPC serves a different chain id than configured', async () => {
    const wrong = { ...config, chainId: 8453 };
    await expect(indexer(h, createChainProvider(config), wrong).sync()).rejects.toThrow('RPC reports chain id 1337, configured 8453');
  });

  it('decodes FeedbackRevoked whether or not feedbackIndex is indexed', async () => {
    const agent = ethers.zeroPadValue('0x05', 32);
    const client = ethers.zeroPadValue(chain.wallets[4].address, 32);
    const indexed = decodeReputationLog({ topics: [TOPICS.FeedbackRevoked, agent, client, ethers.zeroPadValue('0x03', 32)], data: '0x' });
    const inData = decodeReputationLog({ topics: [TOPICS.FeedbackRevoked, agent, client], data: ethers.AbiCoder.defaultAbiCoder().encode(['uint64'], [3]) });
    const expected = { kind: 'FeedbackRevoked', tokenId: '5', client: chain.wallets[4].address.toLowerCase(), feedbackIndex: '3' };
    expect(indexed).toEqual(expected);
    expect(inData).toEqual(expected);
  });
});
