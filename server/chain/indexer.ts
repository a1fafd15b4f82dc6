// The chain indexer for one configured chain: reads the ERC-8004 Identity and Reputation Registry events and
// candidate x402 payments (USDC Transfer + EIP-3009 AuthorizationUsed in the same transaction) over JSON-RPC.
// Each contract has its own checkpoint; each bounded block range is committed in one transaction together
// with its checkpoint (resumable, never skips or repeats), only blocks `confirmations` deep are read (reorg
// safety), and every insert is idempotent. Registration files are resolved after the range commits.
import { ethers } from 'ethers';
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import type { ChainConfig } from './config';
import { TOPICS, decodeAuthorizationUsed, decodeErc20Transfer, decodeIdentityLog, decodeReputationLog, type IdentityEvent, type ReputationEvent } from './abi';
import type { CandidatePaymentRow, ContractKind, ReputationChainRepository } from '../repositories/reputationChain';
import type { RegistrationResolver } from './registration';
import type { EvidenceCollector } from './evidence';

/** The slice of an ethers provider the indexer uses (tests wrap it to inject faults). */
export type ChainProvider = Pick<ethers.JsonRpcProvider, 'getBlockNumber' | 'getLogs' | 'getBlock' | 'getTransactionReceipt' | 'send'>;

export function createChainProvider(chain: ChainConfig): ethers.JsonRpcProvider {
  const request = new ethers.FetchRequest(chain.rpcUrl);
  request.timeout = chain.rpcTimeoutMs;
  // staticNetwork: no background network detection (which retries forever and floods the log when the RPC
  // is down); the chain id is checked explicitly at the start of every sync instead.
  return new ethers.JsonRpcProvider(request, chain.chainId, { staticNetwork: ethers.Network.from(chain.chainId), batchMaxCount: 10 });
}

export interface SyncResult {
  chain: string;
  head: number;
  safeBlock: number;
  ranges: number;
  caughtUp: boolean;
  resolved: number;
  /** Agents whose on-chain state, feedback or registration changed in this run (`chain:tokenId`). */
  touchedAgents: string[];
  /** Payers and payees of payments first indexed in this run. */
  touchedParties: string[];
}

export interface IndexerOptions {
  /** Stop after this many block ranges (the next run resumes from the checkpoint). */
  maxRanges?: number;
}

const REGISTRATION_MAX_ATTEMPTS = 3;
const REGISTRATION_RETRY_MS = 10 * 60_000;
const EVIDENCE_MAX_AGE_MS = 24 * 3600_000;
const RESOLVE_BATCH = 25;
const RECEIPT_CONCURRENCY = 4;

export interface ChainIndexerOptions {
  db: Knex;
  repo: ReputationChainRepository;
  chain: ChainConfig;
  provider: ChainProvider;
  resolver: RegistrationResolver;
  evidence: EvidenceCollector;
  logger: Logger;
  now: () => Date;
}

export class ChainIndexer {
  private readonly blockTimes = new Map<number, Date>();
  private touchedAgents = new Set<string>();
  private touchedParties = new Set<string>();

  private readonly db: Knex;
  private readonly repo: ReputationChainRepository;
  readonly chain: ChainConfig;
  private readonly provider: ChainProvider;
  private readonly resolver: RegistrationResolver;
  private readonly evidence: EvidenceCollector;
  private readonly logger: Logger;
  private readonly now: () => Date;

  constructor(options: ChainIndexerOptions) {
    this.db = options.db;
    this.repo = options.repo;
    this.chain = options.chain;
    this.provider = options.provider;
    this.resolver = options.resolver;
    this.evidence = options.evidence;
    this.logger = options.logger;
    this.now = options.now;
  }

