// Scores one address from indexed data only (the database, never the RPC): per chain it builds the formula
// features, dimensions, classification and the profile blocks, scores the operator's agents, and writes it all
// in one transaction. A configured chain whose indexer is not in sync is skipped, so its previous score ages
// into `stale` instead of being recomputed from incomplete data ("stale, never wrong").
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import type { ChainConfig } from '../chain/config';
import { metadataKind } from '../chain/registration';
import {
  emptyPaymentStats,
  type AgentRow,
  type FeedbackRow,
  type PaymentStats,
  type ReputationChainRepository,
  type SyncStateRow,
} from '../repositories/reputationChain';
import type { AgentScoreRow, CaptureRow, ChainScoreRow, ReputationRepository, SubjectRow } from '../repositories/reputation';
import { parseAddress } from '../../shared/address';
import { SCORE_VERSION, classify, emptyFeatures, feedbackKind, feedbackValue, grade, operatorScore, scoreFeatures, type Features } from './formulas';
import type { AddressFamily, VerificationLevel } from '../../shared/types';

export interface ScoreJobData {
  address: string;
  network: AddressFamily;
  chain: string | null;
  reason: string;
}

export interface ScoreOutcome {
  scored: string[];
  skipped: string[];
}

/** A captured payer's payments within this margin of its capture window count as verified. */
const CAPTURE_WINDOW_MARGIN_HOURS = 24;
const MAX_AGENTS_SCORED = 500;

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);
const round1 = (x: number) => Math.round(x * 10) / 10;

interface RegistrationJson {
  name?: string | null;
  services?: Array<{ name: string; endpoint: string }>;
  x402_support?: boolean;
  active?: boolean | null;
  website_url?: string | null;
  github_url?: string | null;
  ens_name?: string | null;
}

interface EvidenceJson {
  has_a2a_agent_card?: boolean;
  website_reachable?: boolean | null;
  website_mentions_mcp?: boolean | null;
  website_mentions_x402?: boolean | null;
  github_stars?: number | null;
}

export interface ReputationScorerOptions {
  db: Knex;
  repo: ReputationRepository;
  chainRepo: ReputationChainRepository;
  chains: ChainConfig[];
  logger: Logger;
  now: () => Date;
}

export class ReputationScorer {
  private readonly chains: Map<string, ChainConfig>;

  private readonly db: Knex;
  private readonly repo: ReputationRepository;
  private readonly chainRepo: ReputationChainRepository;
  private readonly logger: Logger;
  private readonly now: () => Date;

  constructor(options: ReputationScorerOptions) {
    this.db = options.db;
    this.repo = options.repo;
    this.chainRepo = options.chainRepo;
    this.logger = options.logger;
    this.now = options.now;
    this.chains = new Map(options.chains.map((c) => [c.name, c]));
  }

  /** The chain a never-seen address is scored on: base (the most common x402 chain), unless the server indexes other chains only. */
  defaultChain(network: AddressFamily): string {
    if (network === 'solana') return 'solana';
    if (this.chains.size === 0 || this.chains.has('base')) return 'base';
    return [...this.chains.keys()][0];
  }

  /** True when `chain` is not indexed here, or its indexer reached the confirmed head recently enough. */
  isInSync(chain: string, states: Map<string, SyncStateRow>, now: Date): boolean {
    const config = this.chains.get(chain);
    if (!config) return true;
    const synced = states.get(chain)?.last_synced_at;
    return Boolean(synced && now.getTime() - new Date(synced).getTime() <= config.maxIndexLagSeconds * 1000);
  }

