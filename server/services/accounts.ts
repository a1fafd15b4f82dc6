// Merchant accounts and their API keys: creation, rotation, tier/limit changes, and authentication of a
// presented key. Authentication is served from the in-process identity cache keyed by the key's SHA-256; every
// change to an account or its keys goes through identityChanged (every instance) before the call returns.
import type { Knex } from 'knex';
import { ApiError, badRequest } from '../../shared/errors';
import type { Config } from '../config';
import type { Tier } from '../../shared/types';
import { displayPrefix, newSecret, sha256Hex } from '../crypto';
import type { AccountRow, AccountsRepository, AccountPatch } from '../repositories/accounts';
import type { ApiKeysRepository } from '../repositories/apiKeys';
import type { IdentityCache } from './identity';
import type { WriteBehind } from '../db/writeBehind';

/** Endpoints an account can have disabled (a disabled endpoint answers 402 payment_required). */
export const ENDPOINTS = ['assess', 'sessions', 'credentials', 'wallets', 'reputation'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];
export const TIERS: readonly Tier[] = ['free', 'paid', 'enterprise'];

export const API_KEY_PREFIX = 'as_live_';
const KEY_USE_EVERY_MS = 60_000;
/** Bound on the memory of when each key was last noted (one entry per key in use). */
const MAX_NOTED_KEYS = 100_000;

/** What a request knows about its authenticated caller. */
export interface Principal {
  accountId: string;
  keyId: string;
  name: string;
  displayName: string;
  tier: Tier;
  status: 'active' | 'cancelled';
  disabledEndpoints: readonly string[];
  /** null = unlimited. */
  quota: number | null;
  /** null = unlimited. */
  rps: number | null;
  sanctionsFreshnessDays: number;
}

export interface AccountView {
  id: string;
  name: string;
  display_name: string | null;
  tier: Tier;
  status: string;
  quota: number | null;
  rps: number | null;
  quota_override: number | null;
  rps_override: number | null;
  disabled_endpoints: string[];
  /** last_used_at: the last successful authentication with the key, to the minute (written behind). */
  keys: Array<{ id: string; prefix: string; created_at: string; revoked_at: string | null; last_used_at: string | null }>;
  created_at: string;
}

/** What the verify page shows of a merchant: its name, support email and logo (null: not set). */
export interface Branding {
  display_name: string | null;
  support_email: string | null;
  logo_url: string | null;
}

export interface AccountsServiceOptions {
  db: Knex;
  accounts: AccountsRepository;
  keys: ApiKeysRepository;
  identity: IdentityCache;
  config: Config;
  now: () => Date;
  /** last_used_at of API keys, written behind the request (key id → time of use). */
  keyUses: WriteBehind<string, Date>;
}

export class AccountsService {
  private readonly db: Knex;
  private readonly accounts: AccountsRepository;
  private readonly keys: ApiKeysRepository;
  private readonly identity: IdentityCache;
  private readonly config: Config;
  private readonly now: () => Date;
  private readonly keyUses: WriteBehind<string, Date>;
  /** When each key's use was last handed to keyUses (ms): a key is noted at most once per KEY_USE_EVERY_MS. */
  private readonly keyUseNotedAt = new Map<string, number>();

  constructor(options: AccountsServiceOptions) {
    this.db = options.db;
    this.accounts = options.accounts;
    this.keys = options.keys;
    this.identity = options.identity;
    this.config = options.config;
    this.now = options.now;
    this.keyUses = options.keyUses;
  }

  limitsFor(account: Pick<AccountRow, 'tier' | 'quota_override' | 'rps_override'>): { quota: number | null; rps: number | null } {
    const base = this.config.tiers[account.tier];
    // Enterprise is unlimited whatever the overrides say; overrides tune Free and Paid.
    if (account.tier === 'enterprise') return { quota: null, rps: null };
    return { quota: account.quota_override ?? base.quota, rps: account.rps_override ?? base.rps };
  }

  toPrincipal(account: AccountRow, keyId: string): Principal {
    const limits = this.limitsFor(account);
    return {
      accountId: account.id,
      keyId,
      name: account.name,
      displayName: account.display_name ?? account.name,
      tier: account.tier,
      status: account.status,
      disabledEndpoints: account.disabled_endpoints ?? [],
      quota: limits.quota,
      rps: limits.rps,
      sanctionsFreshnessDays: account.sanctions_freshness_days ?? this.config.sanctions.freshnessDays,
    };
  }

