// Chain-index tables (knex only): checkpoints, indexer health, ERC-8004 agents/events/feedback and candidate
// x402 payments. Writes take an optional transaction; the indexer owns the transaction boundaries.
import type { Knex } from 'knex';
import type { DriverRow } from '../db/rows';

export type ContractKind = 'identity' | 'reputation' | 'usdc';

export interface AgentRow {
  chain: string;
  token_id: string;
  registry: string;
  owner: string;
  agent_uri: string | null;
  agent_wallet: string | null;
  metadata: Record<string, string>;
  registered_block: number | null;
  registered_at: Date | null;
  registration_status: 'pending' | 'ok' | 'error' | 'unsupported' | 'none';
  registration_uri: string | null;
  registration: Record<string, unknown> | null;
  registration_error: string | null;
  registration_attempts: number;
  registration_fetched_at: Date | null;
  evidence: Record<string, unknown> | null;
  evidence_checked_at: Date | null;
}

export interface FeedbackRow {
  chain: string;
  token_id: string;
  client_address: string;
  feedback_index: number;
  value: string;
  value_decimals: number;
  tag1: string;
  tag2: string;
  given_at: Date | null;
  revoked_at: Date | null;
}

export interface PaymentStats {
  /** Rows involving the address (a self-payment counts once here, and as both payer and payee). */
  total: number;
  asPayer: number;
  asPayee: number;
  counterparties: number;
  activeDays: number;
  activeMonths: number;
  firstAt: Date | null;
  lastAt: Date | null;
  verifiedPayee: number;
  verifiedPayeeFirstAt: Date | null;
  verifiedPayeeLastAt: Date | null;
}

export const emptyPaymentStats = (): PaymentStats => ({
  total: 0,
  asPayer: 0,
  asPayee: 0,
  counterparties: 0,
  activeDays: 0,
  activeMonths: 0,
  firstAt: null,
  lastAt: null,
  verifiedPayee: 0,
  verifiedPayeeFirstAt: null,
  verifiedPayeeLastAt: null,
});

export interface SyncStateRow {
  chain: string;
  head_block: number | null;
  safe_block: number | null;
  last_synced_at: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
}

/** An agent row as pg returns it: bigint block as a string, metadata possibly null. */
type AgentDbRow = Omit<DriverRow<AgentRow, 'registered_block' | 'registration_attempts'>, 'metadata'> & { metadata: Record<string, string> | null };

export interface CandidatePaymentRow {
  chain: string;
  tx_hash: string;
  log_index: number;
  token: string;
  payer: string;
  payee: string;
  value: string;
  nonce: string;
  block_number: number;
  block_time: Date;
}

/** Per-chain aggregates of paymentStats(); counts arrive from pg as strings (bigint). */
interface PaymentTotalsRow {
  chain: string;
  total: string | number;
  as_payer: string | number;
  as_payee: string | number;
  counterparties: string | number;
  active_days: string | number;
  active_months: string | number;
  first_at: Date | string | null;
  last_at: Date | string | null;
}

interface VerifiedPayeeRow {
  chain: string;
  n: string | number;
  first_at: Date | string | null;
  last_at: Date | string | null;
}