  async score(job: ScoreJobData): Promise<ScoreOutcome> {
    const parsed = parseAddress(job.address);
    if (!parsed) throw new Error('reputation.score: malformed address');
    const data = await this.load(job, parsed.network, parsed.address);
    const { network, address } = data;
    const scored = data.targets.filter((chain) => data.inSync(chain));
    const skipped = data.targets.filter((chain) => !data.inSync(chain));
    if (scored.length === 0 && data.existing.length === 0) {
      this.logger.info({ network, address, skipped }, 'reputation: nothing scoreable yet (chains out of sync)');
      return { scored, skipped };
    }
    const chainRows = scored.map((chain) => chainScoreRow(data, chain));
    // Agent scores for the operator's agents on chains whose index is in sync; others keep their last score.
    const agentRows = data.agents.map((a) => agentScoreRow(a, data));
    await this.db.transaction(async (trx) => {
      await this.repo.saveChainScores({ rows: chainRows }, trx);
      await this.repo.saveAgentScores({ rows: agentRows }, trx);
      const agentScores = await this.repo.agentScores({ keys: data.owned.map((a) => ({ chain: a.chain, token_id: a.token_id })) }, trx);
      await this.repo.saveSubject({ row: subjectRow(data, chainRows, agentScores) }, trx);
    });
    this.logger.debug({ network, address, scored, skipped, reason: job.reason }, 'reputation scored');
    return { scored, skipped };
  }

  /** Everything one score reads, each in one statement (never one per chain or per agent). */
  private async load(job: ScoreJobData, network: AddressFamily, address: string): Promise<ScoringData> {
    const now = this.now();
    const [syncStates, existing] = await Promise.all([this.chainRepo.syncStates(), this.repo.chainScores({ network, address })]);
    const states = new Map(syncStates.map((s) => [s.chain, s]));
    const inSync = (chain: string) => this.isInSync(chain, states, now);

    const evm = network === 'evm';
    const [owned, asWallet, payments, evidenceChains] = evm
      ? await Promise.all([
          this.chainRepo.agentsOwnedBy({ address }),
          this.chainRepo.agentsWithWallet({ address }),
          this.chainRepo.paymentStats({ address, network, marginHours: CAPTURE_WINDOW_MARGIN_HOURS }),
          this.chainRepo.chainsWithEvidence({ address }),
        ])
      : [[], [], new Map<string, PaymentStats>(), []];
    const jobChain = job.chain && (evm ? job.chain !== 'solana' : job.chain === 'solana') ? job.chain : null;
    let targets = [...new Set([jobChain, ...evidenceChains, ...existing.map((c) => c.chain)].filter((c): c is string => Boolean(c)))];
    if (targets.length === 0) targets = [this.defaultChain(network)];

    const related = uniqueAgents([...owned, ...asWallet]);
    // Agents are scored only when something will be saved (a chain in sync, or an existing profile).
    const scoredAgents = targets.some(inSync) || existing.length > 0 ? owned.slice(0, MAX_AGENTS_SCORED).filter((a) => inSync(a.chain)) : [];
    const agentWallets = scoredAgents.flatMap((a) => (a.agent_wallet ? [{ address: a.agent_wallet, chain: a.chain }] : []));
    const [ownCaptures, level, feedback, walletPayments, walletCaptures] = await Promise.all([
      this.repo.capturesOf({ network, addresses: [address] }),
      this.repo.verificationLevel({ network, address }),
      this.chainRepo.liveFeedbackOn({ agents: related }),
      this.chainRepo.paymentStatsOnChains({ pairs: agentWallets, network, marginHours: CAPTURE_WINDOW_MARGIN_HOURS }),
      this.repo.capturesOf({ network, addresses: [...new Set(agentWallets.map((w) => w.address))] }),
    ]);
    const linked = ownCaptures.length > 0 || level !== 'none' || (await this.repo.isLinkedWallet({ network, address }));

    // Per chain in the order the agents list them (the profile's feedback block keeps that order).
    const feedbackByChain = new Map<string, FeedbackRow[]>();
    for (const chain of new Set(related.map((a) => a.chain)))
      feedbackByChain.set(
        chain,
        feedback.filter((f) => f.chain === chain),
      );
    const agents = scoredAgents.map((agent) => ({
      agent,
      payments: agent.agent_wallet ? (walletPayments.get(`${agent.chain}:${agent.agent_wallet}`) ?? emptyPaymentStats()) : emptyPaymentStats(),
      captures: agent.agent_wallet ? walletCaptures.filter((c) => c.wallet_address === agent.agent_wallet) : [],
    }));
    return { network, address, now, existing, targets, inSync, owned, asWallet, related, payments, ownCaptures, level, linked, feedbackByChain, agents };
  }
}

