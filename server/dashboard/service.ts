// Dashboard sign-in and read models: an API key or a one-time link is exchanged for a random session id kept
// only in an HttpOnly cookie (the database holds its hash); sessions end after an idle timeout.
import type { Config } from '../config';
import { decryptJson, encryptJson, operatorHandle, randomBase62, sha256Hex } from '../crypto';
import { credentialStatus } from '../services/credentials';
import type { AccountsService } from '../services/accounts';
import type { UsageRepository } from '../repositories/usage';
import type { DashboardRepository, ActivityFilter } from '../repositories/dashboard';
import type { KeyValueStore } from '../stores/kv';

const DAY_MS = 86_400_000;
const signInFailureKey = (client: string) => `dashboard-signin-fail:${client}`;
/** How long a flash waits for the redirected page to load it. */
const FLASH_TTL_MS = 60_000;

/** One operator credential as the Activity page lists it. */
export interface MerchantCredentialView {
  id: string;
  prefix: string;
  label: string | null;
  /** null: the merchant's own account; otherwise the operator's handle as assess and webhooks name it. */
  operator_handle: string | null;
  source: 'api' | 'session' | 'refresh';
  /**
   * From credentialStatus(): `live` or `expired`. The merchant's own credentials also say `revoked`; for other
   * operators' credentials revoked and expired stay one answer, as they are to a merchant presenting them.
   */
  status: 'live' | 'expired' | 'revoked';
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
}

/** What a POST hands to the page it redirects to, shown there once. */
export interface Flash {
  notice?: { kind: 'ok' | 'alert'; text: string };
  /** A new API key (plaintext, shown once); `others`: what happened to the account's other keys. */
  newKey?: { key: string; others: 'revoked' | 'kept' };
}

export interface DashboardServiceOptions {
  repo: DashboardRepository;
  accounts: AccountsService;
  usage: UsageRepository;
  /** Counts failed sign-ins per client address (shared by every instance when it is Redis). */
  kv: KeyValueStore;
  config: Config;
  now: () => Date;
}

/** Failed sign-ins one client address may make in SIGN_IN_WINDOW_MS before both sign-in forms refuse it. */
const FAILED_SIGN_INS_ALLOWED = 10;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;

export class DashboardService {
  private readonly repo: DashboardRepository;
  private readonly accounts: AccountsService;
  private readonly usage: UsageRepository;
  private readonly kv: KeyValueStore;
  private readonly config: Config;
  private readonly now: () => Date;

  constructor(options: DashboardServiceOptions) {
    this.repo = options.repo;
    this.accounts = options.accounts;
    this.usage = options.usage;
    this.kv = options.kv;
    this.config = options.config;
    this.now = options.now;
  }

  /** Whether `client` (its address) has used up its failed sign-ins for now. */
  async signInBlocked(client: string): Promise<boolean> {
    return Number((await this.kv.get(signInFailureKey(client))) ?? 0) >= FAILED_SIGN_INS_ALLOWED;
  }

  async recordFailedSignIn(client: string): Promise<void> {
    await this.kv.incr(signInFailureKey(client), SIGN_IN_WINDOW_MS);
  }

  private idleSince(): Date {
    return new Date(this.now().getTime() - this.config.dashboard.idleMinutes * 60_000);
  }

  /** A new session for a valid, active merchant API key; null otherwise (one answer for every failure). */
  async signInWithKey(apiKey: string): Promise<{ sessionId: string; accountId: string } | null> {
    const principal = await this.accounts.authenticate(apiKey);
    if (!principal) return null;
    return { sessionId: await this.newSession(principal.accountId), accountId: principal.accountId };
  }

  async signInWithLink(token: string): Promise<{ sessionId: string; accountId: string } | null> {
    if (!/^dl_[0-9A-Za-z]{20,64}$/.test(token)) return null;
    const link = await this.repo.useLoginLink({ tokenHash: sha256Hex(token), now: this.now() });
    if (!link) return null;
    return { sessionId: await this.newSession(link.account_id), accountId: link.account_id };
  }

