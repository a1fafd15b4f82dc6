// Fuzzy name matching in the way public screening engines score names (Jaro-Winkler per name part plus a
// phonetic key), with token alignment so order, a missing or extra middle name and merged parts do not matter:
// normalise → tokens → best one-to-one pairing of tokens (Jaro-Winkler, raised to PHONETIC_SIM when the Double
// Metaphone keys agree) → mean over the shorter name, minus a little per unpaired token.
import doubleMetaphone from 'talisman/phonetics/double-metaphone';

export const REVIEW_THRESHOLD = 0.7;

/** A token pair below this similarity counts as unpaired. */
const PAIR_FLOOR = 0.8;
/** Similarity given to two tokens with the same phonetic key and first letter (Mohammed / Muhammad). */
const PHONETIC_SIM = 0.92;
/** Score lost per token of the longer name left unpaired (a missing or extra middle name). */
const EXTRA_TOKEN_PENALTY = 0.04;

/** Uppercase, accents folded, apostrophes dropped, other punctuation → space, whitespace collapsed. */
export function normaliseName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[ßẞ]/g, 'SS')
    .replace(/[øØ]/g, 'O')
    .replace(/[łŁ]/g, 'L')
    .replace(/[đĐ]/g, 'D')
    .replace(/[æÆ]/g, 'AE')
    .toUpperCase()
    .replace(/['‘’`ʼ]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Particles and honorifics that carry no identity on their own. */
const PARTICLES = new Set([
  'AL',
  'EL',
  'BIN',
  'BINT',
  'IBN',
  'BEN',
  'BENT',
  'DE',
  'DA',
  'DI',
  'DU',
  'DO',
  'DOS',
  'DAS',
  'DEL',
  'DELLA',
  'LA',
  'LE',
  'VAN',
  'VON',
  'DER',
  'DEN',
  'TER',
  'Y',
  'E',
  'DR',
  'MR',
  'MRS',
  'MS',
  'HAJI',
  'HAJJI',
  'SHEIKH',
  'SHAYKH',
  'SAYYID',
]);

/** Tokens that carry identity: no single letters or particles ("AL", "BIN", "DE"), unless nothing else is left. */
export function nameTokens(normalised: string): string[] {
  const all = normalised.split(' ').filter(Boolean);
  const kept = all.filter((t) => t.length > 1 && !PARTICLES.has(t));
  return kept.length ? kept : all;
}

export function jaro(a: string, b: string): number {
  if (a === b) return a.length ? 1 : 0;
  const la = a.length;
  const lb = b.length;
  if (!la || !lb) return 0;
  const window = Math.max(0, Math.floor(Math.max(la, lb) / 2) - 1);
  // Bit masks instead of arrays: names are short (a token over 31 characters falls back to arrays).
  if (la <= 31 && lb <= 31) {
    let aMask = 0;
    let bMask = 0;
    let matches = 0;
    for (let i = 0; i < la; i++) {
      const lo = Math.max(0, i - window);
      const hi = Math.min(lb - 1, i + window);
      const c = a.charCodeAt(i);
      for (let j = lo; j <= hi; j++) {
        if (bMask & (1 << j) || b.charCodeAt(j) !== c) continue;
        aMask |= 1 << i;
        bMask |= 1 << j;
        matches++;
        break;
      }
    }
    if (!matches) return 0;
    let transpositions = 0;
    let k = 0;
    for (let i = 0; i < la; i++) {
      if (!(aMask & (1 << i))) continue;
      while (!(bMask & (1 << k))) k++;
      if (a.charCodeAt(i) !== b.charCodeAt(k)) transpositions++;
      k++;
    }
    return (matches / la + matches / lb + (matches - transpositions / 2) / matches) / 3;
  }
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

const phoneticCache = new Map<string, string>();

/** Primary Double Metaphone key of a token (cached: list tokens repeat a lot). */
export function phoneticKey(token: string): string {
  let key = phoneticCache.get(token);
  if (key === undefined) {
    key = doubleMetaphone(token)[0] || token;
    if (phoneticCache.size < 200_000) phoneticCache.set(token, key);
  }
  return key;
}

/** A pre-tokenised name: tokens and their phonetic keys, computed once for listed names. */
export interface PreparedName {
  normalised: string;
  compact: string;
  tokens: string[];
  keys: string[];
}

export function prepareName(normalised: string): PreparedName {
  const tokens = nameTokens(normalised);
  return { normalised, compact: tokens.join(''), tokens, keys: tokens.map(phoneticKey) };
}

const VOWELS = new Set(['A', 'E', 'I', 'O', 'U', 'Y']);

/**
 * Token similarity: Jaro-Winkler, raised to PHONETIC_SIM for spellings of one sound (same Double Metaphone key
 * of three or more sounds, same first letter or both vowels, and already fairly similar letters).
 */
export function tokenSimilarity(a: string, ak: string, b: string, bk: string): number {
  if (a === b) return 1;
  const jw = jaroWinkler(a, b);
  if (jw >= PHONETIC_SIM || jw < 0.65 || ak !== bk || ak.length < 3) return jw;
  const sameStart = a[0] === b[0] || (VOWELS.has(a[0]) && VOWELS.has(b[0]));
  return sameStart ? PHONETIC_SIM : jw;
}

// Scratch buffers for the pairing (screening is synchronous, so one set per process is enough).
const MAX_TOKENS = 12;
const simBuf = new Float64Array(MAX_TOKENS * MAX_TOKENS);

/**
 * Similarity of two prepared names in [0, 1]. Tokens are paired one-to-one greedily by similarity (pairs below
 * PAIR_FLOOR stay unpaired); the score is the mean pair similarity over the shorter name, minus
 * EXTRA_TOKEN_PENALTY per unpaired token of the longer one. A one-token name against a longer one is scored
 * over the longer name, so a lone first name never matches a full name.
 */
export function preparedScore(q: PreparedName, l: PreparedName): number {
  if (q.compact === l.compact && q.compact) return 1;
  const nq = Math.min(q.tokens.length, MAX_TOKENS);
  const nl = Math.min(l.tokens.length, MAX_TOKENS);
  if (!nq || !nl) return 0;
  for (let i = 0; i < nq; i++) {
    for (let j = 0; j < nl; j++) simBuf[i * nl + j] = tokenSimilarity(q.tokens[i], q.keys[i], l.tokens[j], l.keys[j]);
  }
  let usedQ = 0;
  let usedL = 0;
  let total = 0;
  let paired = 0;
  const pairsMax = Math.min(nq, nl);
  while (paired < pairsMax) {
    let best = -1;
    let bi = -1;
    let bj = -1;
    for (let i = 0; i < nq; i++) {
      if (usedQ & (1 << i)) continue;
      for (let j = 0; j < nl; j++) {
        if (usedL & (1 << j)) continue;
        const s = simBuf[i * nl + j];
        if (s > best) {
          best = s;
          bi = i;
          bj = j;
        }
      }
    }
    if (best < PAIR_FLOOR) break;
    usedQ |= 1 << bi;
    usedL |= 1 << bj;
    total += best;
    paired++;
  }
  const shorter = Math.min(nq, nl);
  const longer = Math.max(nq, nl);
  if (shorter === 1 && longer > 1) return total / longer;
  return Math.max(0, total / shorter - EXTRA_TOKEN_PENALTY * (longer - paired));
}

/** Name-only similarity of two already-normalised names. */
export function nameScore(query: string, listed: string): number {
  return preparedScore(prepareName(query), prepareName(listed));
}