/** What score() loaded for one address; everything after loading is pure computation over it. */
interface ScoringData {
  network: AddressFamily;
  address: string;
  now: Date;
  /** Chain scores stored before this run. */
  existing: ChainScoreRow[];
  /** Chains to score: the job's, every chain with evidence, every chain scored before (or the default chain). */
  targets: string[];
  inSync: (chain: string) => boolean;
  owned: AgentRow[];
  asWallet: AgentRow[];
  /** Owned agents and agents whose wallet this address is, once each. */
  related: AgentRow[];
  payments: Map<string, PaymentStats>;
  ownCaptures: CaptureRow[];
  level: VerificationLevel;
  /** Claimed or captured by some operator. */
  linked: boolean;
  /** Unrevoked feedback on the related agents, per chain. */
  feedbackByChain: Map<string, FeedbackRow[]>;
  /** The owned agents scored in this run, with their agent wallet's payments and captures. */
  agents: ScoredAgentData[];
}

interface ScoredAgentData {
  agent: AgentRow;
  payments: PaymentStats;
  captures: CaptureRow[];
}

function chainScoreRow(data: ScoringData, chain: string): ChainScoreRow {
  const chainAgents = data.related.filter((a) => a.chain === chain);
  const chainPayments = data.payments.get(chain) ?? emptyPaymentStats();
  const features = buildFeatures({
    address: data.address,
    agents: chainAgents,
    ownedCount: data.owned.filter((a) => a.chain === chain).length,
    isAgentWallet: data.asWallet.some((a) => a.chain === chain),
    payments: chainPayments,
    ownCaptures: data.ownCaptures,
    feedback: data.feedbackByChain.get(chain) ?? [],
    level: data.level,
  });
  const result = scoreFeatures(features.features);
  const classification = classify(features.features, data.owned.length);
  return {
    network: data.network,
    address: data.address,
    chain,
    score: result.score,
    grade: result.grade,
    confidence: result.confidence,
    dimensions: { ...result.dimensions },
    classification: {
      ...classification,
      is_known: data.related.length > 0 || data.linked,
      is_known_erc8004_agent: chainAgents.length > 0,
      has_candidate_payment_activity: chainPayments.total > 0,
      has_verified_payment_activity: features.verifiedTotal > 0,
    },
    identity: features.identity,
    activity: features.activity,
    evidence: features.evidence,
    version: SCORE_VERSION,
    scored_at: data.now,
  };
}

function agentScoreRow({ agent, payments, captures }: ScoredAgentData, data: ScoringData): AgentScoreRow {
  const f = buildFeatures({
    address: agent.agent_wallet ?? '',
    agents: [agent],
    ownedCount: 1,
    isAgentWallet: false,
    payments,
    ownCaptures: captures,
    feedback: (data.feedbackByChain.get(agent.chain) ?? []).filter((fb) => fb.token_id === agent.token_id),
    level: data.level,
  }).features;
  const r = scoreFeatures(f);
  return {
    chain: agent.chain,
    token_id: agent.token_id,
    score: r.score,
    grade: r.grade,
    confidence: r.confidence,
    dimensions: { ...r.dimensions },
    version: SCORE_VERSION,
    scored_at: data.now,
  };
}

/** The profile row: this run's chain scores plus the ones kept from before, and every owned agent's latest score. */
function subjectRow(data: ScoringData, chainRows: ChainScoreRow[], agentScoreRows: AgentScoreRow[]): SubjectRow & { last_error: null } {
  const { owned } = data;
  const allChainRows = [...chainRows, ...data.existing.filter((e) => !chainRows.some((c) => c.chain === e.chain))];
  const agentScores = new Map(agentScoreRows.map((s) => [`${s.chain}:${s.token_id}`, s]));
  const agents = owned.map((a) => {
    const s = agentScores.get(`${a.chain}:${a.token_id}`);
    return {
      token_id: Number(a.token_id),
      chain: a.chain,
      name: (a.registration as RegistrationJson | null)?.name ?? null,
      score: s?.score ?? null,
      grade: s?.grade ?? null,
    };
  });
  const opValue = operatorScore(agents.map((a) => a.score).filter((s): s is number => s !== null));
  const operator =
    owned.length > 0 && opValue !== null
      ? { score: opValue, grade: grade(opValue), agent_count: owned.length, chains_active: [...new Set(owned.map((a) => a.chain))].sort() }
      : null;
  const best = [...allChainRows].sort((x, y) => y.score - x.score)[0];
  const topScore = operator ? operator.score : best.score;
  const entityType = owned.length > 0 ? 'operator' : String(best.classification.entity_type);
  return {
    network: data.network,
    address: data.address,
    chains: [...new Set(allChainRows.map((r) => r.chain))].sort(),
    score: topScore,
    grade: grade(topScore),
    entity_type: entityType,
    operator_score: operator,
    reputation: reputationBlock([...data.feedbackByChain.values()].flat()),
    agents,
    caveats: registrationCaveats(data.related),
    version: SCORE_VERSION,
    // The oldest chain score behind the profile: a profile is only as fresh as its stalest part.
    scored_at: new Date(Math.min(...allChainRows.map((r) => new Date(r.scored_at).getTime()))),
    updated_at: data.now,
    last_error: null,
  };
}

