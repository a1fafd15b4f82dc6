// Name-screening quality: builds a labelled set from the bundled OFAC list — listed individuals' names in
// realistic variants (positives) and people who are not listed (negatives, from @faker-js/faker's name lists,
// including common names that share a token with listed names) — screens every name against the whole list and
// reports precision, recall, false-positive rate and latency at several thresholds. Deterministic per seed.
import { Faker, de, en, es, es_MX, fr, it, nl, pl, pt_BR, sv, tr, vi, base } from '@faker-js/faker';
import { bundledNames } from '../../server/sanctions/bundled';
import { parseSdnCsv, type NameEntry } from '../../server/screening/nameList';
import { NameIndex, type ScreeningSubject } from '../../server/screening/nameIndex';
import { jaroWinkler, normaliseName, nameTokens } from '../../server/screening/match';
import soundex from 'talisman/phonetics/soundex';
import { COUNTRIES } from '../../server/screening/countries';

export type Variant = 'exact' | 'case_diacritics' | 'token_order' | 'missing_middle' | 'extra_middle' | 'transliteration' | 'typo1' | 'typo2' | 'alias';

export interface LabelledName {
  subject: ScreeningSubject;
  listedUid: string | null;
  variant: Variant | 'negative' | 'negative_shared_token';
  qualifiers: boolean;
}

export interface BenchOptions {
  positives: number;
  negatives: number;
  seed: number;
  thresholds: number[];
  /** Also score the set with the Soundex baseline (OFAC's published approach) for comparison. */
  baseline?: boolean;
}

export interface ThresholdFigures {
  threshold: number;
  /** Positives flagged at all (what a compliance reviewer sees). */
  recall: number;
  /** Positives whose best match is the very entry the variant was made from (stricter than `recall`). */
  recall_same_entry: number;
  precision: number;
  /** Negatives flagged, screened with the DOB and country a KYC provider reports (how kya screens). */
  fpr: number;
  /** Negatives flagged when screened by name alone (no qualifiers to lower a namesake's score). */
  fpr_name_only: number;
  tp: number;
  fn: number;
  fp: number;
  tn: number;
  recall_by_variant: Record<string, number>;
}

export interface BenchResult {
  positives: number;
  negatives: number;
  list_entries: number;
  list_names: number;
  load_ms: number;
  rss_lists_mb: number;
  rss_total_mb: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** CPU time per screen (user + system), which a busy shared machine does not inflate the way wall time is. */
  cpu_p50_ms: number;
  cpu_p99_ms: number;
  figures: ThresholdFigures[];
  baseline?: Array<{ threshold: number; recall: number; recall_same_entry: number; fpr: number; precision: number }>;
  misses: Array<{ name: string; variant: string; best: string | null; score: number | null }>;
  false_positives: Array<{ name: string; best: string; score: number }>;
}

