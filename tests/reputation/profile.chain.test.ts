// End to end on a real local EVM (ganache over JSON-RPC): deploy the ERC-8004 and EIP-3009 test contracts,
// emit registrations, feedback and x402-style payments, let the indexer job index them, score, and read the
// profile through GET /v1/reputation/:address — every field of the documented profile is asserted here.
import request from 'supertest';
import { ethers } from 'ethers';
import { createHarness, createMerchant, TestClock, type Harness } from '../support/harness';
import { startLocalChain, dataUri, type LocalChain } from '../fixtures/contracts/localChain';
import { enqueueScore } from '../../server/reputation/jobs';
import { grade as gradeOf, operatorScore } from '../../server/reputation/formulas';
import { DATA_SEMANTICS } from '../../server/services/reputation';
import { FakeFetcher, captureWallet, claimWallet, createOperator, resetReputationTables, unix, writeChainsFile } from './support';

jest.setTimeout(120_000);

const ALPHA = {
  type: 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1',
  name: 'Alpha Agent',
  description: 'Buys datasets',
  services: [
    { name: 'A2A', endpoint: 'https://agent.example/.well-known/agent-card.json', version: '0.3.0' },
    { name: 'MCP', endpoint: 'https://agent.example/mcp' },
    { name: 'web', endpoint: 'https://agent.example/' },
    { name: 'ENS', endpoint: 'alpha.eth' },
    { name: 'source', endpoint: 'https://github.com/acme/alpha-agent' },
  ],
  x402Support: true,
  active: true,
};

const fetcher = new FakeFetcher({
  'https://agent.example/.well-known/agent-card.json': { body: { name: 'Alpha Agent', url: 'https://agent.example/a2a', skills: [] } },
  'https://agent.example/': { body: '<html><body>We speak MCP and pay with x402.</body></html>' },
  'https://api.github.com/repos/acme/alpha-agent': { body: { stargazers_count: 42 } },
  'https://registry.example/agents/b2.json': {
    body: { name: 'Beta Agent v2', services: [{ name: 'MCP', endpoint: 'https://beta.example/mcp' }], x402Support: false },
  },
});

