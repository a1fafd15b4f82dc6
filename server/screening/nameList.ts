// Sanctions name lists: OFAC SDN.CSV (+ ALT.CSV aliases) or a plain list, parsed into entries with normalised
// names, date-of-birth years and countries (the qualifiers the matcher uses).
import fs from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import { countryCodeFromName, isCountryCode } from './countries';
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

export interface NameList {
  source: string;
  loadedAt: Date;
  entries: NameEntry[];
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

function parseCsv(text: string): string[][] {
  // OFAC files end with a DOS end-of-file byte (0x1A); rows may have fewer columns than the header describes.
  return parse(text.replace(/\x1a/g, ''), { relax_column_count: true, relax_quotes: true, skip_empty_lines: true, trim: true }) as string[][];
}

export function parseSdnCsv(sdnCsv: string, altCsv: string | null): NameEntry[] {
  const byUid = new Map<string, NameEntry>();
  for (const row of parseCsv(sdnCsv)) {
    const uid = clean(row[0]);
    const name = clean(row[1]);
    if (!uid || !name) continue;
    const { dobYears, countries } = qualifiersFromRemarks(clean(row[11]));
    byUid.set(uid, { uid, name, type: clean(row[2]), names: nameForms(name), dobYears, countries });
  }
  if (altCsv) {
    for (const row of parseCsv(altCsv)) {
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
    const names = namesPart.split(';').map((n) => n.trim()).filter(Boolean);
    if (!names.length) return;
    entries.push({
      uid: String(i + 1),
      name: names[0],
      type: null,
      names: [...new Set(names.flatMap(nameForms))],
      dobYears: dobPart.split(',').map((y) => Number(y.trim())).filter((y) => Number.isInteger(y) && y > 1800),
      countries: countryPart.split(',').map((c) => c.trim().toUpperCase()).filter(isCountryCode),
    });
  });
  return entries;
}

async function readSource(source: string, fetchImpl: typeof fetch, timeoutMs: number): Promise<string> {
  if (/^https?:\/\//i.test(source)) {
    const res = await fetchImpl(source, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) throw new Error(`fetching ${source} failed with HTTP ${res.status}`);
    return res.text();
  }
  return fs.readFile(source, 'utf8');
}

/** Loads the configured list. `.csv` sources are OFAC SDN.CSV (aliases from the ALT source); others are plain lists. */
export async function loadNameList(
  input: { source: string; altSource: string | null },
  options: { fetch?: typeof fetch; timeoutMs?: number; now?: () => Date } = {},
): Promise<NameList> {
  const fetchImpl = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const text = await readSource(input.source, fetchImpl, timeoutMs);
  const isCsv = /\.csv(\?.*)?$/i.test(input.source);
  const entries = isCsv
    ? parseSdnCsv(text, input.altSource ? await readSource(input.altSource, fetchImpl, timeoutMs) : null)
    : parsePlainList(text);
  if (!entries.length) throw new Error(`the name list at ${input.source} has no entries`);
  return { source: input.source, loadedAt: (options.now ?? (() => new Date()))(), entries };
}
