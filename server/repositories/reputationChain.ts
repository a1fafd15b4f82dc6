// Chain-index tables (knex only): checkpoints, indexer health, ERC-8004 agents/events/feedback and candidate
// x402 payments. Writes take an optional transaction; the indexer owns the transaction boundaries.
import type { Knex } from 'knex';

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
  total: 0, asPayer: 0, asPayee: 0, counterparties: 0, activeDays: 0, activeMonths: 0, firstAt: null, lastAt: null,
  verifiedPayee: 0, verifiedPayeeFirstAt: null, verifiedPayeeLastAt: null,
});

export interface SyncStateRow {
  chain: string;
  head_block: number | null;
  safe_block: number | null;
  last_synced_at: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export class ReputationChainRepository {
  constructor(private readonly db: Knex) {}

  /** Locks and returns the checkpoint row (creating it at `initial` first); call inside a transaction. */
  async lockCheckpoint(trx: Knex.Transaction, options: { chain: string; contract: string; kind: ContractKind; initial: number }): Promise<number> {
    await trx('chain_checkpoints')
      .insert({ chain: options.chain, contract: options.contract, kind: options.kind, last_block: options.initial })
      .onConflict(['chain', 'contract'])
      .ignore();
    const row = await trx('chain_checkpoints').where({ chain: options.chain, contract: options.contract }).forUpdate().first('last_block');
    return Number(row.last_block);
  }

  async getCheckpoint(options: { chain: string; contract: string }, trx?: Knex.Transaction): Promise<number | null> {
    const row = await (trx ?? this.db)('chain_checkpoints').where(options).first('last_block');
    return row ? Number(row.last_block) : null;
  }

  async setCheckpoint(trx: Knex.Transaction, options: { chain: string; contract: string; lastBlock: number; now: Date }): Promise<void> {
    await trx('chain_checkpoints')
      .where({ chain: options.chain, contract: options.contract })
      .update({ last_block: options.lastBlock, updated_at: options.now });
  }

  async recordSync(chain: string, patch: { head_block?: number; safe_block?: number; last_synced_at?: Date; last_error?: string | null; last_error_at?: Date | null; now: Date }): Promise<void> {
    const { now, ...fields } = patch;
    await this.db('chain_sync_state')
      .insert({ chain, ...fields, updated_at: now })
      .onConflict('chain')
      .merge({ ...fields, updated_at: now });
  }

  async syncStates(): Promise<SyncStateRow[]> {
    const rows = await this.db('chain_sync_state').select('chain', 'head_block', 'safe_block', 'last_synced_at', 'last_error', 'last_error_at');
    return rows.map((r) => ({ ...r, head_block: num(r.head_block), safe_block: num(r.safe_block) }));
  }

  /** Inserts a raw registry event; true when it was new (derived state must then be applied once). */
  async insertEvent(
    trx: Knex.Transaction,
    e: { chain: string; tx_hash: string; log_index: number; block_number: number; contract: string; event: string; token_id: string | null; payload: unknown; block_time: Date | null },
  ): Promise<boolean> {
    const inserted = await trx('erc8004_events')
      .insert({ ...e, payload: JSON.stringify(e.payload) })
      .onConflict(['chain', 'tx_hash', 'log_index'])
      .ignore()
      .returning('log_index');
    return inserted.length > 0;
  }

  /** Creates the agent on first sight (mint Transfer or Registered, whichever comes first). */
  async ensureAgent(trx: Knex.Transaction, a: { chain: string; token_id: string; registry: string; owner: string; now: Date }): Promise<void> {
    await trx('erc8004_agents')
      .insert({ chain: a.chain, token_id: a.token_id, registry: a.registry, owner: a.owner, registration_status: 'none', updated_at: a.now })
      .onConflict(['chain', 'token_id'])
      .ignore();
  }

  async registerAgent(trx: Knex.Transaction, a: { chain: string; token_id: string; owner: string; uri: string; block: number; at: Date | null; now: Date }): Promise<void> {
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

  async setOwner(trx: Knex.Transaction, a: { chain: string; token_id: string; owner: string; now: Date }): Promise<void> {
    await trx('erc8004_agents').where({ chain: a.chain, token_id: a.token_id }).update({ owner: a.owner, updated_at: a.now });
  }

  async setUri(trx: Knex.Transaction, a: { chain: string; token_id: string; uri: string; now: Date }): Promise<void> {
    await trx('erc8004_agents')
      .where({ chain: a.chain, token_id: a.token_id })
      .update({ agent_uri: a.uri || null, registration_status: a.uri ? 'pending' : 'none', registration_attempts: 0, updated_at: a.now });
  }

  async setMetadata(trx: Knex.Transaction, a: { chain: string; token_id: string; key: string; value: string; agentWallet: string | null; now: Date }): Promise<void> {
    const patch: Record<string, unknown> = {
      metadata: trx.raw('metadata || ?::jsonb', [JSON.stringify({ [a.key]: a.value })]),
      updated_at: a.now,
    };
    if (a.agentWallet !== null) patch.agent_wallet = a.agentWallet;
    await trx('erc8004_agents').where({ chain: a.chain, token_id: a.token_id }).update(patch);
  }

  async insertFeedback(
    trx: Knex.Transaction,
    f: { chain: string; token_id: string; client_address: string; feedback_index: string; value: string; value_decimals: number; tag1: string; tag2: string; endpoint: string; feedback_uri: string; block_number: number; tx_hash: string; given_at: Date | null },
  ): Promise<void> {
    await trx('erc8004_feedback').insert(f).onConflict(['chain', 'token_id', 'client_address', 'feedback_index']).ignore();
  }

  async revokeFeedback(trx: Knex.Transaction, f: { chain: string; token_id: string; client_address: string; feedback_index: string; at: Date | null }): Promise<void> {
    await trx('erc8004_feedback')
      .where({ chain: f.chain, token_id: f.token_id, client_address: f.client_address, feedback_index: f.feedback_index })
      .whereNull('revoked_at')
      .update({ revoked_at: f.at ?? trx.fn.now() });
  }

  async insertPayments(
    trx: Knex.Transaction,
    rows: Array<{ chain: string; tx_hash: string; log_index: number; token: string; payer: string; payee: string; value: string; nonce: string; block_number: number; block_time: Date }>,
  ): Promise<Array<{ payer: string; payee: string }>> {
    if (rows.length === 0) return [];
    return trx('candidate_payments').insert(rows).onConflict(['chain', 'tx_hash', 'log_index']).ignore().returning(['payer', 'payee']);
  }

  /** Owners and agent wallets of the given agents (`chain:tokenId` keys). */
  async partiesOfAgents(keys: string[]): Promise<string[]> {
    if (keys.length === 0) return [];
    const pairs = keys.map((k) => {
      const i = k.indexOf(':');
      return [k.slice(0, i), k.slice(i + 1)];
    });
    const rows = await this.db('erc8004_agents').whereIn(['chain', 'token_id'], pairs).select('owner', 'agent_wallet');
    const out = new Set<string>();
    for (const r of rows) {
      if (r.owner && r.owner !== '0x0000000000000000000000000000000000000000') out.add(r.owner);
      if (r.agent_wallet) out.add(r.agent_wallet);
    }
    return [...out];
  }

  /** Agents whose registration file must be (re)read, or whose evidence is older than `evidenceBefore`. */
  async agentsToResolve(chain: string, options: { maxAttempts: number; retryBefore: Date; evidenceBefore: Date; limit: number }): Promise<AgentRow[]> {
    const rows = await this.db('erc8004_agents')
      .where({ chain })
      .andWhere((q) =>
        q
          .where('registration_status', 'pending')
          .orWhere((q2) =>
            q2.where('registration_status', 'error').andWhere('registration_attempts', '<', options.maxAttempts).andWhere('registration_fetched_at', '<', options.retryBefore),
          )
          .orWhere((q2) => q2.where('registration_status', 'ok').andWhere((q3) => q3.whereNull('evidence_checked_at').orWhere('evidence_checked_at', '<', options.evidenceBefore))),
      )
      .orderBy('updated_at')
      .limit(options.limit);
    return rows.map(toAgent);
  }

  /**
   * Stores a resolution result, but only if the agent still points at the URI that was resolved (a
   * URIUpdated indexed meanwhile wins). On failure the last good registration is kept, not erased.
   */
  async saveResolution(a: {
    chain: string;
    token_id: string;
    uri: string | null;
    status: 'ok' | 'error' | 'unsupported' | 'none';
    registration: unknown | null;
    error: string | null;
    evidence: unknown | null;
    now: Date;
  }): Promise<boolean> {
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
      patch.registration_attempts = this.db.raw('registration_attempts + 1');
    } else {
      patch.registration = null;
      patch.registration_uri = a.uri;
      patch.evidence = null;
    }
    const q = this.db('erc8004_agents').where({ chain: a.chain, token_id: a.token_id });
    if (a.uri === null) q.whereNull('agent_uri');
    else q.where('agent_uri', a.uri);
    return (await q.update(patch)) > 0;
  }

  // ---- reads for the scorer ----

  async agentsOwnedBy(address: string): Promise<AgentRow[]> {
    return (await this.db('erc8004_agents').where({ owner: address }).orderBy(['chain', 'registered_block'])).map(toAgent);
  }

  async agentsWithWallet(address: string): Promise<AgentRow[]> {
    return (await this.db('erc8004_agents').where({ agent_wallet: address }).orderBy(['chain', 'registered_block'])).map(toAgent);
  }

  async feedbackFor(chain: string, tokenIds: string[]): Promise<FeedbackRow[]> {
    if (tokenIds.length === 0) return [];
    const rows = await this.db('erc8004_feedback')
      .where({ chain })
      .whereIn('token_id', tokenIds)
      .select('chain', 'token_id', 'client_address', 'feedback_index', 'value', 'value_decimals', 'tag1', 'tag2', 'given_at', 'revoked_at');
    return rows.map((r) => ({ ...r, feedback_index: Number(r.feedback_index), value_decimals: Number(r.value_decimals) }));
  }

  /**
   * Candidate-payment aggregates per chain for one address, computed in SQL (a busy payee may have millions
   * of rows). `verified_payee*` counts payments into the address from a wallet captured by a merchant within
   * `marginHours` of that capture's window — payments the service itself saw the payer make.
   */
  async paymentStats(address: string, options: { network: string; marginHours: number; chain?: string }): Promise<Map<string, PaymentStats>> {
    const chainFilter = options.chain ? 'and chain = ?' : '';
    const chainArg = options.chain ? [options.chain] : [];
    const [totals, verified] = await Promise.all([
      this.db.raw(
        `select chain, count(*) as total,
                count(*) filter (where payer = ?) as as_payer,
                count(*) filter (where payee = ?) as as_payee,
                count(distinct case when payer = ? then payee else payer end) as counterparties,
                count(distinct to_char(block_time at time zone 'UTC', 'YYYY-MM-DD')) as active_days,
                count(distinct to_char(block_time at time zone 'UTC', 'YYYY-MM')) as active_months,
                min(block_time) as first_at, max(block_time) as last_at
           from candidate_payments where (payer = ? or payee = ?) ${chainFilter} group by chain`,
        [address, address, address, address, address, ...chainArg],
      ),
      this.db.raw(
        `select p.chain, count(*) as n, min(p.block_time) as first_at, max(p.block_time) as last_at
           from candidate_payments p
          where p.payee = ? ${chainFilter.replace('chain', 'p.chain')}
            and exists (select 1 from wallet_captures c
                         where c.network = ? and c.wallet_address = p.payer
                           and p.block_time between c.first_seen_at - make_interval(hours => ?) and c.last_seen_at + make_interval(hours => ?))
          group by p.chain`,
        [address, ...chainArg, options.network, options.marginHours, options.marginHours],
      ),
    ]);
    const out = new Map<string, PaymentStats>();
    for (const r of totals.rows as Array<Record<string, unknown>>) {
      out.set(String(r.chain), {
        total: Number(r.total),
        asPayer: Number(r.as_payer),
        asPayee: Number(r.as_payee),
        counterparties: Number(r.counterparties),
        activeDays: Number(r.active_days),
        activeMonths: Number(r.active_months),
        firstAt: r.first_at ? new Date(r.first_at as string) : null,
        lastAt: r.last_at ? new Date(r.last_at as string) : null,
        verifiedPayee: 0,
        verifiedPayeeFirstAt: null,
        verifiedPayeeLastAt: null,
      });
    }
    for (const r of verified.rows as Array<Record<string, unknown>>) {
      const stats = out.get(String(r.chain));
      if (!stats) continue;
      stats.verifiedPayee = Number(r.n);
      stats.verifiedPayeeFirstAt = r.first_at ? new Date(r.first_at as string) : null;
      stats.verifiedPayeeLastAt = r.last_at ? new Date(r.last_at as string) : null;
    }
    return out;
  }

  /** Chains on which the address appears in indexed data (agent owner/wallet, payer or payee). */
  async chainsWithEvidence(address: string): Promise<string[]> {
    const rows = await this.db.raw(
      `select chain from erc8004_agents where owner = ? or agent_wallet = ?
       union select chain from candidate_payments where payer = ?
       union select chain from candidate_payments where payee = ?
       union select chain from erc8004_feedback where client_address = ?`,
      [address, address, address, address, address],
    );
    return (rows.rows as Array<{ chain: string }>).map((r) => r.chain).sort();
  }

  async countPayments(chain: string): Promise<number> {
    const row = await this.db('candidate_payments').where({ chain }).count<{ count: number }[]>('* as count').first();
    return Number(row?.count ?? 0);
  }
}

function toAgent(r: Record<string, unknown>): AgentRow {
  return {
    ...(r as unknown as AgentRow),
    registered_block: num(r.registered_block),
    registration_attempts: Number(r.registration_attempts ?? 0),
    metadata: (r.metadata as Record<string, string>) ?? {},
  };
}