function uniqueAgents(agents: AgentRow[]): AgentRow[] {
  const seen = new Map<string, AgentRow>();
  for (const a of agents) seen.set(`${a.chain}:${a.token_id}`, a);
  return [...seen.values()];
}

function average(values: number[]): number | null {
  return values.length ? round1(values.reduce((s, v) => s + v, 0) / values.length) : null;
}

/** Trust average: `trust`-kind feedback (starred etc.); when there is none, every feedback value. */
function trustAverage(feedback: FeedbackRow[]): number | null {
  const values = feedback.map((f) => ({ kind: feedbackKind(f.tag1), v: feedbackValue(f.value, f.value_decimals) }));
  return average(values.filter((x) => x.kind === 'trust').map((x) => x.v)) ?? average(values.map((x) => x.v));
}

function reputationBlock(feedback: FeedbackRow[]): Record<string, unknown> | null {
  if (feedback.length === 0) return null;
  const byKind = (k: string) => feedback.filter((f) => feedbackKind(f.tag1) === k).map((f) => feedbackValue(f.value, f.value_decimals));
  const last = feedback.reduce<Date | null>((m, f) => (f.given_at && (!m || new Date(f.given_at) > m) ? new Date(f.given_at) : m), null);
  return {
    feedback_count: feedback.length,
    client_count: new Set(feedback.map((f) => `${f.chain}:${f.client_address}`)).size,
    trust_avg: average(byKind('trust')),
    uptime_avg: average(byKind('uptime')),
    activity_avg: average(byKind('activity')),
    last_feedback_at: iso(last),
  };
}

function registrationCaveats(agents: AgentRow[]): string[] {
  const out: string[] = [];
  for (const a of agents) {
    if (a.registration_status === 'error')
      out.push(`Registration file of agent ${a.token_id} on ${a.chain} could not be read; its last readable version (if any) is used.`);
    if (a.registration_status === 'unsupported')
      out.push(`Registration file of agent ${a.token_id} on ${a.chain} uses a URI scheme this server does not fetch (${metadataKind(a.agent_uri)}).`);
  }
  return out.slice(0, 10);
}

interface FeatureInput {
  address: string;
  agents: AgentRow[];
  ownedCount: number;
  isAgentWallet: boolean;
  payments: PaymentStats;
  ownCaptures: CaptureRow[];
  feedback: FeedbackRow[];
  level: VerificationLevel;
}

