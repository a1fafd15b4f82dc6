// Name screening at KYC time and on re-screening. Holds the current sanctions name list and its index in memory,
// refreshes it from the configured source every SANCTIONS_REFRESH_SECONDS (conditional GET for URLs), keeps the
// last good list when a refresh fails, persists every new list (a new instance starts with it), and when the
// list of a source changes, queues a background re-screen of every verified operator (BullMQ, or in-process).
// With a seed (the bundled snapshot) and nothing persisted, the seed serves until the first successful fetch.
import type { Config } from '../config';
import type { Logger } from '../logger';
import { decryptJson, operatorHandle } from '../crypto';
import type { JobQueue } from '../jobs/queue';
import type { PubSub } from '../stores/kv';
import type { OperatorsRepository } from '../repositories/operators';
import type { IdentityChanged } from '../services/identity';
import type { WebhookEmitter } from '../webhooks/events';
import type { Knex } from 'knex';
import { BUNDLED } from '../sanctions/bundled';
import { describeFreshness, listAsOf, type ListFreshness } from '../sanctions/freshness';
import { fetchNameList, type NameEntry } from './nameList';
import { NameIndex, type ScreeningHit, type ScreeningSubject } from './nameIndex';
import type { SanctionsNameListsRepository, NameListValidators } from '../repositories/sanctionsNameLists';
import { REVIEW_THRESHOLD } from './match';

export type { ScreeningHit, ScreeningSubject };

export const RESCREEN_JOB = 'screening.rescreen';

/** How a newly flagged operator is recorded with its webhook events (wired by deps). */
export interface ScreeningEvents {
  db: Knex;
  webhooks: WebhookEmitter;
  concerned(operatorAccountId: string, trx: Knex.Transaction): Promise<string[]>;
}
const RELOAD_CHANNEL = 'sanctions:name-list';
const PROGRESS_EVERY = 1000;
const WRITE_BATCH = 500;

export type ScreeningOutcome =
  | { status: 'clear'; band: 'none' | 'review'; best: ScreeningHit | null }
  | { status: 'flagged'; best: ScreeningHit }
  /** No list loaded, or it is older than SANCTIONS_MAX_AGE_HOURS: the identity stays unscreened. */
  | { status: 'unavailable' };

/** The PII stored (encrypted) for a verified identity; re-screening reads it back. */
export interface StoredIdentity {
  full_name: string;
  date_of_birth: string;
  country: string;
  document_last4?: string | null;
}

interface CurrentList {
  source: string;
  altSource: string | null;
  sha256: string;
  publishedAt: Date | null;
  loadedAt: Date;
  validators: NameListValidators | null;
  entries: NameEntry[];
  index: NameIndex;
}

export type NameRefreshOutcome = 'updated' | 'unchanged' | 'failed' | 'not_configured';

export interface RescreenResult {
  list: { source: string; loaded_at: string; entries: number; as_of: string | null } | null;
  screened: number;
  clear: number;
  flagged: number;
  skipped: number;
  flagged_accounts: string[];
  duration_ms: number;
}

// Parsing and indexing the bundled list takes seconds: every service in a process shares one index per list.
const indexCache = new Map<string, NameIndex>();

function indexFor(sha256: string, entries: NameEntry[]): NameIndex {
  let index = indexCache.get(sha256);
  if (!index) {
    // Every verified identity is a person: organisations on the list are not screened against.
    index = new NameIndex(entries.filter((e) => e.type !== 'entity'));
    if (indexCache.size >= 2) indexCache.delete(indexCache.keys().next().value!);
    indexCache.set(sha256, index);
  }
  return index;
}

export interface ScreeningServiceOptions {
  config: Config;
  logger: Logger;
  now: () => Date;
  operators: OperatorsRepository;
  store: SanctionsNameListsRepository;
  jobs: JobQueue;
  pubsub: PubSub;
  identityChanged: IdentityChanged;
  /** false where nothing would run a queued re-screen (an in-process queue without workers, e.g. the CLI). */
  queueRescreens?: boolean;
  fetchImpl?: typeof fetch;
}

export class ScreeningService {
  private list: CurrentList | null = null;
  private listId: number | null = null;
  private checkedAt: Date | null = null;
  private timer: NodeJS.Timeout | null = null;
  private events: ScreeningEvents | null = null;
  private refreshing: Promise<NameRefreshOutcome> | null = null;
  private lastError: string | null = null;