  /** Indexes every contract up to the confirmed head (or `maxRanges` ranges), then resolves registrations. */
  async sync(options: IndexerOptions = {}): Promise<SyncResult> {
    const name = this.chain.name;
    this.touchedAgents = new Set();
    this.touchedParties = new Set();
    try {
      const chainId = Number(await this.provider.send('eth_chainId', []));
      if (chainId !== this.chain.chainId) throw new Error(`RPC reports chain id ${chainId}, configured ${this.chain.chainId}`);
      const head = await this.provider.getBlockNumber();
      const safeBlock = head - this.chain.confirmations;
      let ranges = 0;
      let caughtUp = true;
      for (const [kind, contract] of this.contracts()) {
        let last = (await this.repo.getCheckpoint({ chain: name, contract })) ?? this.chain.startBlock - 1;
        while (last < safeBlock) {
          if (options.maxRanges !== undefined && ranges >= options.maxRanges) {
            caughtUp = false;
            break;
          }
          const to = Math.min(safeBlock, last + this.chain.maxBlockRange);
          const committed = await this.indexRange(kind, contract, last + 1, to);
          ranges++;
          // Another worker advanced this checkpoint meanwhile: continue from where it is now.
          last = committed ?? (await this.repo.getCheckpoint({ chain: name, contract })) ?? last;
        }
        if (last < safeBlock) caughtUp = false;
      }
      const now = this.now();
      await this.repo.recordSync({
        chain: name,
        head_block: head,
        safe_block: Math.max(safeBlock, 0),
        ...(caughtUp ? { last_synced_at: now, last_error: null, last_error_at: null } : {}),
        now,
      });
      const resolved = await this.resolveRegistrations();
      return { chain: name, head, safeBlock, ranges, caughtUp, resolved, touchedAgents: [...this.touchedAgents], touchedParties: [...this.touchedParties] };
    } catch (err) {
      const message = (err as Error).message?.slice(0, 500) ?? 'unknown error';
      const now = this.now();
      await this.repo.recordSync({ chain: name, last_error: message, last_error_at: now, now }).catch(() => undefined);
      this.logger.warn({ chain: name, err: message }, 'chain index sync failed');
      throw err;
    } finally {
      this.blockTimes.clear();
    }
  }

  private contracts(): Array<[ContractKind, string]> {
    return [
      ['identity', this.chain.identityRegistry],
      ['reputation', this.chain.reputationRegistry],
      ['usdc', this.chain.usdc],
    ];
  }

  /**
   * Reads [from, to] for one contract (RPC first, outside any transaction), then writes rows and the
   * checkpoint in one transaction. Returns the new checkpoint, or null when the checkpoint had moved.
   */
  private async indexRange(kind: ContractKind, contract: string, from: number, to: number): Promise<number | null> {
    const prepared =
      kind === 'identity'
        ? await this.readIdentity(contract, from, to)
        : kind === 'reputation'
          ? await this.readReputation(contract, from, to)
          : await this.readPayments(contract, from, to);
    const now = this.now();
    return this.db.transaction(async (trx) => {
      const current = await this.repo.lockCheckpoint({ chain: this.chain.name, contract, kind, initial: this.chain.startBlock - 1 }, trx);
      if (current !== from - 1) return null;
      await prepared(trx, now);
      await this.repo.setCheckpoint({ chain: this.chain.name, contract, lastBlock: to, now }, trx);
      return to;
    });
  }

  private async logs(address: string, from: number, to: number, topics?: Array<string | string[] | null>) {
    const logs = await this.provider.getLogs({ address, fromBlock: from, toBlock: to, topics });
    return [...logs].sort((a, b) => a.blockNumber - b.blockNumber || a.index - b.index);
  }

  private async blockTime(blockNumber: number): Promise<Date> {
    const cached = this.blockTimes.get(blockNumber);
    if (cached) return cached;
    const block = await this.provider.getBlock(blockNumber);
    if (!block) throw new Error(`block ${blockNumber} not available from RPC`);
    const at = new Date(block.timestamp * 1000);
    if (this.blockTimes.size > 10_000) this.blockTimes.clear();
    this.blockTimes.set(blockNumber, at);
    return at;
  }

