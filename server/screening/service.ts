// Name screening at KYC time and on re-screening: holds the current sanctions name list in memory (reloaded
// every SANCTIONS_REFRESH_SECONDS), scores a verified identity against every entry and alias, and re-screens
// every verified operator on demand (`npm run admin -- screening rescreen`).
import type { Config } from '../config';
import type { Logger } from '../logger';
import { decryptJson } from '../crypto';
import type { OperatorsRepository } from '../repositories/operators';
import { loadNameList, type NameList } from './nameList';
import { MATCH_THRESHOLD, REVIEW_THRESHOLD, nameScore, normaliseName } from './match';

export interface ScreeningSubject {
  fullName: string;
  dobYear: number | null;
  country: string | null;
}

export interface ScreeningHit {
  uid: string;
  name: string;
  score: number;
}

export type ScreeningOutcome =
  | { status: 'clear'; band: 'none' | 'review'; best: ScreeningHit | null }
  | { status: 'flagged'; best: ScreeningHit }
  /** No list loaded: the identity stays unscreened (sanctions_checked_at is not written). */
  | { status: 'unavailable' };

/** The PII stored (encrypted) for a verified identity; re-screening reads it back. */
export interface StoredIdentity {
  full_name: string;
  date_of_birth: string;
  country: string;
  document_last4?: string | null;
}

export class ScreeningService {
  private list: NameList | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly now: () => Date,
    private readonly operators: OperatorsRepository,
  ) {}

  get configured(): boolean {
    return Boolean(this.config.sanctions.nameSource);
  }

  get loadedList(): { source: string; loaded_at: string; entries: number } | null {
    return this.list ? { source: this.list.source, loaded_at: this.list.loadedAt.toISOString(), entries: this.list.entries.length } : null;
  }

  /** Loads the list once at start and keeps refreshing it; a failed refresh keeps the last good list. */
  async start(): Promise<void> {
    if (!this.configured) return;
    await this.reload().catch(() => undefined);
    this.timer = setInterval(() => void this.reload().catch(() => undefined), this.config.sanctions.refreshSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async reload(): Promise<NameList | null> {
    const { nameSource, nameAltSource } = this.config.sanctions;
    if (!nameSource) return null;
    try {
      this.list = await loadNameList({ source: nameSource, altSource: nameAltSource }, { timeoutMs: 30_000, now: this.now });
      this.logger.info({ source: nameSource, entries: this.list.entries.length }, 'sanctions name list loaded');
      return this.list;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, source: nameSource }, 'sanctions name list could not be loaded; keeping the previous one');
      throw err;
    }
  }

  /** Scores the subject against every listed name and alias (REFERENCE.md): match ≥ 0.85, review 0.70–0.85. */
  screen(subject: ScreeningSubject): ScreeningOutcome {
    if (!this.list) return { status: 'unavailable' };
    const query = normaliseName(subject.fullName);
    let best: ScreeningHit | null = null;
    for (const entry of this.list.entries) {
      let score = 0;
      for (const listed of entry.names) {
        score = Math.max(score, nameScore(query, listed));
        if (score === 1) break;
      }
      if (best && score <= best.score) continue;
      // Qualifiers only lower a score: a listed DOB year or country that disagrees with the verified identity.
      if (subject.dobYear !== null && entry.dobYears.length && !entry.dobYears.includes(subject.dobYear)) score -= 0.1;
      if (subject.country && entry.countries.length && !entry.countries.includes(subject.country)) score -= 0.1;
      if (!best || score > best.score) best = { uid: entry.uid, name: entry.name, score: Math.round(score * 1000) / 1000 };
    }
    if (best && best.score >= MATCH_THRESHOLD) return { status: 'flagged', best };
    return { status: 'clear', band: best && best.score >= REVIEW_THRESHOLD ? 'review' : 'none', best };
  }

  /**
   * Re-screens every KYC-verified operator against the current list (reloaded first). Operators that cannot be
   * screened (no list, unreadable PII) are left untouched, so their last screening ages past the freshness
   * window and policy checks treat them as unscreened.
   */
  async rescreenAll(): Promise<{ list: ScreeningService['loadedList']; screened: number; clear: number; flagged: number; skipped: number; flagged_accounts: string[] }> {
    if (this.configured) await this.reload().catch(() => undefined);
    const result = { list: this.loadedList, screened: 0, clear: 0, flagged: 0, skipped: 0, flagged_accounts: [] as string[] };
    const accounts = await this.operators.listKycVerified();
    for (const account of accounts) {
      if (!this.list || !account.pii_encrypted) {
        result.skipped++;
        continue;
      }
      let identity: StoredIdentity;
      try {
        identity = decryptJson<StoredIdentity>(this.config.piiKey, account.pii_encrypted);
      } catch {
        this.logger.warn({ account: account.id }, 'stored identity could not be decrypted; not re-screened');
        result.skipped++;
        continue;
      }
      const outcome = this.screen({ fullName: identity.full_name, dobYear: Number(identity.date_of_birth.slice(0, 4)) || null, country: identity.country });
      if (outcome.status === 'unavailable') {
        result.skipped++;
        continue;
      }
      await this.operators.recordScreening({ id: account.id, status: outcome.status, checkedAt: this.now() });
      result.screened++;
      if (outcome.status === 'flagged') {
        result.flagged++;
        result.flagged_accounts.push(account.id);
      } else result.clear++;
    }
    return result;
  }
}
