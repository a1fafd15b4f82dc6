// The signer wallet sanctions check. Holds the current list in memory (O(1) lookups per family), refreshes it
// from the configured source on a timer (each instance; an unchanged source is a no-op), swaps atomically,
// keeps the last good list when a refresh fails, and persists every new list in Postgres so a fresh instance
// starts with it. `sanctions load` (CLI) persists a list and tells every instance to reload it (pub/sub).
import type { SignerSanctions } from '../../shared/types';
import type { Logger } from '../logger';
import type { PubSub } from '../stores/kv';
import { WalletList, type WalletListFormat } from './walletList';
import { loadSource } from './walletSource';
import type { WalletListStore } from './walletStore';

const RELOAD_CHANNEL = 'sanctions:wallet-list';

export interface WalletSanctionsOptions {
  source: string | null;
  format: WalletListFormat | 'auto';
  refreshSeconds: number;
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
}

export type RefreshOutcome = 'updated' | 'unchanged' | 'failed' | 'not_configured';

export class WalletSanctionsService {
  private current: WalletList | null = null;
  private currentId: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<RefreshOutcome> | null = null;
  private lastAttemptAt: Date | null = null;
  private lastSuccessAt: Date | null = null;
  private lastError: string | null = null;

  constructor(
    private readonly store: WalletListStore,
    private readonly pubsub: PubSub,
    private readonly logger: Logger,
    private readonly now: () => Date,
    private readonly options: WalletSanctionsOptions,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /**
   * The signer check: `clear`, a hit, or `unavailable` when no list is loaded (fail closed: the caller
   * denies `sanctions_check_unavailable`).
   */
  check(network: string, address: string): SignerSanctions {
    const list = this.current;
    if (!list) return { status: 'unavailable' };
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
    this.refreshing ??= this.refreshOnce(this.options.source).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async refreshOnce(source: string): Promise<RefreshOutcome> {
    this.lastAttemptAt = this.now();
    try {
      const outcome = await this.install(source, this.options.format);
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
    await this.install(file, format, true);
    return this.status();
  }

  /** Reads, parses, swaps in and persists a list. Throws when the source cannot be read or parsed. */
  private async install(source: string, format: WalletListFormat | 'auto', requirePersist = false): Promise<RefreshOutcome> {
    const loaded = await loadSource(source, format, this.fetchImpl);
    // An empty list is far more likely a broken download than OFAC delisting everyone.
    if (loaded.entries.length === 0) throw new Error(`${source} contains no addresses; refusing to replace the list`);
    if (!requirePersist && this.current?.meta.sha256 === loaded.sha256) return 'unchanged';
    const list = WalletList.build(loaded.entries, {
      source,
      format: loaded.format,
      sha256: loaded.sha256,
      publishedAt: loaded.publishedAt,
      loadedAt: this.now(),
    });
    this.current = list; // atomic swap: readers see the old list or the new one, never a mix
    try {
      const stored = await this.store.latestInfo();
      if (requirePersist || stored?.sha256 !== list.meta.sha256) {
        this.currentId = await this.store.save(list);
        await this.pubsub.publish(RELOAD_CHANNEL, String(this.currentId)).catch(() => undefined);
      } else {
        this.currentId = stored.id;
      }
    } catch (err) {
      if (requirePersist) throw err;
      this.logger.warn({ err: (err as Error).message }, 'could not persist the wallet sanctions list; it is in memory only');
    }
    this.logger.info({ source, entries: list.size, families: list.counts() }, 'wallet sanctions list loaded');
    return 'updated';
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
    const latest = await this.store.latest();
    if (!latest) return;
    this.current = latest.list;
    this.currentId = latest.id;
    this.logger.info({ entries: latest.list.size, source: latest.list.meta.source }, 'wallet sanctions list loaded from the database');
  }

  status(): WalletSanctionsStatus {
    const list = this.current;
    const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
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
    };
  }
}