  private async readIdentity(contract: string, from: number, to: number) {
    const logs = await this.logs(contract, from, to, [[TOPICS.Registered, TOPICS.URIUpdated, TOPICS.MetadataSet, TOPICS.Transfer]]);
    const events: Array<{ log: ethers.Log; decoded: IdentityEvent; at: Date }> = [];
    for (const log of logs) {
      const decoded = decodeIdentityLog(log);
      if (!decoded) continue;
      events.push({ log, decoded, at: await this.blockTime(log.blockNumber) });
    }
    const chain = this.chain.name;
    return async (trx: Knex.Transaction, now: Date) => {
      for (const { log, decoded, at } of events) {
        const fresh = await this.repo.insertEvent(
          {
            chain,
            tx_hash: log.transactionHash.toLowerCase(),
            log_index: log.index,
            block_number: log.blockNumber,
            contract,
            event: decoded.kind,
            token_id: decoded.tokenId,
            payload: decoded,
            block_time: at,
          },
          trx,
        );
        if (!fresh) continue; // already applied by an earlier run
        const tokenId = decoded.tokenId;
        this.touchedAgents.add(`${chain}:${tokenId}`);
        if (decoded.kind === 'Transfer') this.touchedParties.add(decoded.from);
        switch (decoded.kind) {
          case 'Registered':
            await this.repo.ensureAgent({ chain, token_id: tokenId, registry: contract, owner: decoded.owner, now }, trx);
            await this.repo.registerAgent({ chain, token_id: tokenId, owner: decoded.owner, uri: decoded.uri, block: log.blockNumber, at, now }, trx);
            break;
          case 'Transfer':
            await this.repo.ensureAgent({ chain, token_id: tokenId, registry: contract, owner: decoded.to, now }, trx);
            await this.repo.setOwner({ chain, token_id: tokenId, owner: decoded.to, now }, trx);
            break;
          case 'URIUpdated':
            await this.repo.ensureAgent({ chain, token_id: tokenId, registry: contract, owner: decoded.updatedBy, now }, trx);
            await this.repo.setUri({ chain, token_id: tokenId, uri: decoded.uri, now }, trx);
            break;
          case 'MetadataSet':
            await this.repo.ensureAgent({ chain, token_id: tokenId, registry: contract, owner: ethers.ZeroAddress, now }, trx);
            await this.repo.setMetadata(
              { chain, token_id: tokenId, key: decoded.key, value: decoded.value, agentWallet: agentWalletFrom(decoded.key, decoded.value), now },
              trx,
            );
            break;
        }
      }
    };
  }

  private async readReputation(contract: string, from: number, to: number) {
    const logs = await this.logs(contract, from, to, [[TOPICS.NewFeedback, TOPICS.FeedbackRevoked]]);
    const events: Array<{ log: ethers.Log; decoded: ReputationEvent; at: Date }> = [];
    for (const log of logs) {
      const decoded = decodeReputationLog(log);
      if (decoded) events.push({ log, decoded, at: await this.blockTime(log.blockNumber) });
    }
    const chain = this.chain.name;
    return async (trx: Knex.Transaction) => {
      for (const { log, decoded, at } of events) {
        this.touchedAgents.add(`${chain}:${decoded.tokenId}`);
        if (decoded.kind === 'NewFeedback') {
          await this.repo.insertFeedback(
            {
              chain,
              token_id: decoded.tokenId,
              client_address: decoded.client,
              feedback_index: decoded.feedbackIndex,
              value: decoded.value,
              value_decimals: decoded.valueDecimals,
              tag1: decoded.tag1.slice(0, 200),
              tag2: decoded.tag2.slice(0, 200),
              endpoint: decoded.endpoint.slice(0, 2000),
              feedback_uri: decoded.feedbackUri.slice(0, 2000),
              block_number: log.blockNumber,
              tx_hash: log.transactionHash.toLowerCase(),
              given_at: at,
            },
            trx,
          );
        } else {
          await this.repo.revokeFeedback({ chain, token_id: decoded.tokenId, client_address: decoded.client, feedback_index: decoded.feedbackIndex, at }, trx);
        }
      }
    };
  }

