// The in-memory screening index over a name list: every listed name and alias pre-tokenised with phonetic keys,
// and an inverted index (blocking) from token keys (phonetic key, first three letters, first letter + last
// three) to names, so a screen scores only the names that share keys with the query instead of the whole list.
// A token with a one- or two-letter typo usually keeps at least one of its three keys, which keeps recall.
import type { NameEntry } from './nameList';
import { normaliseName, prepareName, preparedScore, type PreparedName } from './match';

export interface ScreeningSubject {
  fullName: string;
  dobYear: number | null;
  country: string | null;
}

export type QualifierAgreement = 'match' | 'mismatch' | 'unknown';

/** Why a name scored as it did: the listed entry and name, the scores and the qualifiers compared. */
export interface ScreeningHit {
  uid: string;
  /** The entry's primary name as listed. */
  name: string;
  /** The listed name or alias that matched best (normalised). */
  matched_name: string;
  /** Final score: name score minus 0.1 per disagreeing qualifier. */
  score: number;
  name_score: number;
  dob: QualifierAgreement;
  country: QualifierAgreement;
  listed_dob_years: number[];
  listed_countries: string[];
}

/** A blocking key shared by more names than this is too common to select candidates on its own. */
const FREQUENT_KEY = 150;

/** Score lost for each qualifier (DOB year, country) the list states and the identity contradicts. */
const QUALIFIER_PENALTY = 0.1;

/** The keys token `i` is indexed under: phonetic key, first three letters, first letter + last three. `sharesKey` is the same test. */
function blockingKeys(name: PreparedName, i: number): string[] {
  const t = name.tokens[i];
  return [`p${name.keys[i]}`, `f${t.slice(0, 3)}`, `s${t[0]}${t.slice(-3)}`];
}

export class NameIndex {
  private readonly names: PreparedName[] = [];
  private readonly owner: Int32Array;
  private readonly postings = new Map<string, Int32Array>();
  private readonly seenBy: Int32Array;
  private readonly hits: Uint8Array;

  /** `entries` are the entries to screen against (the caller leaves out what cannot match, e.g. organisations). */
  constructor(readonly entries: readonly NameEntry[]) {
    const owners: number[] = [];
    entries.forEach((entry, e) => {
      const seen = new Set<string>();
      for (const normalised of entry.names) {
        const prepared = prepareName(normalised);
        // "SMITH JOHN" and "JOHN SMITH" index the same tokens: keep one (alignment ignores order).
        const signature = [...prepared.tokens].sort().join(' ');
        if (!prepared.tokens.length || seen.has(signature)) continue;
        seen.add(signature);
        this.names.push(prepared);
        owners.push(e);
      }
    });
    this.owner = Int32Array.from(owners);
    const lists = new Map<string, number[]>();
    this.names.forEach((name, n) => {
      const keys = new Set<string>();
      for (let i = 0; i < name.tokens.length; i++) for (const k of blockingKeys(name, i)) keys.add(k);
      for (const k of keys) {
        let list = lists.get(k);
        if (!list) lists.set(k, (list = []));
        list.push(n);
      }
    });
    for (const [k, list] of lists) this.postings.set(k, Int32Array.from(list));
    this.seenBy = new Int32Array(this.names.length).fill(-1);
    this.hits = new Uint8Array(this.names.length);
  }

  get nameCount(): number {
    return this.names.length;
  }

  /** The best-scoring listed entry for the subject (null when no listed name shares a token key with it). */
  best(subject: ScreeningSubject): ScreeningHit | null {
    const query = prepareName(normaliseName(subject.fullName));
    if (!query.tokens.length) return null;
    // Blocking: count, per listed name, how many distinct query tokens share a key with it. Keys shared by very
    // many names (MUHAMMAD, the -OVICH patronymics) would make every screen score thousands of names, so when
    // the query has rarer keys only those select candidates (one shared rare key is enough); otherwise a name
    // must share two tokens' keys.
    const keys = query.tokens.map((_, i) =>
      blockingKeys(query, i)
        .map((k) => this.postings.get(k))
        .filter((p): p is Int32Array => Boolean(p)),
    );
    const rare = keys.map((lists) => lists.filter((p) => p.length <= FREQUENT_KEY));
    const rareTokens = rare.filter((lists) => lists.length > 0).length;
    const counted = rareTokens > 0 ? rare : keys;
    const touched: number[] = [];
    for (let i = 0; i < counted.length; i++) {
      for (const list of counted[i]) {
        for (let x = 0; x < list.length; x++) {
          const n = list[x];
          if (this.seenBy[n] === i) continue;
          if (this.seenBy[n] === -1) touched.push(n);
          this.seenBy[n] = i;
          this.hits[n]++;
        }
      }
    }
    let best: ScreeningHit | null = null;
    const bestNameScore = new Map<number, { score: number; name: number }>();
    for (const n of touched) {
      const hits = this.hits[n];
      this.hits[n] = 0;
      this.seenBy[n] = -1;
      const name = this.names[n];
      const need = Math.min(2, query.tokens.length, name.tokens.length);
      // Counted hits come from rare keys only; the frequent tokens of the query are checked here, on the few
      // candidates the rare keys selected.
      if (hits < need && (rareTokens === 0 || sharedTokens(query, name, need) < need)) continue;
      const score = preparedScore(query, name);
      const e = this.owner[n];
      const prev = bestNameScore.get(e);
      if (!prev || score > prev.score) bestNameScore.set(e, { score, name: n });
    }
    for (const [e, { score: nameScore, name }] of bestNameScore) {
      if (best && nameScore <= best.score) continue;
      const entry = this.entries[e];
      const dob = agreement(subject.dobYear, entry.dobYears);
      const country = agreement(subject.country, entry.countries);
      const score = nameScore - (dob === 'mismatch' ? QUALIFIER_PENALTY : 0) - (country === 'mismatch' ? QUALIFIER_PENALTY : 0);
      if (best && score <= best.score) continue;
      best = {
        uid: entry.uid,
        name: entry.name,
        matched_name: this.names[name].normalised,
        score: round(score),
        name_score: round(nameScore),
        dob,
        country,
        listed_dob_years: entry.dobYears,
        listed_countries: entry.countries,
      };
    }
    return best;
  }
}

/** Whether two tokens have a blocking key in common: `blockingKeys` compared without building the key strings. */
function sharesKey(a: PreparedName, i: number, b: PreparedName, j: number): boolean {
  const x = a.tokens[i];
  const y = b.tokens[j];
  return a.keys[i] === b.keys[j] || (x[0] === y[0] && (x.slice(0, 3) === y.slice(0, 3) || x.slice(-3) === y.slice(-3)));
}

/** How many of the query's tokens share a blocking key with some token of `name` (counting stops at `enough`). */
function sharedTokens(query: PreparedName, name: PreparedName, enough: number): number {
  let shared = 0;
  for (let i = 0; i < query.tokens.length && shared < enough; i++) {
    for (let j = 0; j < name.tokens.length; j++) {
      if (sharesKey(query, i, name, j)) {
        shared++;
        break;
      }
    }
  }
  return shared;
}

function agreement<T>(value: T | null, listed: readonly T[]): QualifierAgreement {
  if (value === null || value === undefined || value === '' || !listed.length) return 'unknown';
  return listed.includes(value) ? 'match' : 'mismatch';
}

function round(score: number): number {
  return Math.round(score * 1000) / 1000;
}