interface CheckpointRow {
  chain: string;
  contract: string;
  kind: ContractKind;
  last_block: string | number;
  updated_at: Date;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export class ReputationChainRepository {
  constructor(private readonly db: Knex) {}

  /** Locks and returns the checkpoint row (creating it at `initial` first); call inside a transaction. */
  async lockCheckpoint(options: { chain: string; contract: string; kind: ContractKind; initial: number }, trx: Knex.Transaction): Promise<number> {
    await trx('chain_checkpoints')
      .insert({ chain: options.chain, contract: options.contract, kind: options.kind, last_block: options.initial })
      .onConflict(['chain', 'contract'])
      .ignore();
    const row = await trx<CheckpointRow>('chain_checkpoints').where({ chain: options.chain, contract: options.contract }).forUpdate().first('last_block');
    return Number(row!.last_block);
  }

  async getCheckpoint(options: { chain: string; contract: string }, trx?: Knex.Transaction): Promise<number | null> {
    const row = await (trx ?? this.db)<CheckpointRow>('chain_checkpoints').where(options).first('last_block');
    return row ? Number(row.last_block) : null;
  }

  async setCheckpoint(options: { chain: string; contract: string; lastBlock: number; now: Date }, trx: Knex.Transaction): Promise<void> {
    await trx('chain_checkpoints')
      .where({ chain: options.chain, contract: options.contract })
      .update({ last_block: options.lastBlock, updated_at: options.now });
  }

  async recordSync(
    input: {
      chain: string;
      head_block?: number;
      safe_block?: number;
      last_synced_at?: Date;
      last_error?: string | null;
      last_error_at?: Date | null;
      now: Date;
    },
    trx?: Knex.Transaction,
  ): Promise<void> {
    const { chain, now, ...fields } = input;
    await (trx ?? this.db)('chain_sync_state')
      .insert({ chain, ...fields, updated_at: now })
      .onConflict('chain')
      .merge({ ...fields, updated_at: now });
  }

  async syncStates(trx?: Knex.Transaction): Promise<SyncStateRow[]> {
    const rows = await (trx ?? this.db)<DriverRow<SyncStateRow, 'head_block' | 'safe_block'>>('chain_sync_state').select(
      'chain',
      'head_block',
      'safe_block',
      'last_synced_at',
      'last_error',
      'last_error_at',
    );
    return rows.map((r) => ({ ...r, head_block: num(r.head_block), safe_block: num(r.safe_block) }));
  }

  /** Inserts a raw registry event; true when it was new (derived state must then be applied once). */
  async insertEvent(
    e: {
      chain: string;
      tx_hash: string;
      log_index: number;
      block_number: number;
      contract: string;
      event: string;
      token_id: string | null;
      payload: unknown;
      block_time: Date | null;
    },
    trx: Knex.Transaction,
  ): Promise<boolean> {
    const inserted = await trx('erc8004_events')
      .insert({ ...e, payload: JSON.stringify(e.payload) })
      .onConflict(['chain', 'tx_hash', 'log_index'])
      .ignore()
      .returning('log_index');
    return inserted.length > 0;
  }

  /** Creates the agent on first sight (mint Transfer or Registered, whichever comes first). */
  async ensureAgent(a: { chain: string; token_id: string; registry: string; owner: string; now: Date }, trx: Knex.Transaction): Promise<void> {
    await trx('erc8004_agents')
      .insert({ chain: a.chain, token_id: a.token_id, registry: a.registry, owner: a.owner, registration_status: 'none', updated_at: a.now })
      .onConflict(['chain', 'token_id'])
      .ignore();
  }

  async registerAgent(
    a: { chain: string; token_id: string; owner: string; uri: string; block: number; at: Date | null; now: Date },
    trx: Knex.Transaction,
  ): Promise<void> {
    await trx('erc8004_agents')
      .where({ chain: a.chain, token_id: a.token_id })
      .update({
        owner: a.owner,
        agent_uri: a.uri || null,
        registered_block: a.block,
        registered_at: a.at,
        registration_status: a.uri ? 'pending' : 'none',
        registration_attempts: 0,
        updated_at: a.now,
      });
  }

  async setOwner(a: { chain: string; token_id: string; owner: string; now: Date }, trx: Knex.Transaction): Promise<void> {
    await trx('erc8004_agents').where({ chain: a.chain, token_id: a.token_id }).update({ owner: a.owner, updated_at: a.now });
  }

  async setUri(a: { chain: string; token_id: string; uri: string; now: Date }, trx: Knex.Transaction): Promise<void> {
    await trx('erc8004_agents')
      .where({ chain: a.chain, token_id: a.token_id })
      .update({ agent_uri: a.uri || null, registration_status: a.uri ? 'pending' : 'none', registration_attempts: 0, updated_at: a.now });
  }

  async setMetadata(
    a: { chain: string; token_id: string; key: string; value: string; agentWallet: string | null; now: Date },
    trx: Knex.Transaction,
  ): Promise<void> {
    const patch: Record<string, unknown> = {
      metadata: trx.raw('metadata || ?::jsonb', [JSON.stringify({ [a.key]: a.value })]),
      updated_at: a.now,
    };
    if (a.agentWallet !== null) patch.agent_wallet = a.agentWallet;
    await trx('erc8004_agents').where({ chain: a.chain, token_id: a.token_id }).update(patch);
  }

  async insertFeedback(
    f: {
      chain: string;
      token_id: string;
      client_address: string;
      feedback_index: string;
      value: string;
      value_decimals: number;
      tag1: string;
      tag2: string;
      endpoint: string;
      feedback_uri: string;
      block_number: number;
      tx_hash: string;
      given_at: Date | null;
    },
    trx: Knex.Transaction,
  ): Promise<void> {
    await trx('erc8004_feedback').insert(f).onConflict(['chain', 'token_id', 'client_address', 'feedback_index']).ignore();
  }

  async revokeFeedback(
    f: { chain: string; token_id: string; client_address: string; feedback_index: string; at: Date | null },
    trx: Knex.Transaction,
  ): Promise<void> {
    await trx('erc8004_feedback')
      .where({ chain: f.chain, token_id: f.token_id, client_address: f.client_address, feedback_index: f.feedback_index })
      .whereNull('revoked_at')
      .update({ revoked_at: f.at ?? trx.fn.now() });
  }

  async insertPayments(input: { rows: CandidatePaymentRow[] }, trx: Knex.Transaction): Promise<Array<{ payer: string; payee: string }>> {
    if (input.rows.length === 0) return [];
    return trx<CandidatePaymentRow>('candidate_payments')
      .insert(input.rows)
      .onConflict(['chain', 'tx_hash', 'log_index'])
      .ignore()
      .returning(['payer', 'payee']);
  }

  /** Owners and agent wallets of the given agents (`chain:tokenId` keys). */
  async partiesOfAgents(input: { keys: string[] }, trx?: Knex.Transaction): Promise<string[]> {
    if (input.keys.length === 0) return [];
    const pairs = input.keys.map((k) => {
      const i = k.indexOf(':');
      return [k.slice(0, i), k.slice(i + 1)];
    });
    const rows = await (trx ?? this.db)<AgentDbRow>('erc8004_agents').whereIn(['chain', 'token_id'], pairs).select('owner', 'agent_wallet');
    const out = new Set<string>();
    for (const r of rows) {
      if (r.owner && r.owner !== '0x0000000000000000000000000000000000000000') out.add(r.owner);
      if (r.agent_wallet) out.add(r.agent_wallet);
    }
    return [...out];
  }

  /** Agents whose registration file must be (re)read, or whose evidence is older than `evidenceBefore`. */
  async agentsToResolve(
    options: { chain: string; maxAttempts: number; retryBefore: Date; evidenceBefore: Date; limit: number },
    trx?: Knex.Transaction,
  ): Promise<AgentRow[]> {
    const rows = await (trx ?? this.db)<AgentDbRow>('erc8004_agents')
      .where({ chain: options.chain })
      .andWhere(
        (q) =>
          void q
            .where('registration_status', 'pending')
            .orWhere(
              (q2) =>
                void q2
                  .where('registration_status', 'error')
                  .andWhere('registration_attempts', '<', options.maxAttempts)
                  .andWhere('registration_fetched_at', '<', options.retryBefore),
            )
            .orWhere(
              (q2) =>
                void q2
                  .where('registration_status', 'ok')
                  .andWhere((q3) => void q3.whereNull('evidence_checked_at').orWhere('evidence_checked_at', '<', options.evidenceBefore)),
            ),
      )
      .orderBy('updated_at')
      .limit(options.limit);
    return rows.map(toAgent);
  }

  /**
   * Stores a resolution result, but only if the agent still points at the URI that was resolved (a
   * URIUpdated indexed meanwhile wins). On failure the last good registration is kept, not erased.
   */
  async saveResolution(
    a: {
      chain: string;
      token_id: string;
      uri: string | null;
      status: 'ok' | 'error' | 'unsupported' | 'none';
      registration: unknown;
      error: string | null;
      evidence: unknown;
      now: Date;
    },
    trx?: Knex.Transaction,
  ): Promise<boolean> {
    const db = trx ?? this.db;
    const patch: Record<string, unknown> = {
      registration_status: a.status,
      registration_error: a.error,
      registration_fetched_at: a.now,
    };
    if (a.status === 'ok') {
      patch.registration = JSON.stringify(a.registration);
      patch.registration_uri = a.uri;
      patch.registration_attempts = 0;
      patch.evidence = JSON.stringify(a.evidence);
      patch.evidence_checked_at = a.now;
    } else if (a.status === 'error') {
      patch.registration_attempts = db.raw('registration_attempts + 1');
    } else {
      patch.registration = null;
      patch.registration_uri = a.uri;
      patch.evidence = null;
    }
    const q = db('erc8004_agents').where({ chain: a.chain, token_id: a.token_id });
    if (a.uri === null) q.whereNull('agent_uri');
    else q.where('agent_uri', a.uri);
    return (await q.update(patch)) > 0;
  }

  // ---- reads for the scorer ----

  async agentsOwnedBy(input: { address: string }, trx?: Knex.Transaction): Promise<AgentRow[]> {
    return (await (trx ?? this.db)<AgentDbRow>('erc8004_agents').where({ owner: input.address }).orderBy(['chain', 'registered_block'])).map(toAgent);
  }

  async agentsWithWallet(input: { address: string }, trx?: Knex.Transaction): Promise<AgentRow[]> {
    return (await (trx ?? this.db)<AgentDbRow>('erc8004_agents').where({ agent_wallet: input.address }).orderBy(['chain', 'registered_block'])).map(toAgent);
  }

  /** Unrevoked feedback on the given agents, in one statement. */
  async liveFeedbackOn(input: { agents: Array<{ chain: string; token_id: string }> }, trx?: Knex.Transaction): Promise<FeedbackRow[]> {
    if (input.agents.length === 0) return [];
    const rows = await (trx ?? this.db)<DriverRow<FeedbackRow, 'feedback_index' | 'value_decimals'>>('erc8004_feedback')
      .whereIn(
        ['chain', 'token_id'],
        input.agents.map((a) => [a.chain, a.token_id]),
      )
      .whereNull('revoked_at')
      .select('chain', 'token_id', 'client_address', 'feedback_index', 'value', 'value_decimals', 'tag1', 'tag2', 'given_at', 'revoked_at');
    return rows.map((r) => ({ ...r, feedback_index: Number(r.feedback_index), value_decimals: Number(r.value_decimals) }));
  }

  /**
   * Candidate-payment aggregates per chain for one address, computed in SQL (a busy payee may have millions
   * of rows). `verified_payee*` counts payments into the address from a wallet captured by a merchant within
   * `marginHours` of that capture's window — payments the service itself saw the payer make.
   */
  async paymentStats(options: { address: string; network: string; marginHours: number }, trx?: Knex.Transaction): Promise<Map<string, PaymentStats>> {
    const db = trx ?? this.db;
    const { address } = options;
    const [totals, verified] = await Promise.all([
      db.raw<{ rows: PaymentTotalsRow[] }>(
        `select chain, ${PAYMENT_TOTALS_SQL}
           from candidate_payments where (payer = ? or payee = ?) group by chain`,
        [address, address, address, address, address],
      ),
      db.raw<{ rows: VerifiedPayeeRow[] }>(
        `select p.chain, count(*) as n, min(p.block_time) as first_at, max(p.block_time) as last_at
           from candidate_payments p
          where p.payee = ? and ${VERIFIED_PAYER_SQL}
          group by p.chain`,
        [address, options.network, options.marginHours, options.marginHours],
      ),
    ]);
    const verifiedByChain = new Map(verified.rows.map((r) => [r.chain, r]));
    return new Map(totals.rows.map((r) => [r.chain, toPaymentStats(r, verifiedByChain.get(r.chain))]));
  }

  /**
   * paymentStats() of many (address, chain) pairs in two statements, keyed `chain:address`; a pair without
   * payments gets empty stats. The scorer reads every agent wallet's activity with it.
   */
  async paymentStatsOnChains(
    options: { pairs: Array<{ address: string; chain: string }>; network: string; marginHours: number },
    trx?: Knex.Transaction,
  ): Promise<Map<string, PaymentStats>> {
    const pairs = [...new Map(options.pairs.map((p) => [`${p.chain}:${p.address}`, p])).values()];
    if (pairs.length === 0) return new Map();
    const db = trx ?? this.db;
    const columns = [pairs.map((p) => p.address), pairs.map((p) => p.chain)];
    const [totals, verified] = await Promise.all([
      db.raw<{ rows: Array<PaymentTotalsRow & { address: string }> }>(
        `select q.address, q.chain, s.*
           from unnest(?::text[], ?::text[]) as q(address, chain)
           cross join lateral (
             select ${PAYMENT_TOTALS_SQL.replace(/\?/g, 'q.address')}
               from candidate_payments where (payer = q.address or payee = q.address) and chain = q.chain
           ) s`,
        columns,
      ),
      db.raw<{ rows: Array<VerifiedPayeeRow & { address: string }> }>(
        `select q.address, q.chain, v.*
           from unnest(?::text[], ?::text[]) as q(address, chain)
           cross join lateral (
             select count(*) as n, min(p.block_time) as first_at, max(p.block_time) as last_at
               from candidate_payments p
              where p.payee = q.address and p.chain = q.chain and ${VERIFIED_PAYER_SQL}
           ) v`,
        [...columns, options.network, options.marginHours, options.marginHours],
      ),
    ]);
    const verifiedByKey = new Map(verified.rows.map((r) => [`${r.chain}:${r.address}`, r]));
    return new Map(totals.rows.map((r) => [`${r.chain}:${r.address}`, toPaymentStats(r, verifiedByKey.get(`${r.chain}:${r.address}`))]));
  }

  /** Chains on which the address appears in indexed data (agent owner/wallet, payer or payee). */
  async chainsWithEvidence(input: { address: string }, trx?: Knex.Transaction): Promise<string[]> {
    const { address } = input;
    const rows = await (trx ?? this.db).raw<{ rows: Array<{ chain: string }> }>(
      `select chain from erc8004_agents where owner = ? or agent_wallet = ?
       union select chain from candidate_payments where payer = ?
       union select chain from candidate_payments where payee = ?
       union select chain from erc8004_feedback where client_address = ?`,
      [address, address, address, address, address],
    );
    return rows.rows.map((r) => r.chain).sort();
  }
}

/** Aggregates over the candidate payments of one address (bound three times as `?`), per group. */
const PAYMENT_TOTALS_SQL = `count(*) as total,
                count(*) filter (where payer = ?) as as_payer,
                count(*) filter (where payee = ?) as as_payee,
                count(distinct case when payer = ? then payee else payer end) as counterparties,
                count(distinct to_char(block_time at time zone 'UTC', 'YYYY-MM-DD')) as active_days,
                count(distinct to_char(block_time at time zone 'UTC', 'YYYY-MM')) as active_months,
                min(block_time) as first_at, max(block_time) as last_at`;

/** Payment `p` came from a wallet captured by a merchant within the margin of its capture window (binds network, margin, margin). */
const VERIFIED_PAYER_SQL = `exists (select 1 from wallet_captures c
                         where c.network = ? and c.wallet_address = p.payer
                           and p.block_time between c.first_seen_at - make_interval(hours => ?) and c.last_seen_at + make_interval(hours => ?))`;

function toPaymentStats(r: Omit<PaymentTotalsRow, 'chain'>, verified: Omit<VerifiedPayeeRow, 'chain'> | undefined): PaymentStats {
  return {
    total: Number(r.total),
    asPayer: Number(r.as_payer),
    asPayee: Number(r.as_payee),
    counterparties: Number(r.counterparties),
    activeDays: Number(r.active_days),
    activeMonths: Number(r.active_months),
    firstAt: r.first_at ? new Date(r.first_at) : null,
    lastAt: r.last_at ? new Date(r.last_at) : null,
    verifiedPayee: verified ? Number(verified.n) : 0,
    verifiedPayeeFirstAt: verified?.first_at ? new Date(verified.first_at) : null,
    verifiedPayeeLastAt: verified?.last_at ? new Date(verified.last_at) : null,
  };
}

function toAgent(r: AgentDbRow): AgentRow {
  return {
    ...r,
    registered_block: num(r.registered_block),
    registration_attempts: Number(r.registration_attempts ?? 0),
    metadata: r.metadata ?? {},
  };
}