  /** A sign-in link for the admin CLI: valid for 15 minutes, usable once. */
  async createLoginLink(accountId: string): Promise<{ url: string; expires_at: string }> {
    await this.accounts.show(accountId); // 404 for an unknown account
    const token = 'dl_' + randomBase62(32);
    const expiresAt = new Date(this.now().getTime() + this.config.dashboard.loginLinkMinutes * 60_000);
    await this.repo.insertLoginLink({ tokenHash: sha256Hex(token), accountId, expiresAt });
    return { url: `${this.config.publicBaseUrl}/dashboard/login/${token}`, expires_at: expiresAt.toISOString() };
  }

  private async newSession(accountId: string): Promise<string> {
    const sessionId = randomBase62(32);
    await this.repo.deleteIdleSessions({ idleSince: this.idleSince() });
    await this.repo.insertSession({ idHash: sha256Hex(sessionId), accountId, at: this.now() });
    return sessionId;
  }

  /** The account of a live session (and its idle timer restarted); null when unknown or idle too long. */
  async resume(sessionId: string | null): Promise<string | null> {
    if (!sessionId || !/^[0-9A-Za-z]{20,64}$/.test(sessionId)) return null;
    const row = await this.repo.touchSession({ idHash: sha256Hex(sessionId), idleSince: this.idleSince(), now: this.now() });
    return row?.account_id ?? null;
  }

  /** Stores a one-time message (encrypted) for the session's next page; replaces any unread one. */
  async setFlash(sessionId: string, flash: Flash): Promise<void> {
    const expiresAt = new Date(this.now().getTime() + FLASH_TTL_MS);
    await this.repo.setFlash({ idHash: sha256Hex(sessionId), payload: encryptJson(this.config.piiKey, flash), expiresAt });
  }

  /** The session's flash, if one is waiting and fresh; it is gone afterwards (a reload shows nothing). */
  async takeFlash(sessionId: string): Promise<Flash | null> {
    const payload = await this.repo.takeFlash({ idHash: sha256Hex(sessionId), now: this.now() });
    return payload ? decryptJson<Flash>(this.config.piiKey, payload) : null;
  }

  async signOut(sessionId: string | null): Promise<void> {
    if (sessionId) await this.repo.deleteSession({ idHash: sha256Hex(sessionId) });
  }

  async overview(accountId: string) {
    const now = this.now();
    const period = now.toISOString().slice(0, 7);
    const account = await this.accounts.show(accountId);
    const since30 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - 29 * DAY_MS);
    const [used, summary, outcomes] = await Promise.all([
      this.usage.get({ accountId, period }),
      this.repo.auditSummary({ accountId, since: since30 }),
      this.repo.sessionOutcomes({ accountId, since: since30 }),
    ]);
    const byDay = new Map<string, number>();
    const byDecision = new Map<string, { decision: string; reason: string | null; n: number }>();
    for (const row of summary) {
      byDay.set(row.day, (byDay.get(row.day) ?? 0) + row.n);
      // An allow is counted once; a denial once per reason it gave.
      for (const reason of row.decision === 'allow' || row.reasons.length === 0 ? [null] : row.reasons) {
        const key = `${row.decision}|${reason ?? ''}`;
        const entry = byDecision.get(key) ?? { decision: row.decision, reason, n: 0 };
        entry.n += row.n;
        byDecision.set(key, entry);
      }
    }
    const decisions = [...byDecision.values()].sort((a, b) => b.n - a.n);
    const days = Array.from({ length: 30 }, (_, i) => {
      const day = new Date(since30.getTime() + i * DAY_MS).toISOString().slice(0, 10);
      return { day, n: byDay.get(day) ?? 0 };
    });
    return { period, used, limit: account.quota, days, decisions, outcomes };
  }

  activity(filter: ActivityFilter) {
    return this.repo.activity(filter);
  }

  async credentials(accountId: string, limit = 50): Promise<MerchantCredentialView[]> {
    const now = this.now();
    return (await this.repo.credentials({ accountId, limit })).map((c) => {
      const own = c.account_id === accountId;
      const status = credentialStatus(c, now).status;
      return {
        id: c.id,
        prefix: c.prefix,
        label: c.label,
        operator_handle: own ? null : operatorHandle(this.config.serverSecret, c.account_id, accountId),
        source: c.source,
        status: status === 'live' ? 'live' : own && c.revoked_at ? 'revoked' : 'expired',
        created_at: c.created_at,
        expires_at: c.expires_at,
        last_used_at: c.last_used_at,
      };
    });
  }

  sessions(accountId: string, limit = 50) {
    return this.repo.sessions({ accountId, limit });
  }
}