  /**
   * Candidate payments: each AuthorizationUsed names the payer (EIP-3009 `from`); the USDC Transfer from that
   * payer in the same transaction is the payment. Receipts are read only for transactions that carry an
   * authorization, so plain USDC transfer volume never has to be scanned.
   */
  private async readPayments(contract: string, from: number, to: number) {
    const authLogs = await this.logs(contract, from, to, [TOPICS.AuthorizationUsed]);
    const byTx = new Map<string, Array<{ authorizer: string; nonce: string }>>();
    for (const log of authLogs) {
      const auth = decodeAuthorizationUsed(log);
      if (!auth) continue;
      const key = log.transactionHash.toLowerCase();
      byTx.set(key, [...(byTx.get(key) ?? []), auth]);
    }
    const rows: CandidatePaymentRow[] = [];
    const txs = [...byTx.keys()];
    for (let i = 0; i < txs.length; i += RECEIPT_CONCURRENCY) {
      await Promise.all(
        txs.slice(i, i + RECEIPT_CONCURRENCY).map(async (txHash) => {
          const receipt = await this.provider.getTransactionReceipt(txHash);
          if (!receipt || receipt.status !== 1) return;
          const transfers = receipt.logs
            .filter((l) => l.address.toLowerCase() === contract)
            .map((l) => decodeErc20Transfer(l))
            .filter((t): t is NonNullable<typeof t> => t !== null);
          const used = new Set<number>();
          const at = await this.blockTime(receipt.blockNumber);
          for (const auth of byTx.get(txHash)!) {
            const transfer = transfers.find((t) => t.from === auth.authorizer && !used.has(t.logIndex));
            if (!transfer) continue;
            used.add(transfer.logIndex);
            rows.push({
              chain: this.chain.name,
              tx_hash: txHash,
              log_index: transfer.logIndex,
              token: contract,
              payer: transfer.from,
              payee: transfer.to,
              value: transfer.value,
              nonce: auth.nonce,
              block_number: receipt.blockNumber,
              block_time: at,
            });
          }
        }),
      );
    }
    return async (trx: Knex.Transaction) => {
      const inserted = await this.repo.insertPayments({ rows }, trx);
      for (const p of inserted) {
        this.touchedParties.add(p.payer);
        this.touchedParties.add(p.payee);
      }
    };
  }

  /** Reads pending registration files (and refreshes old evidence), outside any indexing transaction. */
  async resolveRegistrations(): Promise<number> {
    const now = this.now();
    const agents = await this.repo.agentsToResolve({
      chain: this.chain.name,
      maxAttempts: REGISTRATION_MAX_ATTEMPTS,
      retryBefore: new Date(now.getTime() - REGISTRATION_RETRY_MS),
      evidenceBefore: new Date(now.getTime() - EVIDENCE_MAX_AGE_MS),
      limit: RESOLVE_BATCH,
    });
    let resolved = 0;
    for (const agent of agents) {
      const result = await this.resolver.resolve(agent.agent_uri);
      const evidence = result.info ? await this.evidence.collect(result.info) : null;
      const saved = await this.repo.saveResolution({
        chain: agent.chain,
        token_id: agent.token_id,
        uri: agent.agent_uri,
        status: result.status,
        registration: result.info ? { ...result.info, metadata_kind: result.kind } : null,
        error: result.error,
        evidence,
        now: this.now(),
      });
      if (saved) {
        resolved++;
        this.touchedAgents.add(`${agent.chain}:${agent.token_id}`);
      }
      if (result.status === 'error') this.logger.info({ chain: agent.chain, agent: agent.token_id, err: result.error }, 'agent registration not resolved');
    }
    return resolved;
  }
}

/** ERC-8004 reserves the `agentWallet` metadata key; its value is the 20-byte address (raw or ABI-encoded). */
export function agentWalletFrom(key: string, value: string): string | null {
  if (key !== 'agentWallet') return null;
  const bytes = ethers.getBytes(value);
  if (bytes.length === 20) return ethers.hexlify(bytes).toLowerCase();
  if (bytes.length === 32 && bytes.slice(0, 12).every((b) => b === 0)) return ethers.hexlify(bytes.slice(12)).toLowerCase();
  return null;
}
