// Shared helpers for the reputation tests: table reset (before any harness starts indexing), a chains file
// pointing at a local chain, a hand-written HttpFetcher fake, and operator/wallet fixtures in the database.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import knexFactory from 'knex';
import type { Knex } from 'knex';
import { TEST_DATABASE_URL } from '../support/env';
import { chainsFileEntry, type LocalChain } from '../fixtures/contracts/localChain';
import { FetchRefusedError, type FetchOptions, type FetchResult, type HttpFetcher } from '../../server/chain/safeFetch';

export const REPUTATION_TABLES = [
  'accounts',
  'known_addresses',
  'chain_checkpoints',
  'chain_sync_state',
  'erc8004_events',
  'erc8004_agents',
  'erc8004_feedback',
  'candidate_payments',
  'reputation_subjects',
  'reputation_chain_scores',
  'reputation_agent_scores',
];

/** Truncates with a short-lived connection, so no harness (and no indexer job) is running meanwhile. */
export async function resetReputationTables(): Promise<void> {
  const db = knexFactory({ client: 'pg', connection: TEST_DATABASE_URL });
  try {
    await db.raw(`truncate ${REPUTATION_TABLES.map((t) => `"${t}"`).join(', ')} restart identity cascade`);
  } finally {
    await db.destroy();
  }
}

export function writeChainsFile(chain: LocalChain, overrides: Record<string, unknown> = {}, rpcUrl = chain.url): string {
  const file = path.join(os.tmpdir(), `kya-chains-${crypto.randomBytes(4).toString('hex')}.json`);
  fs.writeFileSync(file, JSON.stringify([chainsFileEntry(chain, { rpcUrl, maxBlockRange: 5, pollIntervalSeconds: 3600, ...overrides })]));
  return file;
}

/** Serves canned responses by exact URL; anything else fails like an unresolvable host. */
export class FakeFetcher implements HttpFetcher {
  readonly requested: string[] = [];
  constructor(private readonly routes: Record<string, { status?: number; body: string | object }>) {}
  async fetch(url: string, _options?: FetchOptions): Promise<FetchResult> {
    this.requested.push(url);
    const route = this.routes[url];
    if (!route) throw new FetchRefusedError('dns', 'cannot resolve host');
    const body = Buffer.from(typeof route.body === 'string' ? route.body : JSON.stringify(route.body));
    return { status: route.status ?? 200, contentType: 'application/json', body, finalUrl: url };
  }
}

export async function createOperator(db: Knex, level: 'none' | 'wallet_claimed' | 'kyc_verified'): Promise<string> {
  const [row] = await db('accounts')
    .insert({ kind: 'operator', name: `Operator ${level}`, verification_level: level, kyc_status: level === 'kyc_verified' ? 'verified' : 'none' })
    .returning<Array<{ id: string }>>('id');
  return row.id;
}

export async function claimWallet(db: Knex, accountId: string, address: string): Promise<void> {
  await db('operator_wallets').insert({ account_id: accountId, network: 'evm', address: address.toLowerCase() });
}

export async function captureWallet(db: Knex, accountId: string, address: string, options: { count: number; firstSeen: Date; lastSeen: Date }): Promise<void> {
  const [credential] = await db('credentials')
    .insert({
      account_id: accountId,
      token_hash: crypto.randomBytes(32).toString('hex'),
      prefix: 'opc_test',
      source: 'api',
      expires_at: new Date('2030-01-01'),
    })
    .returning<Array<{ id: string }>>('id');
  await db('wallet_captures').insert({
    credential_id: credential.id,
    account_id: accountId,
    network: 'evm',
    wallet_address: address.toLowerCase(),
    transaction_count: options.count,
    first_seen_at: options.firstSeen,
    last_seen_at: options.lastSeen,
  });
}

export const unix = (iso: string) => Math.floor(new Date(iso).getTime() / 1000);
