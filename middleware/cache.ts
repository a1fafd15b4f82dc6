// Decision cache and in-flight coalescing. Keys carry the identity, policy, chain and payment signer, so one
// request's signer verdict can never answer another's; Solana addresses and operator tokens are kept
// case-sensitive (tokens are hashed, never lowercased). TTL depends on the outcome (see ttlFor).
import crypto from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { AssessResponseBody } from './wire';

/** Denials an operator can fix by verifying: cached briefly so a freshly verified operator is not locked out. */
export const VERIFICATION_FIXABLE = new Set(['kyc_required', 'kyc_pending', 'kyc_failed']);
/** Upper bound for caching any denial that is not a settled fact about the operator. */
export const SHORT_DENIAL_TTL_MS = 5000;
/** Denials that describe a settled fact about the verified operator (they only change on re-verification). */
const SETTLED_DENIALS = new Set(['age_insufficient', 'jurisdiction_restricted', 'sanctions_flagged']);

export interface KeyParts {
  operatorToken: string | null;
  walletAddress: string | null;
  policyKey: string;
  chain: string | undefined;
  signer: { address: string | null; network: string } | null;
}

/**
 * The cache key. The token is hashed (the cache must not hold bearer secrets in clear) with its case intact;
 * addresses arrive already normalised by shared/address (EVM lowercase, Solana verbatim).
 */
export function cacheKey(parts: KeyParts): string {
  const token = parts.operatorToken ? crypto.createHash('sha256').update(parts.operatorToken).digest('base64url') : '-';
  const signer = parts.signer ? `${parts.signer.network}:${parts.signer.address ?? 'null'}` : '-';
  return `t=${token}|w=${parts.walletAddress ?? '-'}|p=${parts.policyKey}|c=${parts.chain ?? '-'}|s=${signer}`;
}

/** How long an assess answer may be reused; 0 = not cached. */
export function ttlFor(body: AssessResponseBody, allowTtlMs: number): number {
  if (allowTtlMs === 0) return 0;
  const deny = body.decision === 'deny';
  const reasons = body.decision_reasons ?? [];
  // A signer verdict the agent can fix by re-signing (or by the wallet being linked) is short-lived too.
  if (body.signer_match && body.signer_match.kind !== 'pass') return Math.min(allowTtlMs, SHORT_DENIAL_TTL_MS);
  if (!deny) return allowTtlMs;
  // A failed sanctions lookup is transient by definition: never reuse it.
  if (reasons.includes('sanctions_check_unavailable')) return 0;
  if (reasons.length > 0 && reasons.every((r) => SETTLED_DENIALS.has(r))) return allowTtlMs;
  return Math.min(allowTtlMs, SHORT_DENIAL_TTL_MS);
}

export interface CachedAssess {
  body: Readonly<AssessResponseBody>;
  quota: Readonly<{ limit: number | null; used: number | null; reset: string | null }> | null;
}

export class DecisionCache<V extends object = CachedAssess> {
  private readonly lru: LRUCache<string, V> | null;
  private readonly inflight = new Map<string, Promise<unknown>>();

  // ttlResolution 0: read the clock on every get instead of caching it behind a 1 ms timer (a timer per
  // millisecond on the hot path cost more than the clock read).
  constructor(options: { maxEntries: number; enabled: boolean; now: () => number }) {
    this.lru = options.enabled ? new LRUCache<string, V>({ max: options.maxEntries, ttlAutopurge: false, ttlResolution: 0, perf: { now: options.now } }) : null;
  }

  get(key: string): V | undefined {
    return this.lru?.get(key);
  }

  set(key: string, value: V, ttlMs: number): void {
    if (this.lru && ttlMs > 0) this.lru.set(key, value, { ttl: ttlMs });
  }

  /**
   * Runs `load` once per key at a time: concurrent callers for the same key share one promise (one assess
   * call for 100 simultaneous requests of one identity). The entry is dropped when the promise settles.
   */
  coalesce<T>(key: string, load: () => Promise<T>): { promise: Promise<T>; shared: boolean } {
    const existing = this.inflight.get(key) as Promise<T> | undefined;
    if (existing) return { promise: existing, shared: true };
    const promise = load().finally(() => this.inflight.delete(key));
    this.inflight.set(key, promise);
    return { promise, shared: false };
  }

  get size(): number {
    return this.lru?.size ?? 0;
  }

  clear(): void {
    this.lru?.clear();
  }
}