/** Mulberry32: small seeded PRNG so every run builds the same set. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Common romanisations of the same name: each group is interchangeable.
const TRANSLITERATIONS = [
  ['MOHAMMED', 'MUHAMMAD', 'MOHAMED', 'MOHAMMAD', 'MUHAMMED', 'MOHAMAD', 'MUHAMAD'],
  ['AHMED', 'AHMAD'],
  ['HUSSEIN', 'HUSAYN', 'HUSSAIN', 'HUSEIN', 'HOSSEIN'],
  ['HASSAN', 'HASAN'],
  ['YUSUF', 'YOUSEF', 'YOUSSEF', 'YUSSEF'],
  ['OMAR', 'UMAR'],
  ['OSAMA', 'USAMA'],
  ['KHALED', 'KHALID'],
  ['MAHMOUD', 'MAHMUD'],
  ['MUSTAFA', 'MOSTAFA', 'MUSTAPHA'],
  ['ABDUL', 'ABDEL', 'ABDOUL'],
  ['ABDULLAH', 'ABDALLAH'],
  ['SERGEI', 'SERGEY'],
  ['ALEKSANDR', 'ALEXANDER', 'ALEKSANDER'],
  ['YURI', 'YURIY', 'YURY'],
  ['DMITRI', 'DMITRIY', 'DMITRY'],
  ['ALEKSEI', 'ALEKSEY', 'ALEXEI'],
  ['ANDREI', 'ANDREY'],
  ['NIKOLAI', 'NIKOLAY'],
  ['MIKHAIL', 'MIKHAEL'],
  ['YEVGENIY', 'EVGENY', 'YEVGENI'],
  ['IBRAHIM', 'EBRAHIM'],
  ['ISMAIL', 'ISMAEL'],
  ['SULEIMAN', 'SULAYMAN', 'SOLEIMAN'],
  ['JAMAL', 'JAMEL'],
  ['FAISAL', 'FAYSAL'],
  ['ALI', 'ALY'],
  ['HAMID', 'HAMEED'],
  ['RASHID', 'RASHEED'],
];
const TRANSLIT = new Map<string, string[]>();
for (const group of TRANSLITERATIONS)
  for (const name of group)
    TRANSLIT.set(
      name,
      group.filter((g) => g !== name),
    );

/** Generic romanisation rules used when no token is in the table. */
const RULES: Array<[RegExp, string]> = [
  [/OU/, 'U'],
  [/EI$/, 'EY'],
  [/IY$/, 'I'],
  [/KH/, 'H'],
  [/Y/, 'I'],
  [/SH/, 'CH'],
  [/([BDFGLMNPRST])\1/, '$1'],
  [/EE/, 'I'],
  [/AA/, 'A'],
];

const DIACRITICS: Record<string, string> = { A: 'á', E: 'é', I: 'í', O: 'ö', U: 'ü', N: 'ñ', C: 'ç', S: 'š', Z: 'ž' };

/** "LAST, First Middle" → "First Middle Last", the order a KYC provider reports. */
function displayOrder(name: string): string {
  const comma = name.indexOf(',');
  return comma > 0 ? `${name.slice(comma + 1).trim()} ${name.slice(0, comma).trim()}` : name;
}

