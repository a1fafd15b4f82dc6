// Parsers for wallet-address sanctions lists: OFAC sdn_advanced.xml, legacy SDN.XML, SDN.CSV (addresses in
// Remarks) and a plain list (one address per line with optional columns, or JSON, with optional metadata). Each returns raw
// entries; WalletList.build files them by family.
import { XMLParser } from 'fast-xml-parser';
import type { RawWalletEntry, WalletListFormat } from './walletList';
import { SdnAdvancedParseError, parseSdnAdvanced } from './sdnAdvanced';
import { parseOfacCsv } from './fetchSource';

export interface ParsedWalletList {
  format: WalletListFormat;
  entries: RawWalletEntry[];
  publishedAt: Date | null;
}

export class WalletListParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WalletListParseError';
  }
}

const FEATURE = /^Digital Currency Address - ([A-Za-z0-9]+)$/;
const REMARK = /Digital Currency Address - ([A-Za-z0-9]+)\s+([^\s;,]+)/g;

/** Detects the format from the start of the content (advanced or legacy XML, OFAC CSV rows, JSON or plain text). */
export function detectFormat(input: string | Buffer): WalletListFormat {
  const start = typeof input === 'string' ? input.slice(0, 8192) : input.subarray(0, 8192).toString('utf8');
  const head = start
    .replace(/^\uFEFF/, '')
    .trimStart()
    .slice(0, 4096);
  if (head.startsWith('<')) return /<(?:[A-Za-z_][\w.-]*:)?Sanctions[\s>]/.test(head) ? 'sdn_advanced' : 'sdn_xml';
  if (head.startsWith('[') || head.startsWith('{')) return 'plain';
  if (/^\d+,"/.test(head)) return 'sdn_csv';
  return 'plain';
}

/** Bytes are decoded here; sdn_advanced.xml is decoded slice by slice, never as one ~100 MB string. */
export function parseWalletList(input: string | Buffer, format: WalletListFormat | 'auto', options: { defaultLabel?: string } = {}): ParsedWalletList {
  const resolved = format === 'auto' ? detectFormat(input) : format;
  if (resolved === 'sdn_advanced') return parseSdnAdvancedXml(input);
  const text = typeof input === 'string' ? input : input.toString('utf8');
  switch (resolved) {
    case 'sdn_xml':
      return parseSdnXml(text);
    case 'sdn_csv':
      return parseSdnCsv(text);
    default:
      return parsePlain(text, options.defaultLabel ?? '');
  }
}

/** MM/DD/YYYY (OFAC) or YYYY-MM-DD → Date at UTC midnight; null when absent or malformed. */
function parseDate(value: unknown): Date | null {
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  const s = String(value).trim();
  let m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(s);
  if (m) return new Date(Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2])));
  m = /^(\d{4})-(\d{2})-(\d{2})/.exec(s);
  if (m) return new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return null;
}

function isoDate(d: Date | null): string | null {
  return d ? d.toISOString().slice(0, 10) : null;
}

/**
 * Legacy SDN.XML: `sdnEntry/uid`, `idList/id[idType="Digital Currency Address - X"]/idNumber`. Only entries
 * that mention a digital currency address are parsed (a few hundred of ~17,000), which keeps memory small.
 */
export function parseSdnXml(text: string): ParsedWalletList {
  if (!/<sdnList[\s>]/.test(text)) {
    if (/<Sanctions[\s>]/.test(text)) throw new WalletListParseError('this is an sdn_advanced.xml document: use the sdn_advanced format (or auto)');
    throw new WalletListParseError('not an OFAC SDN.XML document (no <sdnList> element)');
  }
  const parser = new XMLParser({
    ignoreAttributes: true,
    removeNSPrefix: true,
    parseTagValue: false,
    isArray: (name) => name === 'id' || name === 'program',
  });
  const publishMatch = /<Publish_Date>([^<]*)<\/Publish_Date>/.exec(text);
  const publishedAt = publishMatch ? parseDate(publishMatch[1]) : null;
  const entries: RawWalletEntry[] = [];
  for (const match of text.matchAll(/<sdnEntry>[\s\S]*?<\/sdnEntry>/g)) {
    const chunk = match[0];
    if (!chunk.includes('Digital Currency Address')) continue;
    const entry = (parser.parse(chunk) as { sdnEntry?: { uid?: string; idList?: { id?: Array<{ idType?: string; idNumber?: string }> } } }).sdnEntry;
    const uid = String(entry?.uid ?? '').trim();
    for (const id of entry?.idList?.id ?? []) {
      const label = FEATURE.exec(String(id.idType ?? '').trim())?.[1];
      const address = String(id.idNumber ?? '').trim();
      if (label && address) entries.push({ address, label, sdnUid: uid, listedAt: null });
    }
  }
  if (entries.length === 0 && !/<sdnEntry>/.test(text)) throw new WalletListParseError('SDN.XML has no sdnEntry elements');
  return { format: 'sdn_xml', entries, publishedAt };
}

