// Fuzzy name matching as public screening engines do it (REFERENCE.md "Sanctions lists"): normalise, then
// score = max(whole-string Jaro-Winkler when first letters agree, mean per-token best-pair Jaro-Winkler), best
// over every alias, minus 0.1 for a disjoint date-of-birth year and 0.1 for a disjoint country.
export const MATCH_THRESHOLD = 0.85;
export const REVIEW_THRESHOLD = 0.7;

/** Uppercase, accents folded, punctuation → space, whitespace collapsed. */
export function normaliseName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Tokens longer than two characters (initials and particles like "AL", "BIN" of length ≤ 2 carry no weight). */
export function nameTokens(normalised: string): string[] {
  return normalised.split(' ').filter((t) => t.length > 2);
}

export function jaro(a: string, b: string): number {
  if (a === b) return a.length ? 1 : 0;
  const la = a.length;
  const lb = b.length;
  if (!la || !lb) return 0;
  const window = Math.max(0, Math.floor(Math.max(la, lb) / 2) - 1);
  const aMatched = new Array<boolean>(la).fill(false);
  const bMatched = new Array<boolean>(lb).fill(false);
  let matches = 0;
  for (let i = 0; i < la; i++) {
    const lo = Math.max(0, i - window);
    const hi = Math.min(lb - 1, i + window);
    for (let j = lo; j <= hi; j++) {
      if (bMatched[j] || a[i] !== b[j]) continue;
      aMatched[i] = bMatched[j] = true;
      matches++;
      break;
    }
  }
  if (!matches) return 0;
  let transpositions = 0;
  let k = 0;
  for (let i = 0; i < la; i++) {
    if (!aMatched[i]) continue;
    while (!bMatched[k]) k++;
    if (a[i] !== b[k]) transpositions++;
    k++;
  }
  return (matches / la + matches / lb + (matches - transpositions / 2) / matches) / 3;
}

/** Jaro-Winkler with the standard prefix scale 0.1 over at most four leading characters. */
export function jaroWinkler(a: string, b: string): number {
  const j = jaro(a, b);
  let prefix = 0;
  while (prefix < 4 && prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  return j + prefix * 0.1 * (1 - j);
}

/**
 * Mean over the screened name's tokens of each token's best Jaro-Winkler against the listed name's tokens;
 * a listed token is paired at most once (so "JOHN JOHN" cannot match "JOHN SMITH" twice) and pairs below 0.5
 * count as zero.
 */
export function tokenScore(queryTokens: string[], listedTokens: string[]): number {
  if (!queryTokens.length || !listedTokens.length) return 0;
  const pairs: Array<{ q: number; l: number; s: number }> = [];
  queryTokens.forEach((q, qi) => listedTokens.forEach((l, li) => pairs.push({ q: qi, l: li, s: jaroWinkler(q, l) })));
  pairs.sort((x, y) => y.s - x.s);
  const usedQ = new Set<number>();
  const usedL = new Set<number>();
  let total = 0;
  for (const p of pairs) {
    if (usedQ.has(p.q) || usedL.has(p.l)) continue;
    usedQ.add(p.q);
    usedL.add(p.l);
    if (p.s >= 0.5) total += p.s;
  }
  return total / queryTokens.length;
}

/** Name-only similarity of two already-normalised names. */
export function nameScore(query: string, listed: string): number {
  const whole = query && listed && query[0] === listed[0] ? jaroWinkler(query, listed) : 0;
  return Math.max(whole, tokenScore(nameTokens(query), nameTokens(listed)));
}