  /**
   * Resolves a presented API key. Lookup is by SHA-256 of the key (an index probe, not a comparison of
   * secrets), so "no such key" and "wrong key" take the same path and produce the same answer.
   */
  async authenticate(presented: string): Promise<Principal | null> {
    if (!presented.startsWith(API_KEY_PREFIX) || presented.length > 128) return null;
    const hash = sha256Hex(presented);
    const cached = this.identity.principal(hash);
    let principal: Principal | null;
    if (cached !== undefined) principal = cached || null;
    else {
      const generation = this.identity.snapshot();
      const found = await this.keys.findActiveByHash({ keyHash: hash });
      principal = found ? this.toPrincipal(found.account, found.key.id) : null;
      // Unknown keys are remembered too (for the cache TTL) so guessing does not cost a query each time.
      this.identity.rememberPrincipal(hash, principal ?? false, generation);
    }
    if (principal) this.noteKeyUse(principal.keyId);
    return principal;
  }

  /**
   * Records a successful use for last_used_at: written behind, and noted at most once a minute per key, so a
   * key used thousands of times a second costs one write a minute (the column is accurate to the minute).
   */
  private noteKeyUse(keyId: string): void {
    const at = this.now().getTime();
    const last = this.keyUseNotedAt.get(keyId);
    if (last !== undefined && at - last < KEY_USE_EVERY_MS) return;
    if (this.keyUseNotedAt.size >= MAX_NOTED_KEYS) this.keyUseNotedAt.clear();
    this.keyUseNotedAt.set(keyId, at);
    this.keyUses.set(keyId, new Date(at));
  }

  /** Writes the noted key uses now instead of at the next tick. */
  flushKeyUses(): Promise<void> {
    return this.keyUses.flush();
  }

  async create(input: { name: string; tier: Tier; quota?: number; rps?: number; displayName?: string }): Promise<{ account: AccountView; apiKey: string }> {
    const problems = [];
    if (!input.name?.trim()) problems.push({ field: 'name', message: 'name is required' });
    if (!TIERS.includes(input.tier)) problems.push({ field: 'tier', message: `tier must be one of ${TIERS.join(', ')}` });
    if (problems.length) throw badRequest(problems);
    return this.db.transaction(async (trx) => {
      const account = await this.accounts.insert(
        {
          account: {
            name: input.name.trim(),
            display_name: input.displayName ?? null,
            tier: input.tier,
            quota_override: input.quota ?? null,
            rps_override: input.rps ?? null,
          },
        },
        trx,
      );
      const apiKey = await this.issueKey(account.id, trx);
      return { account: await this.view(account.id, trx), apiKey };
    });
  }

  async list(): Promise<AccountView[]> {
    const rows = await this.accounts.list({ kind: 'merchant' });
    return Promise.all(rows.map((r) => this.view(r.id)));
  }

  async show(id: string): Promise<AccountView> {
    return this.view(id);
  }

  /** Replaces every active key with one new key; the old ones stop working immediately, on every instance. */
  async rotateKey(id: string): Promise<{ account_id: string; api_key: string }> {
    const apiKey = await this.db.transaction(async (trx) => {
      await this.mustFind(id, trx, true);
      await this.keys.revokeAllForAccount({ accountId: id }, trx);
      return this.issueKey(id, trx);
    });
    await this.invalidate(id);
    return { account_id: id, api_key: apiKey };
  }

  /** An additional active key (Enterprise only). */
  async addKey(id: string): Promise<{ account_id: string; api_key: string }> {
    const apiKey = await this.db.transaction(async (trx) => {
      const account = await this.mustFind(id, trx, true);
      if (account.tier !== 'enterprise') {
        throw new ApiError('conflict', 'Only Enterprise accounts may hold more than one active API key; use rotate-key.');
      }
      return this.issueKey(id, trx);
    });
    return { account_id: id, api_key: apiKey };
  }

  /**
   * Revokes one key; it stops working at once, on every instance. The last active key is never revoked (the
   * merchant would lock itself out): the account row lock serialises concurrent revocations, so two of them
   * cannot each see another key left and together remove both.
   */
  async revokeKey(id: string, keyId: string): Promise<{ account_id: string; key_id: string; prefix: string; revoked_at: string }> {
    const revoked = await this.db.transaction(async (trx) => {
      await this.mustFind(id, trx, true);
      const active = /^[0-9a-f-]{36}$/i.test(keyId) ? await this.keys.listForAccount({ accountId: id, activeOnly: true }, trx) : [];
      if (!active.some((k) => k.id === keyId)) throw new ApiError('not_found', `No active API key ${keyId} on this account.`);
      if (active.length === 1) throw new ApiError('conflict', 'This is the only active API key of the account, so it cannot be revoked; rotate it instead.');
      return (await this.keys.revoke({ accountId: id, keyId }, trx))!;
    });
    await this.invalidate(id);
    return { account_id: id, key_id: revoked.id, prefix: revoked.prefix, revoked_at: revoked.revoked_at!.toISOString() };
  }