  private readonly config: Config;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly operators: OperatorsRepository;
  private readonly store: SanctionsNameListsRepository;
  private readonly jobs: JobQueue;
  private readonly pubsub: PubSub;
  private readonly identityChanged: IdentityChanged;
  private readonly queueRescreens: boolean;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ScreeningServiceOptions) {
    this.config = options.config;
    this.logger = options.logger;
    this.now = options.now;
    this.operators = options.operators;
    this.store = options.store;
    this.jobs = options.jobs;
    this.pubsub = options.pubsub;
    this.identityChanged = options.identityChanged;
    this.queueRescreens = options.queueRescreens ?? true;
    this.fetchImpl = options.fetchImpl ?? fetch;
  }

  /** From now on, an operator newly flagged by re-screening is reported to the accounts it concerns. */
  useEvents(events: ScreeningEvents): void {
    this.events = events;
  }

  get configured(): boolean {
    return Boolean(this.config.sanctions.nameSource);
  }

  get loadedList(): RescreenResult['list'] {
    return this.list
      ? { source: this.list.source, loaded_at: this.list.loadedAt.toISOString(), entries: this.list.entries.length, as_of: this.asOf()?.toISOString() ?? null }
      : null;
  }

  /** Loads the persisted list (or the seed), then the configured source, and keeps refreshing it. */
  async start(runWorkers = true): Promise<void> {
    if (runWorkers) {
      this.jobs.process<{ sha256: string }>(RESCREEN_JOB, async () => {
        await this.reloadPersisted().catch(() => undefined);
        await this.rescreenAll({ refresh: false });
      });
    }
    await this.pubsub.subscribe(RELOAD_CHANNEL, () => {
      void this.reloadPersisted().catch((err) => this.logger.warn({ err: (err as Error).message }, 'reloading the persisted sanctions name list failed'));
    });
    if (!this.configured) return;
    await this.reloadPersisted().catch((err) => this.logger.warn({ err: (err as Error).message }, 'no persisted sanctions name list could be read'));
    if (!this.list && this.config.sanctions.nameSeedBundled) {
      await this.install(BUNDLED, null, false).catch((err) =>
        this.logger.error({ err: (err as Error).message }, 'the bundled sanctions name list could not be loaded'),
      );
    }
    if (this.list) void this.refresh();
    else await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.config.sanctions.refreshSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.refreshing?.catch(() => undefined);
  }

  /** Fetches the configured source; concurrent calls share one attempt. Never throws. */
  refresh(): Promise<NameRefreshOutcome> {
    const { nameSource, nameAltSource } = this.config.sanctions;
    if (!nameSource) return Promise.resolve('not_configured');
    this.refreshing ??= this.install(nameSource, nameAltSource, true)
      .then((outcome) => {
        this.lastError = null;
        return outcome;
      })
      .catch((err: Error) => {
        this.lastError = err.message;
        this.logger.warn({ err: err.message, source: nameSource }, 'sanctions name list refresh failed; keeping the last good list');
        return 'failed' as const;
      })
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }

  /** Back-compat name for a refresh that reports failures by throwing. */
  async reload(): Promise<void> {
    if ((await this.refresh()) === 'failed') throw new Error(this.lastError ?? 'the sanctions name list could not be loaded');
  }

  private async install(source: string, altSource: string | null, persist: boolean): Promise<NameRefreshOutcome> {
    const current = this.list;
    const sameSource = current?.source === source && current.altSource === altSource;
    const fetched = await fetchNameList({ source, altSource }, sameSource ? current.validators : null, this.fetchImpl);
    if (fetched === 'not_modified' || (sameSource && fetched.sha256 === current.sha256)) {
      this.checkedAt = this.now();
      if (this.listId !== null) await this.store.touch({ id: this.listId, checkedAt: this.checkedAt }).catch(() => undefined);
      // The list in use was never stored (the write failed last time): store it now, and re-screen with it.
      else if (persist && current && sameSource) await this.persist(current);
      return 'unchanged';
    }
    const loadedAt = this.now();
    this.list = {
      source,
      altSource,
      sha256: fetched.sha256,
      publishedAt: fetched.publishedAt,
      loadedAt,
      validators: fetched.validators,
      entries: fetched.entries,
      index: indexFor(fetched.sha256, fetched.entries),
    };
    this.checkedAt = loadedAt;
    this.listId = null;
    this.logger.info({ source, entries: fetched.entries.length, as_of: this.asOf()?.toISOString() }, 'sanctions name list loaded');
    if (persist) await this.persist(this.list);
    return 'updated';
  }

  /**
   * Stores the list (unless the newest stored one is the same), tells every instance to reload, and queues the
   * re-screen a changed list calls for. A failure leaves the list in memory only; the next refresh tries again.
   */
  private async persist(list: CurrentList): Promise<void> {
    const { source, altSource, sha256 } = list;
    try {
      const stored = await this.store.latestInfo({ background: true });
      if (stored && stored.sha256 === sha256 && stored.source === source) {
        this.listId = stored.id;
        await this.store.touch({ id: stored.id, checkedAt: list.loadedAt });
        return;
      }
      this.listId = await this.store.save({
        record: {
          source,
          altSource,
          sha256,
          publishedAt: list.publishedAt,
          loadedAt: list.loadedAt,
          validators: list.validators,
          entries: source === BUNDLED ? null : list.entries,
          entryCount: list.entries.length,
        },
      });
      await this.pubsub.publish(RELOAD_CHANNEL, String(this.listId)).catch(() => undefined);
      // A new version of the list this deployment follows, or the first list it ever stored (an upgrade from a
      // version without lists): every verified operator is screened against it. The instance that stored it
      // queues the job, once. A change of source is re-screened on demand (`screening rescreen`).
      if (this.queueRescreens && (!stored || stored.source === source)) {
        await this.jobs.add(RESCREEN_JOB, { sha256 }, { jobId: `rescreen:${sha256.slice(0, 16)}` });
        this.logger.info({ source }, 'sanctions name list changed; re-screening every verified operator in the background');
      }
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'could not persist the sanctions name list; it is in memory only until the next refresh');
    }
  }

  /** Adopts the newest persisted list when it differs from (and is not older than) the one in memory. */
  async reloadPersisted(): Promise<void> {
    const info = await this.store.latestInfo();
    if (!info || info.id === this.listId) return;
    if (this.list && info.sha256 === this.list.sha256) {
      this.listId = info.id;
      return;
    }
    if (this.list && info.loaded_at.getTime() < this.list.loadedAt.getTime()) return;
    let entries: NameEntry[] | null;
    if (info.source === BUNDLED) {
      const fetched = await fetchNameList({ source: BUNDLED, altSource: null }, null);
      entries = fetched === 'not_modified' ? null : fetched.entries;
    } else entries = await this.store.entries({ id: info.id });
    if (!entries?.length) return;
    this.list = {
      source: info.source,
      altSource: info.alt_source,
      sha256: info.sha256,
      publishedAt: info.published_at,
      loadedAt: info.loaded_at,
      validators: info.validators,
      entries,
      index: indexFor(info.sha256, entries),
    };
    this.listId = info.id;
    this.checkedAt = info.checked_at ?? info.loaded_at;
    this.logger.info({ source: info.source, entries: entries.length }, 'sanctions name list loaded from the database');
  }

  asOf(): Date | null {
    if (!this.list) return null;
    return listAsOf(this.list, this.checkedAt);
  }

  freshness(): ListFreshness {
    return describeFreshness({
      list: 'names',
      source: this.list?.source ?? this.config.sanctions.nameSource,
      entries: this.list?.entries.length ?? 0,
      asOf: this.asOf(),
      now: this.now(),
      maxAgeHours: this.config.sanctions.maxAgeHours,
    });
  }

  status() {
    return { ...this.freshness(), configured_source: this.config.sanctions.nameSource, last_refresh_error: this.lastError };
  }

  /**
   * Screens the subject against every listed person and alias: flagged at or above SANCTIONS_MATCH_THRESHOLD,
   * `review` band from REVIEW_THRESHOLD. The hit says which listed name matched, the scores and qualifiers.
   */
  screen(subject: ScreeningSubject): ScreeningOutcome {
    if (!this.list || this.freshness().status !== 'ok') return { status: 'unavailable' };
    const best = this.list.index.best(subject);
    if (best && best.score >= this.config.sanctions.matchThreshold) return { status: 'flagged', best };
    return { status: 'clear', band: best && best.score >= REVIEW_THRESHOLD ? 'review' : 'none', best };
  }

  /**
   * Re-screens every KYC-verified operator against the current list (refreshed first unless told otherwise).
   * sanctions_checked_at moves for everyone screened; a new match becomes flagged (with why); an existing flag
   * stays until a person clears it. Operators that cannot be screened (no list, unreadable PII) are left
   * untouched, so their last screening ages past the freshness window and policy treats them as unscreened.
   */
  async rescreenAll(options: { refresh?: boolean } = {}): Promise<RescreenResult> {
    const started = performance.now(); // a measured duration, not a business time
    if (options.refresh !== false && this.configured) await this.refresh();
    const result: RescreenResult = { list: this.loadedList, screened: 0, clear: 0, flagged: 0, skipped: 0, flagged_accounts: [], duration_ms: 0 };
    const accounts = await this.operators.listKycVerified();
    const total = accounts.length;
    const checkedAt = this.now();
    let clearBatch: string[] = [];
    const flush = async () => {
      if (clearBatch.length) {
        await this.operators.recordClearScreenings({ ids: clearBatch, checkedAt });
        await this.identityChanged({ operatorIds: clearBatch });
      }
      clearBatch = [];
    };
    let done = 0;
    for (const account of accounts) {
      done++;
      const outcome = account.pii_encrypted ? this.screenStored(account.id, account.pii_encrypted) : null;
      if (!outcome || outcome.status === 'unavailable') {
        result.skipped++;
      } else if (outcome.status === 'flagged') {
        await this.recordFlag(account.id, checkedAt, outcome.best);
        await this.identityChanged({ operatorId: account.id });
        result.screened++;
        result.flagged++;
        result.flagged_accounts.push(account.id);
        this.logger.warn(
          { account: account.id, list_uid: outcome.best.uid, score: outcome.best.score },
          're-screening matched a verified operator; flagged for review',
        );
      } else {
        clearBatch.push(account.id);
        result.screened++;
        result.clear++;
        if (clearBatch.length >= WRITE_BATCH) await flush();
      }
      if (done % PROGRESS_EVERY === 0 && done < total) {
        this.logger.info({ done, total }, `rescreened ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}`);
      }
    }
    await flush();
    result.duration_ms = Math.round(performance.now() - started);
    this.logger.info({ ...result, flagged_accounts: undefined }, `rescreened ${total.toLocaleString('en-US')}/${total.toLocaleString('en-US')}`);
    return result;
  }

  /**
   * The flag, and when it is new, the webhook events for the accounts it concerns, in one transaction. The row
   * lock makes "new" exact when two re-screens run at once (a list change queues one): only one reports it.
   */
  private async recordFlag(accountId: string, checkedAt: Date, match: unknown): Promise<void> {
    const events = this.events;
    if (!events) {
      await this.operators.recordScreening({ id: accountId, status: 'flagged', checkedAt, match });
      return;
    }
    await events.db.transaction(async (trx) => {
      const current = await this.operators.findAccount({ id: accountId, forUpdate: true }, trx);
      await this.operators.recordScreening({ id: accountId, status: 'flagged', checkedAt, match }, trx);
      if (!current || current.sanctions_status === 'flagged') return;
      for (const concerned of await events.concerned(accountId, trx)) {
        const data = {
          operator_handle: concerned === accountId ? null : operatorHandle(this.config.serverSecret, accountId, concerned),
          checked_at: checkedAt.toISOString(),
        };
        await events.webhooks.emit({ accountId: concerned, type: 'operator.sanctions_flagged', data }, trx);
      }
    });
  }

  private screenStored(accountId: string, piiEncrypted: string): ScreeningOutcome | null {
    let identity: StoredIdentity;
    try {
      identity = decryptJson<StoredIdentity>(this.config.piiKey, piiEncrypted);
    } catch {
      this.logger.warn({ account: accountId }, 'stored identity could not be decrypted; not re-screened');
      return null;
    }
    return this.screen({ fullName: identity.full_name, dobYear: Number(identity.date_of_birth.slice(0, 4)) || null, country: identity.country });
  }
}
