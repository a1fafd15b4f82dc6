// Sanctions name lists: the bundled OFAC snapshot, OFAC SDN.CSV (+ ALT.CSV aliases) or a plain list, from files
// or URLs (conditional GET), parsed into entries with normalised names (primary, remarks a.k.a.s, ALT.CSV
// aliases), date-of-birth years and countries (the qualifiers the matcher uses).
import crypto from 'node:crypto';
import { BUNDLED, bundledNames } from '../sanctions/bundled';
import { fetchConditional, isUrl, parseOfacCsv, readLocalSource, type Validators } from '../sanctions/fetchSource';
import type { NameListValidators } from '../repositories/sanctionsNameLists';
import { isCountryCode } from '../../shared/countries';
import { countryCodeFromName } from './countries';
import { normaliseName } from './match';

export interface NameEntry {
  /** SDN ent_num (or the line number of a plain list). */
  uid: string;
  /** The primary name as listed. */
  name: string;
  type: string | null;
  /** Normalised primary name, its reordered form and every alias. */
  names: string[];
  dobYears: number[];
  countries: string[];
}

const NULL = '-0-';

function clean(value: string | undefined): string | null {
  const v = (value ?? '').trim();
  return v && v !== NULL ? v : null;
}

/** "SMITH, John Paul" is an individual's "LAST, First" form: also match "JOHN PAUL SMITH". */
function nameForms(name: string): string[] {
  const forms = [normaliseName(name)];
  const comma = name.indexOf(',');
  if (comma > 0) forms.push(normaliseName(`${name.slice(comma + 1)} ${name.slice(0, comma)}`));
  return forms.filter(Boolean);
}

/** `a.k.a.` / `f.k.a.` / `n.k.a.` names quoted in SDN remarks ("a.k.a. 'ABU-'UMAR'; …"). */
export function aliasesFromRemarks(remarks: string | null): string[] {
  if (!remarks) return [];
  const out: string[] = [];
  for (const m of remarks.matchAll(/\b[afn]\.k\.a\.,?\s+'(.+?)'(?=[;.,)]|\s|$)/gi)) out.push(m[1]);
  return out;
}

/** DOB years and nationality/citizenship countries from SDN remarks ("DOB 10 Jan 1962; nationality Iran"). */
export function qualifiersFromRemarks(remarks: string | null): { dobYears: number[]; countries: string[] } {
  const dobYears = new Set<number>();
  const countries = new Set<string>();
  if (remarks) {
    for (const m of remarks.matchAll(/DOB\s+(?:circa\s+)?(?:\d{1,2}\s+)?(?:[A-Za-z]{3}\s+)?(\d{4})(?:\s+to\s+(\d{4}))?/gi)) {
      const from = Number(m[1]);
      const to = m[2] ? Number(m[2]) : from;
      for (let y = from; y <= Math.min(to, from + 20); y++) dobYears.add(y);
    }
    for (const m of remarks.matchAll(/(?:nationality|citizen)\s+([^;.()]+)/gi)) {
      const code = countryCodeFromName(m[1]);
      if (code) countries.add(code);
    }
  }
  return { dobYears: [...dobYears], countries: [...countries] };
}

export function parseSdnCsv(sdnCsv: string, altCsv: string | null): NameEntry[] {
  const byUid = new Map<string, NameEntry>();
  for (const row of parseOfacCsv(sdnCsv)) {
    const uid = clean(row[0]);
    const name = clean(row[1]);
    if (!uid || !name) continue;
    // SDN_Type is blank for organisations.
    const type = clean(row[2]) ?? 'entity';
    // People and organisations can be operators; vessels and aircraft cannot.
    if (type === 'vessel' || type === 'aircraft') continue;
    const remarks = clean(row[11]);
    const { dobYears, countries } = qualifiersFromRemarks(remarks);
    const names = [name, ...aliasesFromRemarks(remarks)].flatMap(nameForms);
    byUid.set(uid, { uid, name, type, names, dobYears, countries });
  }
  if (altCsv) {
    for (const row of parseOfacCsv(altCsv)) {
      const entry = byUid.get(clean(row[0]) ?? '');
      const alias = clean(row[3]);
      if (entry && alias) entry.names.push(...nameForms(alias));
    }
  }
  for (const entry of byUid.values()) entry.names = [...new Set(entry.names)];
  return [...byUid.values()];
}