describe('GET /v1/reputation/:address on an indexed local chain', () => {
  let chain: LocalChain;
  let h: Harness;
  let paidKey: string;
  let freeKey: string;
  const clock = new TestClock(new Date('2026-03-10T12:00:00Z'));
  let operator: ethers.Wallet,
    agentWallet: ethers.Wallet,
    client1: ethers.Wallet,
    client2: ethers.Wallet,
    service: ethers.Wallet,
    captured: ethers.Wallet,
    stranger: ethers.Wallet;
  const times: Record<string, string> = {};

  const timeOf = async (hash: string) => {
    const receipt = await chain.provider.getTransactionReceipt(hash);
    const block = await chain.provider.getBlock(receipt!.blockNumber);
    return new Date(block!.timestamp * 1000).toISOString();
  };
  const lower = (w: ethers.Wallet) => w.address.toLowerCase();
  const get = (address: string, key = paidKey, query = '') => request(h.app).get(`/v1/reputation/${address}${query}`).set('X-API-Key', key);

  beforeAll(async () => {
    await resetReputationTables();
    chain = await startLocalChain();
    [, operator, agentWallet, client1, client2, service, captured, stranger] = chain.wallets;

    await chain.mine(1, unix('2026-03-01T10:00:00Z'));
    const alpha = await chain.register(operator, dataUri(ALPHA));
    await chain.setMetadata(operator, alpha, 'agentWallet', agentWallet.address);
    const beta = await chain.register(operator, 'https://registry.example/agents/b.json');
    await chain.setUri(operator, beta, 'https://registry.example/agents/b2.json');
    await chain.feedback(client1, alpha, 90, 0, 'starred');
    await chain.feedback(client2, alpha, 80, 0, 'starred');
    await chain.feedback(client1, alpha, 9950, 2, 'uptime');
    await chain.feedback(client2, alpha, 95, 0, 'successRate');
    await chain.feedback(client1, beta, 20, 0, 'starred');
    times.lastFeedback = new Date((await chain.provider.getBlock('latest'))!.timestamp * 1000).toISOString();
    await chain.feedback(client2, beta, 40, 0, 'starred'); // revoked below: neither counted nor the latest
    await chain.revokeFeedback(client2, beta, 1);

    await chain.mine(1, unix('2026-03-02T09:00:00Z'));
    times.opPays = await timeOf(await chain.pay(operator, service.address, 1_000_000n));
    await chain.mine(1, unix('2026-03-03T09:00:00Z'));
    times.agentPays = await timeOf(await chain.pay(agentWallet, service.address, 2_000_000n));
    await chain.mine(1, unix('2026-03-04T09:00:00Z'));
    times.clientPaysOp = await timeOf(await chain.pay(client1, operator.address, 500_000n));
    times.capturedPays = await timeOf(await chain.pay(captured, service.address, 300_000n));
    await chain.mine(1, unix('2026-03-05T09:00:00Z'));
    times.clientPaysService = await timeOf(await chain.pay(client1, service.address, 700_000n));
    await chain.plainTransfer(stranger, service.address, 5n); // no EIP-3009 authorization: not a candidate
    await chain.mine(3); // past the 2-block confirmation depth

    h = await createHarness({
      env: { REPUTATION_CHAINS_FILE: writeChainsFile(chain), REDIS_URL: '' },
      overrides: { clock, reputationFetcher: fetcher },
    });
    await h.deps.jobs.idle(); // the first index run (queued at start) and the scores it queued

    const kycOperator = await createOperator(h.deps.db, 'kyc_verified');
    await claimWallet(h.deps.db, kycOperator, operator.address);
    const claimedOperator = await createOperator(h.deps.db, 'wallet_claimed');
    await captureWallet(h.deps.db, claimedOperator, captured.address, {
      count: 3,
      firstSeen: new Date('2026-03-04T00:00:00Z'),
      lastSeen: new Date('2026-03-04T12:00:00Z'),
    });
    await h.deps.db('known_addresses').insert({ network: 'evm', address: lower(service) });
    for (const w of [operator, agentWallet, service, captured]) {
      await enqueueScore(h.deps.jobs, { address: lower(w), network: 'evm', chain: null, reason: 'refresh' });
    }
    await h.deps.jobs.idle();
    paidKey = (await createMerchant(h.deps, { tier: 'paid' })).apiKey;
    freeKey = (await createMerchant(h.deps, { tier: 'free', rps: 100 })).apiKey;
  });

  afterAll(async () => {
    await h?.close();
    await chain?.close();
  });

  it('serves the operator full profile with every field of the profile table to a Paid caller', async () => {
    const res = await get(operator.address);
    expect(res.status).toBe(200);
    const body = res.body;
    const scoredAt = clock.now().toISOString();

    expect(body.subject).toEqual({ address: lower(operator), chains: ['base'] });
    expect(body.verification_level).toBe('kyc_verified');
    expect(body.data_semantics).toBe(DATA_SEMANTICS);
    expect(body.updated_at).toBe(scoredAt);
    expect(body.caveats).toEqual(expect.arrayContaining([expect.stringContaining('candidate x402 activity')]));
    expect(body.caveats).not.toEqual(expect.arrayContaining([expect.stringContaining('not enough evidence')]));

    // agents, and the operator score as the tail-risk weighted average over them
    expect(body.agents).toEqual([
      { token_id: 0, chain: 'base', name: 'Alpha Agent', score: expect.any(Number), grade: expect.stringMatching(/^[A-F]$/) },
      { token_id: 1, chain: 'base', name: 'Beta Agent v2', score: expect.any(Number), grade: expect.stringMatching(/^[A-F]$/) },
    ]);
    const [alpha, beta] = body.agents;
    expect(alpha.score).toBeGreaterThan(beta.score);
    const expectedOperator = operatorScore([alpha.score, beta.score])!;
    expect(expectedOperator).toBeLessThan((alpha.score + beta.score) / 2);
    expect(body.operator_score).toEqual({ score: expectedOperator, grade: gradeOf(expectedOperator), agent_count: 2, chains_active: ['base'] });

    // top-level score = the operator score when the address owns agents
    expect(body.score).toEqual({ value: expectedOperator, grade: gradeOf(expectedOperator), scored_at: scoredAt, status: 'scored', version: 'v2' });

    // feedback on the operator's agents; the revoked one does not count
    expect(body.reputation).toEqual({
      feedback_count: 5,
      client_count: 2,
      trust_avg: 63.3, // starred 90, 80, 20
      uptime_avg: 99.5, // 9950 with 2 decimals
      activity_avg: 95, // successRate
      last_feedback_at: times.lastFeedback,
    });

    expect(body.chains).toHaveLength(1);
    const base = body.chains[0];
    expect(base.chain).toBe('base');
    expect(base.score).toEqual({
      value: expect.any(Number),
      grade: gradeOf(base.score.value),
      scored_at: scoredAt,
      status: 'scored',
      version: 'v2',
      confidence: expect.any(Number),
      dimensions: { identity: 100, activity: expect.any(Number), capability: 100, reach: expect.any(Number), trust: expect.any(Number) },
    });
    expect(base.score.confidence).toBeGreaterThan(0.5);
    expect(base.score.confidence).toBeLessThanOrEqual(1);
    for (const v of Object.values(base.score.dimensions)) expect(v).toBeGreaterThanOrEqual(0);
    expect(base.score.dimensions.activity).toBeGreaterThan(0);
    expect(base.score.dimensions.reach).toBeGreaterThan(0);
    expect(base.classification).toEqual({
      entity_type: 'operator',
      confidence: 0.95,
      is_known: true,
      is_known_erc8004_agent: true,
      has_candidate_payment_activity: true,
      has_verified_payment_activity: false,
      reasons: ['owns_registered_erc8004_agents', 'has_candidate_payment_activity', 'operator_kyc_verified'],
    });
    expect(base.identity).toEqual({ ens_name: 'alpha.eth', website_url: 'https://agent.example/', github_url: 'https://github.com/acme/alpha-agent' });
    expect(base.activity).toEqual({
      total_candidate_transactions: 2,
      total_verified_transactions: 0,
      as_candidate_payer: 1,
      as_candidate_payee: 1,
      as_verified_payer: 0,
      as_verified_payee: 0,
      counterparties_count: 2,
      active_days: 2,
      active_months: 1,
      first_candidate_tx_at: times.opPays,
      last_candidate_tx_at: times.clientPaysOp,
      first_verified_tx_at: null,
      last_verified_tx_at: null,
    });
    // jsonb reorders keys; the response restores the documented order
    expect(Object.keys(base.score.dimensions)).toEqual(['identity', 'activity', 'capability', 'reach', 'trust']);
    expect(Object.keys(base.activity).slice(0, 3)).toEqual(['total_candidate_transactions', 'total_verified_transactions', 'as_candidate_payer']);
    expect(base.evidence_summary).toEqual({
      metadata_kind: 'data_uri',
      has_a2a_agent_card: true,
      website_url: 'https://agent.example/',
      website_reachable: true,
      website_mentions_mcp: true,
      website_mentions_x402: true,
      github_url: 'https://github.com/acme/alpha-agent',
      github_stars: 42,
    });
  });

  it('redacts the profile for a Free caller to score, grade and entity type, field by field', async () => {
    const res = await get(operator.address, freeKey);
    expect(res.status).toBe(200);
    const body = res.body;
    expect(Object.keys(body).sort()).toEqual(['agents', 'caveats', 'chains', 'data_semantics', 'operator_score', 'score', 'subject', 'updated_at']);
    expect(Object.keys(body.subject).sort()).toEqual(['address', 'chains']);
    expect(Object.keys(body.score).sort()).toEqual(['grade', 'scored_at', 'status', 'value', 'version']);
    expect(Object.keys(body.operator_score).sort()).toEqual(['grade', 'score']);
    expect(body.chains).toHaveLength(1);
    expect(Object.keys(body.chains[0]).sort()).toEqual(['chain', 'classification', 'score']);
    expect(Object.keys(body.chains[0].score).sort()).toEqual(['grade', 'scored_at', 'status', 'value', 'version']);
    expect(body.chains[0].classification).toEqual({ entity_type: 'operator' });
    for (const agent of body.agents) expect(Object.keys(agent).sort()).toEqual(['chain', 'grade', 'score', 'token_id']);
    for (const hidden of ['verification_level', 'reputation']) expect(body).not.toHaveProperty(hidden);
    for (const hidden of ['identity', 'activity', 'evidence_summary']) expect(body.chains[0]).not.toHaveProperty(hidden);
    for (const hidden of ['confidence', 'dimensions']) expect(body.chains[0].score).not.toHaveProperty(hidden);

    const paid = (await get(operator.address)).body;
    expect(body.score).toEqual(paid.score);
    expect(body.operator_score).toEqual({ score: paid.operator_score.score, grade: paid.operator_score.grade });
  });

  it('classifies the agentWallet of a registered agent as an agent', async () => {
    const body = (await get(agentWallet.address)).body;
    expect(body.chains[0].classification).toMatchObject({ entity_type: 'agent', is_known_erc8004_agent: true, has_candidate_payment_activity: true });
    expect(body.chains[0].classification.reasons[0]).toBe('agent_wallet_of_registered_erc8004_agent');
    expect(body.chains[0].activity).toMatchObject({ as_candidate_payer: 1, as_candidate_payee: 0, first_candidate_tx_at: times.agentPays });
    expect(body.score.value).toBe(body.chains[0].score.value); // not an owner: the highest per-chain score
    expect(body).not.toHaveProperty('operator_score');
    expect(body.verification_level).toBe('none');
  });

  it('classifies a mostly-paid address as a service and counts payments from captured payers as verified', async () => {
    const body = (await get(service.address)).body;
    const base = body.chains[0];
    expect(base.classification).toMatchObject({
      entity_type: 'service',
      is_known_erc8004_agent: false,
      has_candidate_payment_activity: true,
      has_verified_payment_activity: true,
    });
    expect(base.classification.reasons[0]).toBe('mostly_payee');
    expect(base.activity).toEqual({
      total_candidate_transactions: 4, // the plain transfer without an EIP-3009 authorization is not counted
      total_verified_transactions: 1,
      as_candidate_payer: 0,
      as_candidate_payee: 4,
      as_verified_payer: 0,
      as_verified_payee: 1,
      counterparties_count: 4,
      active_days: 4,
      active_months: 1,
      first_candidate_tx_at: times.opPays,
      last_candidate_tx_at: times.clientPaysService,
      first_verified_tx_at: times.capturedPays,
      last_verified_tx_at: times.capturedPays,
    });
    expect(base.identity).toEqual({ ens_name: null, website_url: null, github_url: null });
    expect(base.evidence_summary.metadata_kind).toBe('none');
    expect(body).not.toHaveProperty('reputation');
    expect(body.agents).toEqual([]);
  });

  it('reports captured payments as verified activity and the capturing operator verification level', async () => {
    const body = (await get(captured.address)).body;
    expect(body.verification_level).toBe('wallet_claimed');
    expect(body.chains[0].classification).toMatchObject({ entity_type: 'wallet', is_known: true, has_verified_payment_activity: true });
    expect(body.chains[0].activity).toMatchObject({
      total_candidate_transactions: 1,
      as_candidate_payer: 1,
      as_verified_payer: 3,
      total_verified_transactions: 3,
      first_verified_tx_at: '2026-03-04T00:00:00.000Z',
      last_verified_tx_at: '2026-03-04T12:00:00.000Z',
    });
    expect(body.caveats).toEqual(expect.arrayContaining([expect.stringContaining('per network')]));
    // little evidence: a score near the prior that says so, not a failing grade
    expect(body.chains[0].score.confidence).toBeLessThan(0.5);
    expect(body.score.grade).not.toBe('F');
    expect(body.caveats).toEqual(expect.arrayContaining([expect.stringContaining('means "not enough evidence yet", not "risky"')]));
  });

  it('filters chains and agents with ?chain and keeps the top-level score', async () => {
    const all = (await get(operator.address)).body;
    const other = await get(operator.address, paidKey, '?chain=ethereum');
    expect(other.status).toBe(200);
    expect(other.body.chains).toEqual([]);
    expect(other.body.agents).toEqual([]);
    expect(other.body.score).toEqual(all.score);
    const same = (await get(operator.address, paidKey, '?chain=base')).body;
    expect(same.chains).toEqual(all.chains);
    expect(same.agents).toEqual(all.agents);
  });

  it('rejects an unsupported chain with 400 bad_request naming the chain field', async () => {
    const res = await get(operator.address, paidKey, '?chain=dogechain');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Invalid request: chain',
        details: [{ field: 'chain', message: 'must be one of base, ethereum, arbitrum, optimism, polygon, tempo, solana' }],
      },
    });
  });

  it('answers 404 unknown_address with can_assess for an address never seen', async () => {
    const res = await get(ethers.Wallet.createRandom().address);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: { code: 'unknown_address', message: 'This address has not been indexed yet. Call POST /v1/assess with it to queue scoring.', can_assess: true },
    });
  });

  it('rejects a malformed address with 400 invalid_address naming the field', async () => {
    const res = await get('0x1234');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'invalid_address',
        message: 'Invalid wallet address.',
        details: [{ field: 'address', message: 'must be an EVM address (0x + 40 hex) or a Solana base58 address' }],
      },
    });
  });

  it('answers 401 signup_required without an API key', async () => {
    const res = await request(h.app).get(`/v1/reputation/${operator.address}`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: { code: 'signup_required', message: 'A valid API key is required (X-API-Key header).', signup_url: 'https://kya.dev/signup' },
    });
  });

  it('returns known_unscored for an indexed address that was never scored, and reading never scores it', async () => {
    // client2 gave feedback on chain, but nothing queued a score for it (and no other test scores it).
    const res = await get(client2.address);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      subject: { address: lower(client2), chains: ['base'] },
      score: { value: null, grade: null, scored_at: null, status: 'known_unscored', version: 'v2' },
      verification_level: 'none',
      chains: [],
      agents: [],
      data_semantics: DATA_SEMANTICS,
      caveats: [expect.stringContaining('candidate x402 activity'), expect.stringContaining('has not been scored yet')],
      updated_at: expect.any(String),
    });
    await h.deps.jobs.idle();
    expect(
      await h.deps
        .db('reputation_subjects')
        .where({ address: lower(client2) })
        .first(),
    ).toBeUndefined();
  });

  it('scores a new address after POST /v1/assess queues it', async () => {
    // client1 paid on chain and gave feedback, but nothing scored it until this assess.
    expect((await get(client1.address)).body.score.status).toBe('known_unscored');
    const assess = await request(h.app).post('/v1/assess').set('X-API-Key', paidKey).send({ address: client1.address });
    expect(assess.status).toBe(200);
    await h.deps.jobs.idle();
    const body = (await get(client1.address)).body;
    expect(body.score.status).toBe('scored');
    expect(body.chains[0].classification.entity_type).toBe('wallet');
    expect(body.chains[0].activity).toMatchObject({ as_candidate_payer: 2, counterparties_count: 2 });
  });

  it('turns a score stale after 24 hours without changing it', async () => {
    const before = (await get(service.address)).body;
    clock.advance(25 * 3600_000);
    try {
      const after = (await get(service.address)).body;
      expect(after.score).toEqual({ ...before.score, status: 'stale' });
      expect(after.chains[0].score.status).toBe('stale');
      expect(after.caveats).toEqual(expect.arrayContaining([expect.stringContaining('Score is stale')]));
    } finally {
      clock.advance(-25 * 3600_000);
    }
  });
});
