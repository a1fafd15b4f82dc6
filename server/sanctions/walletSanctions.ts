// The signer wallet sanctions check. Holds the current list in memory (O(1) lookups per family), refreshes it
// from the configured source on a timer (each instance; conditional GET for URLs, an unchanged source is a
// no-op), swaps atomically, keeps the last good list when a refresh fails, and persists every new list in
// Postgres so a fresh instance starts with it. With a seed (the bundled snapshot) and nothing persisted, the
// seed serves until the first successful fetch. A list older than maxAgeHours answers `unavailable` (fail
// closed). `sanctions load` (CLI) persists a list and tells every instance to reload it (pub/sub).
import type { SignerSanctions } from '../../shared/types';
import type { Logger } from '../logger';
import type { PubSub } from '../stores/kv';
import { WalletList, type WalletListFormat } from './walletList';
import { loadSource } from './walletSource';
import type { SanctionsWalletListsRepository } from '../repositories/sanctionsWalletLists';
import type { Validators } from './fetchSource';
import { BUNDLED } from './bundled';
import { describeFreshness, listAsOf, type ListFreshness } from './freshness';

const RELOAD_CHANNEL = 'sanctions:wallet-list';

export interface WalletSanctionsOptions {
  source: string | null;
  format: WalletListFormat | 'auto';
  refreshSeconds: number;
  /** Serve the bundled snapshot until the first successful fetch when nothing is persisted. */
  seedBundled?: boolean;
  /** A list whose as_of is older than this counts as unavailable (null: no limit). */
  maxAgeHours?: number | null;
}

export interface WalletSanctionsStatus {
  loaded: boolean;
  source: string | null;
  format: WalletListFormat | null;
  entries: number;
  families: Record<string, number>;
  sha256: string | null;
  published_at: string | null;
  loaded_at: string | null;
  configured_source: string | null;
  refresh_seconds: number;
  last_refresh_attempt_at: string | null;
  last_refresh_success_at: string | null;
  last_refresh_error: string | null;
  as_of: string | null;
  age_seconds: number | null;
  freshness: ListFreshness;
}

export type RefreshOutcome = 'updated' | 'unchanged' | 'failed' | 'not_configured';

export interface WalletSanctionsServiceOptions extends WalletSanctionsOptions {
  store: SanctionsWalletListsRepository;
  pubsub: PubSub;
  logger: Logger;
  now: () => Date;
  fetchImpl?: typeof fetch;
}

export class WalletSanctionsService {
  private current: WalletList | null = null;
  private currentId: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<RefreshOutcome> | null = null;
  private lastAttemptAt: Date | null = null;
  private lastSuccessAt: Date | null = null;
  private lastError: string | null = null;
  /** Last time the source confirmed the current list. */
  private checkedAt: Date | null = null;

  private readonly store: SanctionsWalletListsRepository;
  private readonly pubsub: PubSub;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly options: WalletSanctionsOptions;
  private readonly fetchImpl: typeof fetch;

  constructor(options: WalletSanctionsServiceOptions) {
    this.store = options.store;
    this.pubsub = options.pubsub;
    this.logger = options.logger;
    this.now = options.now;
    this.options = options;
    this.fetchImpl = options.fetchImpl ?? fetch;
  }