/**
 * Plain list: one entry per line, `name[|dob years comma-separated[|country codes comma-separated]]`; several
 * names of one entry separated by `;`. Lines starting with `#` are comments.
 */
export function parsePlainList(text: string): NameEntry[] {
  const entries: NameEntry[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const trimmed = line.trim();
    if (!trimmed || trimmed.startsWith('#')) return;
    const [namesPart, dobPart = '', countryPart = ''] = trimmed.split('|');
    const names = namesPart
      .split(';')
      .map((n) => n.trim())
      .filter(Boolean);
    if (!names.length) return;
    entries.push({
      uid: String(i + 1),
      name: names[0],
      type: null,
      names: [...new Set(names.flatMap(nameForms))],
      dobYears: dobPart
        .split(',')
        .map((y) => Number(y.trim()))
        .filter((y) => Number.isInteger(y) && y > 1800),
      countries: countryPart
        .split(',')
        .map((c) => c.trim().toUpperCase())
        .filter(isCountryCode),
    });
  });
  return entries;
}

async function readText(
  source: string,
  validators: Validators | null,
  fetchImpl: typeof fetch,
): Promise<{ text: string; validators: Validators | null } | 'not_modified'> {
  if (isUrl(source)) {
    const fetched = await fetchConditional(source, validators, fetchImpl);
    if (fetched.status === 'not_modified') return 'not_modified';
    return { text: fetched.body.toString('utf8'), validators: fetched.validators };
  }
  return { text: (await readLocalSource(source)).toString('utf8'), validators: null };
}

export interface FetchedNameList {
  entries: NameEntry[];
  sha256: string;
  publishedAt: Date | null;
  validators: NameListValidators;
}

/** The bundled snapshot parsed once (it cannot change while the process runs). */
let parsedBundled: NameEntry[] | null = null;

/**
 * Reads and parses the list: the bundled snapshot, or SDN.CSV (+ ALT.CSV aliases) / a plain list from files or
 * URLs. With the validators of the previous fetch, answers `not_modified` when every URL answered 304. Throws
 * on any failure or an empty list (the caller keeps its last good list).
 */
export async function fetchNameList(
  input: { source: string; altSource: string | null },
  previous: NameListValidators | null,
  fetchImpl: typeof fetch = fetch,
): Promise<FetchedNameList | 'not_modified'> {
  if (input.source === BUNDLED) {
    const bundled = bundledNames();
    parsedBundled ??= parseSdnCsv(bundled.sdnCsv, bundled.altCsv);
    return { entries: parsedBundled, sha256: bundled.sha256, publishedAt: bundled.publishedAt, validators: { source: null, alt: null } };
  }
  let main = await readText(input.source, previous?.source ?? null, fetchImpl);
  let alt = input.altSource ? await readText(input.altSource, previous?.alt ?? null, fetchImpl) : null;
  if (main === 'not_modified' && (alt === null || alt === 'not_modified')) return 'not_modified';
  // One file changed: the other is needed in full to rebuild the list.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- readText without validators never answers not_modified
  if (main === 'not_modified') main = (await readText(input.source, null, fetchImpl)) as { text: string; validators: Validators | null };
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- readText without validators never answers not_modified
  if (alt === 'not_modified') alt = (await readText(input.altSource!, null, fetchImpl)) as { text: string; validators: Validators | null };
  const isCsv = /\.csv(\?.*)?$/i.test(input.source) || /^\uFEFF?\d+,"/.test(main.text);
  const entries = isCsv ? parseSdnCsv(main.text, alt?.text ?? null) : parsePlainList(main.text);
  if (!entries.length) throw new Error(`the name list at ${input.source} has no entries`);
  const sha256 = crypto
    .createHash('sha256')
    .update(main.text)
    .update('\0')
    .update(alt?.text ?? '')
    .digest('hex');
  return { entries, sha256, publishedAt: null, validators: { source: main.validators, alt: alt?.validators ?? null } };
}
