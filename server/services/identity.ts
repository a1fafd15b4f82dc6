// Hot identity state in process memory (wallet → operator, operator → verification state and linked wallets,
// credential → state, API key → account) and its invalidation contract: every committed change calls
// `identityChanged`, which drops the affected entries here and, over pub/sub, on every other instance.
// Entries older than the configured TTL are never used, which bounds staleness when a message is lost.
import { LRUCache } from 'lru-cache';
import type { Logger } from '../logger';
import type { CredentialRow } from '../repositories/credentials';
import type { LookupInput, LookupResult, OperatorLookupRepository, OperatorRow, WalletRef } from '../repositories/operatorLookup';
import type { PubSub } from '../stores/kv';
import type { Principal } from './accounts';

export const IDENTITY_CHANNEL = 'invalidate:identity';

/**
 * What a committed change touched. `operatorId` and `accountId` name the same id space (operators and
 * merchants are both accounts); either drops everything cached about that account: its verification state,
 * its linked wallets' owner entries, its credentials and its API keys. `wallets`: wallets whose owner may have
 * changed (a new claim or capture of a wallet nobody was known to own). `credentialIds`: credentials revoked.
 */
export interface IdentityChange {
  operatorId?: string;
  /** Many operators at once (e.g. a re-screening batch); each is treated like `operatorId`. */
  operatorIds?: string[];
  accountId?: string;
  wallets?: WalletRef[];
  credentialIds?: string[];
}

/** The one call every state-changing path makes after its transaction commits. Never throws. */
export type IdentityChanged = (change: IdentityChange) => Promise<void>;

interface Entry<T> {
  value: T;
  /** Clock time (ms) at which the value was read from the database. */
  at: number;
}

function walletKey(w: WalletRef): string {
  return `${w.network}:${w.address}`;
}

export interface IdentityCacheOptions {
  repo: OperatorLookupRepository;
  pubsub: PubSub;
  logger: Logger;
  /** How long a looked-up entry is served without asking the database (IDENTITY_CACHE_TTL_MS; 0 = no cache). */
  ttlMs: number;
  /** Entries per cache (IDENTITY_CACHE_MAX). */
  max: number;
  nowMs: () => number;
}

export class IdentityCache {
  private readonly owners: LRUCache<string, Entry<string | null>>;
  private readonly operators: LRUCache<string, Entry<OperatorRow>>;
  private readonly credentials: LRUCache<string, Entry<CredentialRow | null>>;
  private readonly principals: LRUCache<string, Entry<Principal | false>>;
  /** Addresses known to be in known_addresses: their assess needs no insert. Never stale (rows are not deleted). */
  private readonly known: LRUCache<string, true>;
  /** account id → keys ('w:'+wallet, 'c:'+token hash, 'p:'+API key hash) cached on its behalf, so one id drops them all. */
  private readonly byAccount = new Map<string, Set<string>>();
  private readonly credentialHashes = new Map<string, string>();
  /** Bumped by every invalidation: a lookup that was in flight across one does not fill the cache. */
  private generation = 0;

  private readonly repo: OperatorLookupRepository;
  private readonly pubsub: PubSub;
  private readonly logger: Logger;
  private readonly options: { ttlMs: number; max: number; nowMs: () => number };

  constructor(options: IdentityCacheOptions) {
    this.repo = options.repo;
    this.pubsub = options.pubsub;
    this.logger = options.logger;
    this.options = { ttlMs: options.ttlMs, max: options.max, nowMs: options.nowMs };
    const max = options.max;
    this.owners = new LRUCache({
      max,
      dispose: (entry, key) => {
        if (entry.value) this.unindex(entry.value, 'w:' + key);
      },
    });
    this.operators = new LRUCache({ max });
    this.credentials = new LRUCache({
      max,
      dispose: (entry, key) => {
        if (!entry.value) return;
        this.unindex(entry.value.account_id, 'c:' + key);
        if (this.credentialHashes.get(entry.value.id) === key) this.credentialHashes.delete(entry.value.id);
      },
    });
    this.principals = new LRUCache({
      max,
      dispose: (entry, key) => {
        if (entry.value) this.unindex(entry.value.accountId, 'p:' + key);
      },
    });
    this.known = new LRUCache({ max });
  }

  async start(): Promise<void> {
    await this.pubsub.subscribe(IDENTITY_CHANNEL, (message) => this.receive(message));
    // Invalidations published while our subscription was down are lost: forget everything cached.
    this.pubsub.onResubscribe?.(() => this.clear());
  }

  /** Drops every cached entry (the known-address set stays: it cannot go stale). */
  clear(): void {
    this.generation++;
    this.owners.clear();
    this.operators.clear();
    this.credentials.clear();
    this.principals.clear();
  }