  /**
   * The signer check: `clear`, a hit, or `unavailable` when no list is loaded (fail closed: the caller
   * denies `sanctions_check_unavailable`).
   */
  check(network: string, address: string): SignerSanctions {
    const list = this.current;
    if (!list || this.tooOld()) return { status: 'unavailable' };
    try {
      const entry = list.lookup(network, address);
      return entry ? { sanctioned: true, ofac_label: entry.label, sdn_uid: entry.sdnUid, listed_at: entry.listedAt } : { status: 'clear' };
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'wallet sanctions lookup failed');
      return { status: 'unavailable' };
    }
  }

  get loaded(): boolean {
    return this.current !== null;
  }

  async start(): Promise<void> {
    await this.pubsub.subscribe(RELOAD_CHANNEL, () => {
      void this.reloadPersisted().catch((err) => this.logger.warn({ err: (err as Error).message }, 'reloading the persisted wallet sanctions list failed'));
    });
    try {
      await this.reloadPersisted();
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'no persisted wallet sanctions list could be read');
    }
    if (!this.options.source) {
      if (!this.current) this.logger.warn('no wallet sanctions list configured or persisted: signer checks answer sanctions_check_unavailable');
      return;
    }
    if (!this.current && this.options.seedBundled && this.options.source !== BUNDLED) {
      try {
        await this.install(BUNDLED, 'auto', { persist: false });
      } catch (err) {
        this.logger.error({ err: (err as Error).message }, 'the bundled wallet sanctions snapshot could not be loaded');
      }
    }
    // With nothing loaded yet, wait for the first fetch (signer checks would fail closed meanwhile);
    // otherwise serve the persisted list and refresh in the background.
    if (this.current) void this.refresh();
    else await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.refreshing?.catch(() => undefined);
  }

  /** Fetches the configured source; concurrent calls share one attempt. Never throws. */
  refresh(): Promise<RefreshOutcome> {
    if (!this.options.source) return Promise.resolve('not_configured');
    // The bundled default never replaces a list an operator loaded (`sanctions load`) or a live source stored.
    if (this.options.source === BUNDLED && this.current && this.current.meta.source !== BUNDLED) return Promise.resolve('unchanged');
    this.refreshing ??= this.refreshOnce(this.options.source).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async refreshOnce(source: string): Promise<RefreshOutcome> {
    this.lastAttemptAt = this.now();
    try {
      const outcome = await this.install(source, this.options.format, { persist: true });
      this.lastSuccessAt = this.now();
      this.lastError = null;
      return outcome;
    } catch (err) {
      this.lastError = (err as Error).message;
      this.logger.warn({ err: this.lastError, source }, 'wallet sanctions list refresh failed; keeping the last good list');
      return 'failed';
    }
  }

  /** Loads a list file (admin CLI): swaps it in here, persists it, and makes every instance reload it. */
  async loadFile(file: string, format: WalletListFormat | 'auto' = 'auto'): Promise<WalletSanctionsStatus> {
    await this.install(file, format, { persist: true, force: true });
    return this.status();
  }

  /**
   * Reads, parses, swaps in and (unless it is the seed) persists a list. Throws when the source cannot be read
   * or parsed. `force` (admin load) stores the list even when it is unchanged.
   */
  private async install(source: string, format: WalletListFormat | 'auto', opts: { persist: boolean; force?: boolean }): Promise<RefreshOutcome> {
    const current = this.current;
    const sameSource = current?.meta.source === source;
    const loaded = await loadSource(source, format, this.fetchImpl, sameSource && !opts.force ? (current?.meta.validators ?? null) : null);
    if (loaded === 'not_modified' || (!opts.force && sameSource && current?.meta.sha256 === loaded.sha256)) {
      await this.confirm();
      // The list in use was never stored (the write failed last time): store it now, so new instances get it.
      if (opts.persist && current && this.currentId === null) await this.persist(current, false);
      return 'unchanged';
    }
    // An empty list is far more likely a broken download than OFAC delisting everyone.
    if (loaded.entries.length === 0) throw new Error(`${source} contains no addresses; refusing to replace the list`);
    const list = WalletList.build(loaded.entries, {
      source,
      format: loaded.format,
      sha256: loaded.sha256,
      publishedAt: loaded.publishedAt,
      loadedAt: this.now(),
      validators: loaded.validators,
    });
    this.current = list; // atomic swap: readers see the old list or the new one, never a mix
    this.checkedAt = list.meta.loadedAt;
    this.currentId = null;
    if (opts.persist) await this.persist(list, opts.force ?? false);
    this.logger.info({ source, entries: list.size, families: list.counts(), as_of: this.asOf()?.toISOString() }, 'wallet sanctions list loaded');
    return 'updated';
  }

  /**
   * Stores the list (unless the newest stored one is the same) and tells every instance to reload. A failure
   * leaves the list in memory only; the next refresh tries again. `force` (admin load) throws instead.
   */
  private async persist(list: WalletList, force: boolean): Promise<void> {
    try {
      const stored = await this.store.latestInfo({ background: true });
      if (force || stored?.sha256 !== list.meta.sha256 || stored.source !== list.meta.source) {
        this.currentId = await this.store.save({ list });
        await this.pubsub.publish(RELOAD_CHANNEL, String(this.currentId)).catch(() => undefined);
      } else {
        this.currentId = stored.id;
        await this.store.touch({ id: stored.id, checkedAt: list.meta.loadedAt });
      }
    } catch (err) {
      if (force) throw err;
      this.logger.warn({ err: (err as Error).message }, 'could not persist the wallet sanctions list; it is in memory only until the next refresh');
    }
  }

  /** The source confirmed the list in use: its fetch-time age restarts (persisted for other instances). */
  private async confirm(): Promise<void> {
    this.checkedAt = this.now();
    if (this.currentId !== null) await this.store.touch({ id: this.currentId, checkedAt: this.checkedAt }).catch(() => undefined);
  }

  private tooOld(): boolean {
    const max = this.options.maxAgeHours;
    if (max === null || max === undefined) return false;
    const asOf = this.asOf();
    return !asOf || this.now().getTime() - asOf.getTime() > max * 3_600_000;
  }

  /** Publication date where the format states one, else the last confirmation by the source. */
  asOf(): Date | null {
    if (!this.current) return null;
    return listAsOf(this.current.meta, this.checkedAt);
  }

  freshness(): ListFreshness {
    return describeFreshness({
      list: 'wallets',
      source: this.current?.meta.source ?? this.options.source,
      entries: this.current?.size ?? 0,
      asOf: this.asOf(),
      now: this.now(),
      maxAgeHours: this.options.maxAgeHours ?? null,
    });
  }

  /** Adopts the newest persisted list when it differs from (and is not older than) the one in memory. */
  async reloadPersisted(): Promise<void> {
    const info = await this.store.latestInfo();
    if (!info || info.id === this.currentId) return;
    if (this.current && info.sha256 === this.current.meta.sha256) {
      this.currentId = info.id;
      return;
    }
    if (this.current && info.loaded_at.getTime() < this.current.meta.loadedAt.getTime()) return;
    const row = await this.store.latest();
    if (!row) return;
    const list = WalletList.fromRows(row.entries, {
      source: row.source,
      format: row.format,
      sha256: row.sha256,
      publishedAt: row.published_at,
      loadedAt: row.loaded_at,
      validators: row.etag || row.last_modified ? ({ etag: row.etag, lastModified: row.last_modified } satisfies Validators) : null,
    });
    this.current = list;
    this.currentId = Number(row.id);
    this.checkedAt = row.checked_at ?? row.loaded_at;
    this.logger.info({ entries: list.size, source: list.meta.source }, 'wallet sanctions list loaded from the database');
  }

  status(): WalletSanctionsStatus {
    const list = this.current;
    const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
    const freshness = this.freshness();
    return {
      loaded: Boolean(list),
      source: list?.meta.source ?? null,
      format: list?.meta.format ?? null,
      entries: list?.size ?? 0,
      families: list?.counts() ?? {},
      sha256: list?.meta.sha256 ?? null,
      published_at: iso(list?.meta.publishedAt),
      loaded_at: iso(list?.meta.loadedAt),
      configured_source: this.options.source,
      refresh_seconds: this.options.refreshSeconds,
      last_refresh_attempt_at: iso(this.lastAttemptAt),
      last_refresh_success_at: iso(this.lastSuccessAt),
      last_refresh_error: this.lastError,
      as_of: iso(this.asOf()),
      age_seconds: freshness.age_seconds,
      freshness,
    };
  }
}