export function buildLabelledSet(entries: readonly NameEntry[], options: { positives: number; negatives: number; seed: number }): LabelledName[] {
  const rand = rng(options.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const faker = new Faker({ locale: [en, base] });
  faker.seed(options.seed);
  const locales = [en, de, fr, es, es_MX, it, nl, pl, pt_BR, sv, tr, vi].map((l) => new Faker({ locale: [l, en, base] }));
  locales.forEach((f, i) => f.seed(options.seed + i + 1));

  const individuals = entries.filter((e) => e.type === 'individual' && nameTokens(normaliseName(e.name)).length >= 2);
  const out: LabelledName[] = [];
  const variants: Variant[] = ['exact', 'case_diacritics', 'token_order', 'missing_middle', 'extra_middle', 'transliteration', 'typo1', 'typo2', 'alias'];

  const typo = (token: string): string => {
    const i = 1 + Math.floor(rand() * (token.length - 1)); // keep the first letter, as most real typos do
    const letter = String.fromCharCode(65 + Math.floor(rand() * 26));
    switch (Math.floor(rand() * 4)) {
      case 0:
        return token.slice(0, i) + letter + token.slice(i + 1); // substitution
      case 1:
        return token.slice(0, i) + token.slice(i + 1); // deletion
      case 2:
        return token.slice(0, i) + letter + token.slice(i); // insertion
      default:
        return i < token.length - 1 ? token.slice(0, i) + token[i + 1] + token[i] + token.slice(i + 2) : token.slice(0, i) + letter;
    }
  };

  let guard = 0;
  while (out.length < options.positives && guard++ < options.positives * 20) {
    const entry = pick(individuals);
    const variant = variants[out.length % variants.length];
    const primary = displayOrder(entry.name)
      .toUpperCase()
      .replace(/[^\p{L}\p{N}' -]+/gu, ' ')
      .replace(/\s+/g, ' ')
      .trim();
    let tokens = primary.split(' ');
    const long = () =>
      tokens
        .map((t, i) => [t, i] as const)
        .filter(([t]) => t.length >= 5)
        .map(([, i]) => i);
    switch (variant) {
      case 'exact':
        break;
      case 'case_diacritics':
        tokens = tokens.map(
          (t) =>
            t[0] +
            t
              .slice(1)
              .toLowerCase()
              .replace(/[aeiounczs]/, (c) => (rand() < 0.7 ? (DIACRITICS[c.toUpperCase()] ?? c) : c)),
        );
        break;
      case 'token_order':
        tokens = [tokens[tokens.length - 1], ...tokens.slice(0, -1)];
        break;
      case 'missing_middle':
        if (tokens.length < 3) continue;
        tokens.splice(1 + Math.floor(rand() * (tokens.length - 2)), 1);
        break;
      case 'extra_middle':
        tokens.splice(1, 0, pick(locales).person.firstName().toUpperCase());
        break;
      case 'transliteration': {
        const idx = tokens.findIndex((t) => TRANSLIT.has(t));
        if (idx >= 0) tokens[idx] = pick(TRANSLIT.get(tokens[idx])!);
        else {
          const candidates = tokens.map((t, i) => [t, i] as const).filter(([t]) => t.length >= 4 && RULES.some(([re]) => re.test(t)));
          if (!candidates.length) continue;
          const [t, i] = pick(candidates);
          const [re, to] = RULES.find(([r]) => r.test(t))!;
          tokens[i] = t.replace(re, to);
        }
        break;
      }
      case 'typo1': {
        const l = long();
        if (!l.length) continue;
        const i = pick(l);
        tokens[i] = typo(tokens[i]);
        break;
      }
      case 'typo2': {
        const l = long();
        if (!l.length) continue;
        const first = pick(l);
        const second = l.length > 1 ? pick(l.filter((i) => i !== first)) : first;
        tokens[first] = typo(tokens[first]);
        tokens[second] = typo(tokens[second]);
        break;
      }
      case 'alias': {
        const aliases = entry.names.filter(
          (n) => nameTokens(n).length >= 2 && n !== normaliseName(entry.name) && n !== normaliseName(displayOrder(entry.name)),
        );
        if (!aliases.length) continue;
        tokens = pick(aliases).split(' ');
        break;
      }
    }
    const qualifiers = out.length % 2 === 0;
    out.push({
      subject: {
        fullName: tokens.join(' '),
        dobYear: qualifiers && entry.dobYears.length ? entry.dobYears[0] : null,
        country: qualifiers && entry.countries.length ? entry.countries[0] : null,
      },
      listedUid: entry.uid,
      variant,
      qualifiers,
    });
  }

  // Negatives: never-listed people (their token set is no listed name's token set), with the DOB and country
  // a KYC provider always reports.
  const listedSignatures = new Set<string>();
  for (const e of entries) for (const n of e.names) listedSignatures.add([...nameTokens(n)].sort().join(' '));
  const listedFirstNames = individuals.map((e) => nameTokens(normaliseName(displayOrder(e.name)))[0]).filter((t) => t.length > 2);
  const listedSurnames = individuals.map((e) => nameTokens(normaliseName(e.name))[0]).filter((t) => t.length > 2);
  const countries = COUNTRIES.map((c) => c.code);
  const target = out.length + options.negatives;
  let n = 0;
  while (out.length < target) {
    const f = locales[n % locales.length];
    let fullName: string;
    let variant: LabelledName['variant'] = 'negative';
    const kind = n % 5;
    if (kind === 0) {
      fullName = `${pick(listedFirstNames)} ${f.person.lastName()}`;
      variant = 'negative_shared_token';
    } else if (kind === 1) {
      fullName = `${f.person.firstName()} ${pick(listedSurnames)}`;
      variant = 'negative_shared_token';
    } else if (kind === 2) {
      fullName = `${f.person.firstName()} ${f.person.middleName()} ${f.person.lastName()}`;
    } else {
      fullName = `${f.person.firstName()} ${f.person.lastName()}`;
    }
    n++;
    if (listedSignatures.has([...nameTokens(normaliseName(fullName))].sort().join(' '))) continue;
    out.push({
      subject: { fullName, dobYear: 1945 + Math.floor(rand() * 60), country: pick(countries) },
      listedUid: null,
      variant,
      qualifiers: true,
    });
  }
  void faker;
  return out;
}

/**
 * The approach OFAC's own Sanctions List Search describes, as a baseline to compare with: name parts compared
 * in order (the name as listed, and every reordered form and alias the list holds), each part scoring its
 * Jaro-Winkler similarity or 1 when the Soundex codes agree, averaged over the longer name; the same qualifier
 * penalty as kya's matcher. Candidates are the names sharing a Soundex code with the query.
 */
export class SoundexBaseline {
  private readonly names: Array<{ entry: number; tokens: string[]; codes: string[] }> = [];
  private readonly postings = new Map<string, number[]>();

  constructor(private readonly entries: readonly NameEntry[]) {
    entries.forEach((entry, e) => {
      for (const normalised of entry.names) {
        const tokens = nameTokens(normalised);
        if (!tokens.length) continue;
        const id = this.names.push({ entry: e, tokens, codes: tokens.map((t) => soundex(t)) }) - 1;
        for (const code of new Set(this.names[id].codes)) {
          const list = this.postings.get(code);
          if (list) list.push(id);
          else this.postings.set(code, [id]);
        }
      }
    });
  }

  best(subject: ScreeningSubject): { uid: string; score: number } | null {
    const tokens = nameTokens(normaliseName(subject.fullName));
    const codes = tokens.map((t) => soundex(t));
    const candidates = new Set<number>();
    for (const code of codes) for (const id of this.postings.get(code) ?? []) candidates.add(id);
    let best: { uid: string; score: number } | null = null;
    for (const id of candidates) {
      const name = this.names[id];
      const n = Math.max(tokens.length, name.tokens.length);
      let sum = 0;
      for (let i = 0; i < Math.min(tokens.length, name.tokens.length); i++) sum += codes[i] === name.codes[i] ? 1 : jaroWinkler(tokens[i], name.tokens[i]);
      const entry = this.entries[name.entry];
      const dobMismatch = subject.dobYear !== null && entry.dobYears.length > 0 && !entry.dobYears.includes(subject.dobYear);
      const countryMismatch = subject.country !== null && entry.countries.length > 0 && !entry.countries.includes(subject.country);
      const score = sum / n - (dobMismatch ? 0.1 : 0) - (countryMismatch ? 0.1 : 0);
      if (!best || score > best.score) best = { uid: entry.uid, score };
    }
    return best;
  }
}

/** Recall and false-positive rate of the Soundex baseline on the same labelled set, at each threshold. */
export function baselineFigures(
  entries: readonly NameEntry[],
  set: readonly LabelledName[],
  thresholds: number[],
): Array<{ threshold: number; recall: number; recall_same_entry: number; fpr: number; precision: number }> {
  const baseline = new SoundexBaseline(entries);
  const results = set.map((item) => ({ item, best: baseline.best(item.subject) }));
  return thresholds.map((threshold) => {
    let tp = 0;
    let same = 0;
    let fn = 0;
    let fp = 0;
    let tn = 0;
    for (const { item, best } of results) {
      const flagged = Boolean(best && best.score >= threshold);
      if (item.listedUid) {
        if (flagged) {
          tp++;
          if (best!.uid === item.listedUid) same++;
        } else fn++;
      } else if (flagged) fp++;
      else tn++;
    }
    return { threshold, recall: tp / (tp + fn), recall_same_entry: same / (tp + fn), fpr: fp / (fp + tn), precision: tp + fp ? tp / (tp + fp) : 1 };
  });
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Loads the bundled list, builds the index, screens the labelled set, and computes the figures. */
export function runScreeningBench(options: BenchOptions): BenchResult {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const bundled = bundledNames();
  const entries = parseSdnCsv(bundled.sdnCsv, bundled.altCsv);
  const index = new NameIndex(entries.filter((e) => e.type !== 'entity'));
  const loadMs = performance.now() - started;
  gc?.();
  const rssAfter = process.memoryUsage().rss;

  const set = buildLabelledSet(entries, options);
  const screened = entries.filter((e) => e.type !== 'entity').length;
  // Warm up the JIT on a few names so the latency figures describe steady state.
  for (let i = 0; i < Math.min(200, set.length); i++) index.best(set[i].subject);
  const latencies: number[] = [];
  const cpuTimes: number[] = [];
  const results = set.map((item) => {
    const cpu = process.cpuUsage();
    const t = performance.now();
    const best = index.best(item.subject);
    latencies.push(performance.now() - t);
    const used = process.cpuUsage(cpu);
    cpuTimes.push((used.user + used.system) / 1000);
    // Negatives again by name alone, outside the timed screen.
    const nameOnly = item.listedUid ? null : index.best({ ...item.subject, dobYear: null, country: null });
    return { item, best, nameOnly };
  });
  latencies.sort((a, b) => a - b);
  cpuTimes.sort((a, b) => a - b);

  const figures = options.thresholds.map((threshold): ThresholdFigures => {
    let tp = 0;
    let sameEntry = 0;
    let fn = 0;
    let fp = 0;
    let fpNameOnly = 0;
    let tn = 0;
    const byVariant: Record<string, { hit: number; all: number }> = {};
    for (const { item, best, nameOnly } of results) {
      const flagged = Boolean(best && best.score >= threshold);
      if (item.listedUid) {
        const v = (byVariant[item.variant] ??= { hit: 0, all: 0 });
        v.all++;
        if (flagged) {
          tp++;
          v.hit++;
          if (best!.uid === item.listedUid) sameEntry++;
        } else fn++;
      } else {
        if (flagged) fp++;
        else tn++;
        if (nameOnly && nameOnly.score >= threshold) fpNameOnly++;
      }
    }
    return {
      threshold,
      recall: tp / (tp + fn),
      recall_same_entry: sameEntry / (tp + fn),
      precision: tp + fp ? tp / (tp + fp) : 1,
      fpr: fp / (fp + tn),
      fpr_name_only: fpNameOnly / (fp + tn),
      tp,
      fn,
      fp,
      tn,
      recall_by_variant: Object.fromEntries(Object.entries(byVariant).map(([k, v]) => [k, Math.round((v.hit / v.all) * 1000) / 1000])),
    };
  });
  const threshold = options.thresholds[Math.floor(options.thresholds.length / 2)];
  const baseline = options.baseline
    ? baselineFigures(
        entries.filter((e) => e.type !== 'entity'),
        set,
        options.thresholds,
      )
    : undefined;
  return {
    baseline,
    positives: set.filter((s) => s.listedUid).length,
    negatives: set.filter((s) => !s.listedUid).length,
    list_entries: screened,
    list_names: index.nameCount,
    load_ms: Math.round(loadMs),
    rss_lists_mb: Math.round(((rssAfter - rssBefore) / 1048576) * 10) / 10,
    rss_total_mb: Math.round((process.memoryUsage().rss / 1048576) * 10) / 10,
    p50_ms: Math.round(percentile(latencies, 50) * 1000) / 1000,
    p99_ms: Math.round(percentile(latencies, 99) * 1000) / 1000,
    max_ms: Math.round(latencies[latencies.length - 1] * 1000) / 1000,
    cpu_p50_ms: Math.round(percentile(cpuTimes, 50) * 1000) / 1000,
    cpu_p99_ms: Math.round(percentile(cpuTimes, 99) * 1000) / 1000,
    figures,
    misses: results
      .filter(({ item, best }) => item.listedUid && !(best && best.score >= threshold))
      .map(({ item, best }) => ({ name: item.subject.fullName, variant: item.variant, best: best?.matched_name ?? null, score: best?.score ?? null })),
    false_positives: results
      .filter(({ item, best }) => !item.listedUid && best && best.score >= threshold)
      .map(({ item, best }) => ({ name: item.subject.fullName, best: best!.matched_name, score: best!.score })),
  };
}