  async cancel(id: string): Promise<AccountView> {
    return this.patch(id, { status: 'cancelled', cancelled_at: this.now() });
  }

  async set(
    id: string,
    changes: { displayName?: string; tier?: Tier; quota?: number | null; rps?: number | null; sanctionsFreshnessDays?: number | null },
  ): Promise<AccountView> {
    const patch: AccountPatch = {};
    if (changes.displayName !== undefined) patch.display_name = changes.displayName;
    if (changes.tier !== undefined) {
      if (!TIERS.includes(changes.tier)) throw badRequest([{ field: 'tier', message: `tier must be one of ${TIERS.join(', ')}` }]);
      if (changes.tier !== 'enterprise') {
        // One active key outside Enterprise: never silently revoke a key a merchant may be using.
        const active = await this.keys.listForAccount({ accountId: (await this.mustFind(id)).id, activeOnly: true });
        if (active.length > 1) {
          throw new ApiError(
            'conflict',
            `The account has ${active.length} active API keys; only Enterprise may hold several. Run rotate-key first (it leaves one).`,
          );
        }
      }
      patch.tier = changes.tier;
    }
    if (changes.quota !== undefined) patch.quota_override = changes.quota;
    if (changes.rps !== undefined) patch.rps_override = changes.rps;
    if (changes.sanctionsFreshnessDays !== undefined) patch.sanctions_freshness_days = changes.sanctionsFreshnessDays;
    if (Object.keys(patch).length === 0) throw badRequest([{ field: 'changes', message: 'nothing to change' }]);
    return this.patch(id, patch);
  }

  async setEndpoint(id: string, endpoint: string, enabled: boolean): Promise<AccountView> {
    if (!(ENDPOINTS as readonly string[]).includes(endpoint)) {
      throw badRequest([{ field: 'endpoint', message: `endpoint must be one of ${ENDPOINTS.join(', ')}` }]);
    }
    const account = await this.mustFind(id);
    const disabled = new Set(account.disabled_endpoints);
    if (enabled) disabled.delete(endpoint);
    else disabled.add(endpoint);
    return this.patch(id, { disabled_endpoints: [...disabled].sort() });
  }

  async branding(id: string): Promise<Branding> {
    const { display_name, support_email, logo_url } = await this.mustFind(id);
    return { display_name, support_email, logo_url };
  }

  /** Replaces the verify page branding; every instance sees the new display name on its next request. */
  async setBranding(id: string, branding: Branding): Promise<void> {
    await this.accounts.update({ id, patch: branding });
    await this.invalidate(id);
  }

  /** Drops cached principals of this account here and on every other instance (after the change committed). */
  async invalidate(accountId: string): Promise<void> {
    await this.identity.changed({ accountId });
  }

  private async patch(id: string, patch: AccountPatch): Promise<AccountView> {
    await this.mustFind(id);
    await this.accounts.update({ id, patch });
    await this.invalidate(id);
    return this.view(id);
  }

  private async issueKey(accountId: string, trx: Knex.Transaction): Promise<string> {
    const apiKey = newSecret(API_KEY_PREFIX, 32);
    await this.keys.insert({ accountId, keyHash: sha256Hex(apiKey), prefix: displayPrefix(apiKey) }, trx);
    return apiKey;
  }

  private async mustFind(id: string, trx?: Knex.Transaction, forUpdate = false): Promise<AccountRow> {
    const account = /^[0-9a-f-]{36}$/i.test(id) ? await this.accounts.findById({ id, forUpdate }, trx) : undefined;
    if (!account || account.kind !== 'merchant') throw new ApiError('not_found', `No merchant account ${id}`);
    return account;
  }

  private async view(id: string, trx?: Knex.Transaction): Promise<AccountView> {
    const account = await this.mustFind(id, trx);
    const keys = await this.keys.listForAccount({ accountId: id }, trx);
    const limits = this.limitsFor(account);
    return {
      id: account.id,
      name: account.name,
      display_name: account.display_name,
      tier: account.tier,
      status: account.status,
      quota: limits.quota,
      rps: limits.rps,
      quota_override: account.quota_override,
      rps_override: account.rps_override,
      disabled_endpoints: account.disabled_endpoints,
      keys: keys.map((k) => ({
        id: k.id,
        prefix: k.prefix,
        created_at: k.created_at.toISOString(),
        revoked_at: k.revoked_at ? k.revoked_at.toISOString() : null,
        last_used_at: k.last_used_at ? k.last_used_at.toISOString() : null,
      })),
      created_at: account.created_at.toISOString(),
    };
  }
}