/**
 * OFAC sdn_advanced.xml: `FeatureType` ids named `Digital Currency Address - X`, each `DistinctParty@FixedRef`
 * (the SDN uid) with its address features, the listing date from its `SanctionsEntry`, and `DateOfIssue`.
 */
export function parseSdnAdvancedXml(input: string | Buffer): ParsedWalletList {
  try {
    const { entries, publishedAt } = parseSdnAdvanced(input);
    return { format: 'sdn_advanced', entries, publishedAt };
  } catch (err) {
    if (err instanceof SdnAdvancedParseError) throw new WalletListParseError(err.message);
    throw new WalletListParseError(`sdn_advanced.xml could not be parsed: ${(err as Error).message}`);
  }
}

/** SDN.CSV (no header): ent_num first, Remarks twelfth; `-0-` is null; addresses appear in Remarks. */
export function parseSdnCsv(text: string): ParsedWalletList {
  let rows: string[][];
  try {
    rows = parseOfacCsv(text);
  } catch (err) {
    throw new WalletListParseError(`SDN.CSV could not be parsed: ${(err as Error).message}`);
  }
  const entries: RawWalletEntry[] = [];
  let dataRows = 0;
  for (const row of rows) {
    if (!/^\d+$/.test(row[0] ?? '')) continue;
    dataRows++;
    const remarks = row[11];
    if (!remarks || remarks === '-0-') continue;
    for (const m of remarks.matchAll(REMARK)) {
      entries.push({ address: m[2].replace(/\.$/, ''), label: m[1], sdnUid: row[0], listedAt: null });
    }
  }
  if (dataRows === 0) throw new WalletListParseError('SDN.CSV has no data rows (expected ent_num,"SDN_Name",… rows)');
  return { format: 'sdn_csv', entries, publishedAt: null };
}

interface PlainObjectEntry {
  address?: unknown;
  label?: unknown;
  ofac_label?: unknown;
  sdn_uid?: unknown;
  listed_at?: unknown;
}

function fromObject(item: unknown, defaultLabel: string, index: number): RawWalletEntry {
  if (typeof item === 'string') return { address: item, label: defaultLabel, sdnUid: '', listedAt: null };
  if (!item || typeof item !== 'object' || typeof (item as PlainObjectEntry).address !== 'string') {
    throw new WalletListParseError(`entry ${index} must be an address string or an object with an "address" string`);
  }
  const e = item as PlainObjectEntry;
  const label = typeof e.label === 'string' ? e.label : typeof e.ofac_label === 'string' ? e.ofac_label : defaultLabel;
  return {
    address: e.address as string,
    label,
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- lists give uids as strings or numbers
    sdnUid: e.sdn_uid === undefined || e.sdn_uid === null ? '' : String(e.sdn_uid),
    listedAt: isoDate(parseDate(e.listed_at)),
  };
}

/**
 * Plain list. JSON: an array of addresses or {address, label|ofac_label, sdn_uid, listed_at} objects, or an
 * object {published_at?, label?, entries|addresses: [...]}. Text: one address per line, optionally followed
 * by label, sdn_uid and listed_at (whitespace or comma separated); `#` comments; `# label: ETH` and
 * `# published_at: 2024-09-27` directives.
 */
export function parsePlain(text: string, defaultLabel = ''): ParsedWalletList {
  const body = text.replace(/^\uFEFF/, '').trim();
  if (body.startsWith('[') || body.startsWith('{')) {
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch (err) {
      throw new WalletListParseError(`plain list JSON is malformed: ${(err as Error).message}`);
    }
    let items: unknown;
    let publishedAt: Date | null = null;
    let label = defaultLabel;
    if (Array.isArray(json)) items = json;
    else {
      const obj = json as Record<string, unknown>;
      items = obj.entries ?? obj.addresses;
      publishedAt = parseDate(obj.published_at);
      if (typeof obj.label === 'string') label = obj.label;
    }
    if (!Array.isArray(items)) throw new WalletListParseError('plain list JSON must be an array or an object with an "entries" or "addresses" array');
    return { format: 'plain', entries: items.map((item, i) => fromObject(item, label, i)), publishedAt };
  }
  const entries: RawWalletEntry[] = [];
  let label = defaultLabel;
  let publishedAt: Date | null = null;
  for (const rawLine of body.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line) continue;
    if (line.startsWith('#')) {
      const directive = /^#\s*(label|published_at)\s*:\s*(\S+)/i.exec(line);
      if (directive?.[1].toLowerCase() === 'label') label = directive[2];
      else if (directive) publishedAt = parseDate(directive[2]);
      continue;
    }
    const [address, lineLabel, uid, listed] = line.split(/[\s,]+/);
    entries.push({ address, label: lineLabel ?? label, sdnUid: uid ?? '', listedAt: isoDate(parseDate(listed)) });
  }
  return { format: 'plain', entries, publishedAt };
}