/** Turns indexed rows into formula features plus the profile's identity, activity and evidence blocks. */
export function buildFeatures(input: FeatureInput) {
  const f: Features = emptyFeatures();
  f.registeredAgents = input.ownedCount;
  f.isAgentWallet = input.isAgentWallet;
  f.verificationLevel = input.level;

  const regs = input.agents.filter((a) => a.registration_status === 'ok' || a.registration).map((a) => (a.registration ?? {}) as RegistrationJson);
  const evs = input.agents.map((a) => (a.evidence ?? {}) as EvidenceJson);
  const firstOf = <T>(values: Array<T | null | undefined>): T | null => values.find((v) => v !== null && v !== undefined) ?? null;
  f.registrationResolved = input.agents.some((a) => a.registration_status === 'ok');
  f.hasName = regs.some((r) => Boolean(r.name));
  f.services = [...new Set(regs.flatMap((r) => (r.services ?? []).map((s) => s.name.toLowerCase())))].sort();
  f.x402Support = regs.some((r) => r.x402_support === true);
  f.active = regs.some((r) => r.active === true) ? true : regs.some((r) => r.active === false) ? false : null;
  const websiteUrl = firstOf(regs.map((r) => r.website_url));
  const githubUrl = firstOf(regs.map((r) => r.github_url));
  const ensName = firstOf(regs.map((r) => r.ens_name));
  f.hasWebsite = Boolean(websiteUrl);
  f.hasGithub = Boolean(githubUrl);
  f.hasEns = Boolean(ensName);
  f.hasA2aCard = evs.some((e) => e.has_a2a_agent_card === true);
  const anyTrue = (vs: Array<boolean | null | undefined>) => (vs.some((v) => v === true) ? true : vs.some((v) => v === false) ? false : null);
  f.websiteReachable = websiteUrl ? anyTrue(evs.map((e) => e.website_reachable)) : null;
  f.websiteMentionsMcp = websiteUrl ? anyTrue(evs.map((e) => e.website_mentions_mcp)) : null;
  f.websiteMentionsX402 = websiteUrl ? anyTrue(evs.map((e) => e.website_mentions_x402)) : null;
  const stars = evs.map((e) => e.github_stars).filter((s): s is number => typeof s === 'number');
  f.githubStars = githubUrl && stars.length ? Math.max(...stars) : null;

  const pay = input.payments;
  f.candidate = { asPayer: pay.asPayer, asPayee: pay.asPayee, counterparties: pay.counterparties, activeDays: pay.activeDays, activeMonths: pay.activeMonths };

  // Verified: payments the service itself saw. As payer: the merchant-reported captures of this wallet. As
  // payee: on-chain payments into this address from wallets captured around the time they paid (in SQL).
  const capturedCount = input.ownCaptures.reduce((s, c) => s + c.transaction_count, 0);
  f.verified = { asPayer: capturedCount, asPayee: pay.verifiedPayee };
  const verifiedTimes = [
    ...input.ownCaptures.flatMap((c) => [c.first_seen_at, c.last_seen_at]),
    ...[pay.verifiedPayeeFirstAt, pay.verifiedPayeeLastAt].filter((d): d is Date => d !== null),
  ].map((d) => d.getTime());

  f.feedback = { count: input.feedback.length, clients: new Set(input.feedback.map((x) => x.client_address)).size, trustAvg: trustAverage(input.feedback) };

  const minTime = (ts: number[]) => (ts.length ? new Date(Math.min(...ts)) : null);
  const maxTime = (ts: number[]) => (ts.length ? new Date(Math.max(...ts)) : null);
  const verifiedTotal = f.verified.asPayer + f.verified.asPayee;
  const firstAgent = input.agents[0];
  return {
    features: f,
    verifiedTotal,
    identity: { ens_name: ensName, website_url: websiteUrl, github_url: githubUrl },
    activity: {
      total_candidate_transactions: pay.total,
      total_verified_transactions: verifiedTotal,
      as_candidate_payer: pay.asPayer,
      as_candidate_payee: pay.asPayee,
      as_verified_payer: f.verified.asPayer,
      as_verified_payee: f.verified.asPayee,
      counterparties_count: pay.counterparties,
      active_days: f.candidate.activeDays,
      active_months: f.candidate.activeMonths,
      first_candidate_tx_at: iso(pay.firstAt),
      last_candidate_tx_at: iso(pay.lastAt),
      first_verified_tx_at: iso(minTime(verifiedTimes)),
      last_verified_tx_at: iso(maxTime(verifiedTimes)),
    },
    evidence: {
      metadata_kind: metadataKind(firstAgent?.agent_uri ?? null),
      has_a2a_agent_card: f.hasA2aCard,
      website_url: websiteUrl,
      website_reachable: f.websiteReachable,
      website_mentions_mcp: f.websiteMentionsMcp,
      website_mentions_x402: f.websiteMentionsX402,
      github_url: githubUrl,
      github_stars: f.githubStars,
    },
  };
}
