// How old a sanctions list is, and whether that is too old: one shape for /readyz, /metrics, the start-up
// banner and the admin status commands. `as_of` is the list's publication date where its format states one,
// else the last time its source confirmed it (a fetch, an unchanged file, or an HTTP 304).
export type ListName = 'wallets' | 'names';

export interface ListFreshness {
  list: ListName;
  /** ok = loaded and fresh enough; stale = older than SANCTIONS_MAX_AGE_HOURS; unavailable = nothing loaded. */
  status: 'ok' | 'stale' | 'unavailable';
  source: string | null;
  entries: number;
  as_of: string | null;
  age_seconds: number | null;
  max_age_hours: number | null;
  /** Why the list cannot be used, when it cannot. */
  reason: string | null;
}

/** A loaded list's as_of: its publication date where stated, else its last confirmation, else when it was loaded. */
export function listAsOf(list: { publishedAt: Date | null; loadedAt: Date }, checkedAt: Date | null): Date {
  return list.publishedAt ?? checkedAt ?? list.loadedAt;
}

export function describeFreshness(input: {
  list: ListName;
  source: string | null;
  entries: number;
  asOf: Date | null;
  now: Date;
  maxAgeHours: number | null;
}): ListFreshness {
  const { list, source, entries, asOf, now, maxAgeHours } = input;
  if (!asOf) {
    return {
      list,
      status: 'unavailable',
      source,
      entries,
      as_of: null,
      age_seconds: null,
      max_age_hours: maxAgeHours,
      reason: `no ${list === 'wallets' ? 'wallet-address' : 'name'} list is loaded`,
    };
  }
  const age = Math.max(0, Math.floor((now.getTime() - asOf.getTime()) / 1000));
  const stale = maxAgeHours !== null && age > maxAgeHours * 3600;
  return {
    list,
    status: stale ? 'stale' : 'ok',
    source,
    entries,
    as_of: asOf.toISOString(),
    age_seconds: age,
    max_age_hours: maxAgeHours,
    reason: stale ? `the list is ${formatAge(age)} old (as of ${asOf.toISOString().slice(0, 10)}), older than SANCTIONS_MAX_AGE_HOURS=${maxAgeHours}` : null,
  };
}

export function formatAge(seconds: number): string {
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86_400)} days`;
}