  /**
   * Publishes a committed change: drops the entries here at once, then on every other instance. A failed
   * publish is logged, not thrown (the change is committed); other instances then see it within the TTL.
   */
  readonly changed: IdentityChanged = async (change) => {
    this.drop(change);
    try {
      await this.pubsub.publish(IDENTITY_CHANNEL, JSON.stringify(change));
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'could not broadcast an identity change; other instances see it within the cache TTL');
    }
  };

  private receive(message: string) {
    let change: IdentityChange;
    try {
      change = JSON.parse(message) as IdentityChange;
    } catch {
      // Unreadable: the only safe reading is "anything may have changed".
      this.clear();
      return;
    }
    this.drop(change);
  }

  private drop(change: IdentityChange) {
    this.generation++;
    const ids = [change.operatorId, change.accountId, ...(Array.isArray(change.operatorIds) ? change.operatorIds : [])];
    for (const id of ids) {
      if (typeof id !== 'string') continue;
      this.operators.delete(id);
      for (const key of [...(this.byAccount.get(id) ?? [])]) {
        if (key.startsWith('w:')) this.owners.delete(key.slice(2));
        else if (key.startsWith('c:')) this.credentials.delete(key.slice(2));
        else this.principals.delete(key.slice(2));
      }
      this.byAccount.delete(id);
    }
    for (const w of Array.isArray(change.wallets) ? change.wallets : []) this.owners.delete(walletKey(w));
    for (const id of Array.isArray(change.credentialIds) ? change.credentialIds : []) {
      const hash = this.credentialHashes.get(id);
      if (hash) this.credentials.delete(hash);
    }
  }

  private index(accountId: string, key: string) {
    let keys = this.byAccount.get(accountId);
    if (!keys) this.byAccount.set(accountId, (keys = new Set()));
    keys.add(key);
  }

  private unindex(accountId: string, key: string) {
    const keys = this.byAccount.get(accountId);
    if (!keys) return;
    keys.delete(key);
    if (!keys.size) this.byAccount.delete(accountId);
  }

  private fresh<T>(entry: Entry<T> | undefined): entry is Entry<T> {
    return entry !== undefined && this.options.nowMs() - entry.at < this.options.ttlMs;
  }

  // ---- API keys ------------------------------------------------------------------------------------------

  /** undefined: not cached (or too old); false: known not to be an active key. */
  principal(keyHash: string): Principal | false | undefined {
    const entry = this.principals.get(keyHash);
    return this.fresh(entry) ? entry.value : undefined;
  }

  /** Fills a principal read at `generation` (see `snapshot`); skipped when a change arrived meanwhile. */
  rememberPrincipal(keyHash: string, value: Principal | false, generation: number): void {
    if (generation !== this.generation || this.options.ttlMs <= 0) return;
    this.principals.set(keyHash, { value, at: this.options.nowMs() });
    if (value) this.index(value.accountId, 'p:' + keyHash);
  }

  /** The invalidation generation, taken before a database read whose result will be cached. */
  snapshot(): number {
    return this.generation;
  }

  // ---- assess lookup -------------------------------------------------------------------------------------

  /** The assess lookup, answered from memory when every part is cached and fresh; else the one statement. */
  async lookup(input: LookupInput): Promise<LookupResult> {
    const hit = this.fromCache(input);
    if (hit) return hit;
    const generation = this.generation;
    const record = input.mode !== 'wallet' || input.refresh || !this.known.has(walletKey(input.wallet));
    const result = await this.repo.lookup(input.mode === 'wallet' ? { ...input, record } : input);
    if (input.mode === 'wallet') this.known.set(walletKey(input.wallet), true);
    if (generation === this.generation && this.options.ttlMs > 0) this.fill(input, result);
    return result;
  }

  private owner(wallet: WalletRef): { hit: boolean; operator: OperatorRow | null } {
    const entry = this.owners.get(walletKey(wallet));
    if (!this.fresh(entry)) return { hit: false, operator: null };
    if (entry.value === null) return { hit: true, operator: null };
    const op = this.operators.get(entry.value);
    return this.fresh(op) ? { hit: true, operator: op.value } : { hit: false, operator: null };
  }

  private fromCache(input: LookupInput): LookupResult | null {
    let signer: OperatorRow | null = null;
    if (input.signer) {
      const s = this.owner(input.signer);
      if (!s.hit) return null;
      signer = s.operator;
    }
    if (input.mode === 'wallet') {
      // A refresh has a side effect (refresh_requested_at); an address not yet recorded needs its insert.
      if (input.refresh || !this.known.has(walletKey(input.wallet))) return null;
      const c = this.owner(input.wallet);
      if (!c.hit) return null;
      return { claimed: c.operator, signer, credential: null, newAddress: false };
    }
    const entry = this.credentials.get(input.tokenHash);
    if (!this.fresh(entry)) return null;
    if (!entry.value) return { claimed: null, signer, credential: null, newAddress: false };
    const op = this.operators.get(entry.value.account_id);
    if (!this.fresh(op)) return null;
    return { claimed: op.value, signer, credential: entry.value, newAddress: false };
  }

  private fill(input: LookupInput, result: LookupResult) {
    const at = this.options.nowMs();
    const setOwner = (wallet: WalletRef, op: OperatorRow | null) => {
      const key = walletKey(wallet);
      this.owners.set(key, { value: op?.account_id ?? null, at });
      if (op) {
        this.operators.set(op.account_id, { value: op, at });
        this.index(op.account_id, 'w:' + key);
      }
    };
    if (input.signer) setOwner(input.signer, result.signer);
    if (input.mode === 'wallet') {
      setOwner(input.wallet, result.claimed);
      return;
    }
    const cred = result.credential;
    // A credential whose account row is gone is left uncached (the statement answers it every time).
    if (cred && !result.claimed) return;
    this.credentials.set(input.tokenHash, { value: cred, at });
    if (cred && result.claimed) {
      this.credentialHashes.set(cred.id, input.tokenHash);
      this.operators.set(result.claimed.account_id, { value: result.claimed, at });
      this.index(cred.account_id, 'c:' + input.tokenHash);
    }
  }
}
