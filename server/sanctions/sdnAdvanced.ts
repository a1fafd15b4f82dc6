// Reads the digital-currency addresses of OFAC's sdn_advanced.xml incrementally: the ~100 MB document is fed in
// slices, and only the few hundred DistinctParty / SanctionsEntry elements that carry an address are parsed.
import { StringDecoder } from 'node:string_decoder';
import { XMLParser } from 'fast-xml-parser';
import type { RawWalletEntry } from './walletList';

export class SdnAdvancedParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SdnAdvancedParseError';
  }
}

export interface SdnAdvancedResult {
  entries: RawWalletEntry[];
  publishedAt: Date | null;
  parties: number;
}

const ADDRESS_FEATURE = /^Digital Currency Address - ([A-Za-z0-9]+)$/;
// Element names may carry a namespace prefix (`<sdn:DistinctParty …>`); OFAC itself uses a default namespace.
const P = '(?:[A-Za-z_][\\w.-]*:)?';
const DATE_OF_ISSUE = new RegExp(`<${P}DateOfIssue[\\s>][\\s\\S]*?</${P}DateOfIssue>`);
const FEATURE_TYPES = new RegExp(`<${P}FeatureTypeValues[\\s>][\\s\\S]*?</${P}FeatureTypeValues>`);
const ROOT_CLOSE = new RegExp(`</${P}Sanctions>\\s*$`);
type Element = 'DistinctParty' | 'SanctionsEntry';
const OPEN = new RegExp(`<(${P})(DistinctParty|SanctionsEntry)[\\s>]`, 'g');
const SLICE_BYTES = 1 << 20;
/** A real DistinctParty is at most tens of KB; an unclosed element this large means a broken document. */
const MAX_ELEMENT_CHARS = 8 << 20;

type Node = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  isArray: (name) => ['Feature', 'FeatureVersion', 'VersionDetail', 'EntryEvent', 'FeatureType', 'Profile'].includes(name),
});

const asNode = (v: unknown): Node => (v && typeof v === 'object' ? (v as Node) : {});
const list = (v: unknown): Node[] => (Array.isArray(v) ? v.map(asNode) : v === undefined ? [] : [asNode(v)]);
const text = (v: unknown): string =>
  (typeof v === 'string' || typeof v === 'number' ? String(v) : typeof asNode(v)['#text'] === 'string' ? (asNode(v)['#text'] as string) : '').trim();

/** `<Year/><Month/><Day/>` → Date at UTC midnight; null when incomplete or impossible. */
function ymd(node: unknown): Date | null {
  const n = asNode(node);
  const [y, m, d] = [n.Year, n.Month, n.Day].map((v) => Number(text(v)));
  if (!Number.isInteger(y) || !Number.isInteger(m) || !Number.isInteger(d) || y < 1900 || m < 1 || m > 12 || d < 1 || d > 31) return null;
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCMonth() === m - 1 ? date : null;
}

interface PartyAddresses {
  uid: string;
  addresses: Array<{ address: string; label: string }>;
}

/**
 * Push parser: `push` slices of the document in order, then `finish`. The reference values (FeatureType ids)
 * and DateOfIssue precede the parties in OFAC's layout; the listing dates (SanctionsEntries) follow them, so
 * the addresses are kept per profile until the end.
 */
export class SdnAdvancedScanner {
  private buffer = '';
  private head = true;
  private root = false;
  private publishedAt: Date | null = null;
  private featureLabels = new Map<string, string>();
  private featureAttr: RegExp | null = null;
  private readonly byProfile = new Map<string, PartyAddresses>();
  private readonly listedAt = new Map<string, Date>();
  private parties = 0;

  push(chunk: string): void {
    this.buffer += chunk;
    if (this.head && !this.readHead()) {
      if (this.buffer.length > MAX_ELEMENT_CHARS) throw new SdnAdvancedParseError('sdn_advanced.xml has no FeatureTypeValues before its parties');
      return;
    }
    this.drain(false);
  }

  finish(): SdnAdvancedResult {
    if (this.head && !this.readHead()) {
      if (!this.root) throw new SdnAdvancedParseError('not an OFAC sdn_advanced.xml document (no <Sanctions> element)');
      throw new SdnAdvancedParseError('sdn_advanced.xml has no FeatureTypeValues reference set');
    }
    this.drain(true);
    // A download cut short can still hold whole parties; without the closing root tag it is not the list.
    if (!ROOT_CLOSE.test(this.buffer)) throw new SdnAdvancedParseError('sdn_advanced.xml is truncated (no closing </Sanctions>)');
    if (this.parties === 0) throw new SdnAdvancedParseError('sdn_advanced.xml has no DistinctParty elements');
    const entries: RawWalletEntry[] = [];
    for (const [profileId, party] of this.byProfile) {
      const listed = this.listedAt.get(profileId);
      const listedAt = listed ? listed.toISOString().slice(0, 10) : null;
      for (const a of party.addresses) entries.push({ address: a.address, label: a.label, sdnUid: party.uid, listedAt });
    }
    return { entries, publishedAt: this.publishedAt, parties: this.parties };
  }

  /** Reads DateOfIssue and the address feature types once both are in the buffer (they come first). */
  private readHead(): boolean {
    if (!this.root) this.root = new RegExp(`<${P}Sanctions[\\s>]`).test(this.buffer);
    const types = FEATURE_TYPES.exec(this.buffer);
    if (!this.root || !types) return false;
    const issue = DATE_OF_ISSUE.exec(this.buffer);
    if (issue && issue.index < types.index) this.publishedAt = ymd(asNode(parser.parse(issue[0])).DateOfIssue);
    const values = asNode(asNode(parser.parse(types[0])).FeatureTypeValues);
    for (const t of list(values.FeatureType)) {
      const label = ADDRESS_FEATURE.exec(text(t))?.[1];
      const id = text(t['@ID']);
      if (label && id) this.featureLabels.set(id, label.toUpperCase());
    }
    // Cheap pre-filter on the raw element text: only parties with an address feature are parsed.
    const ids = [...this.featureLabels.keys()].map((id) => id.replace(/[^\w-]/g, ''));
    this.featureAttr = ids.length ? new RegExp(`FeatureTypeID="(?:${ids.join('|')})"`) : null;
    this.buffer = this.buffer.slice(types.index + types[0].length);
    this.head = false;
    return true;
  }

  /** Handles every complete DistinctParty / SanctionsEntry in the buffer and drops the text before them. */
  private drain(final: boolean): void {
    let consumed = 0;
    OPEN.lastIndex = 0;
    for (;;) {
      const open = OPEN.exec(this.buffer);
      if (!open) {
        // Keep a tail that may hold the start of an opening tag split across slices.
        consumed = Math.max(consumed, this.buffer.length - 64);
        break;
      }
      const name = open[2] as Element;
      const close = `</${open[1]}${name}>`;
      const end = this.buffer.indexOf(close, open.index);
      if (end < 0) {
        consumed = open.index;
        if (this.buffer.length - open.index > MAX_ELEMENT_CHARS) throw new SdnAdvancedParseError(`sdn_advanced.xml has an unterminated ${name} element`);
        if (final) throw new SdnAdvancedParseError(`sdn_advanced.xml ends inside a ${name} element`);
        break;
      }
      const stop = end + close.length;
      this.element(name, this.buffer.slice(open.index, stop));
      consumed = stop;
      OPEN.lastIndex = stop;
    }
    if (consumed > 0) this.buffer = this.buffer.slice(consumed);
  }

  private element(name: Element, xml: string): void {
    if (name === 'DistinctParty') {
      this.parties++;
      if (this.featureAttr?.test(xml)) this.party(xml);
      return;
    }
    const profileId = /ProfileID="([^"]*)"/.exec(xml.slice(0, xml.indexOf('>')))?.[1];
    if (profileId && this.byProfile.has(profileId)) this.entry(profileId, xml);
  }

  private party(xml: string): void {
    const party = asNode(asNode(parser.parse(xml)).DistinctParty);
    const uid = text(party['@FixedRef']);
    for (const profile of list(party.Profile)) {
      const addresses: PartyAddresses['addresses'] = [];
      for (const feature of list(profile.Feature)) {
        const label = this.featureLabels.get(text(feature['@FeatureTypeID']));
        if (!label) continue;
        for (const version of list(feature.FeatureVersion)) {
          for (const detail of list(version.VersionDetail)) {
            const address = text(detail);
            if (address) addresses.push({ address, label });
          }
        }
      }
      if (addresses.length) this.byProfile.set(text(profile['@ID']) || uid, { uid: uid || text(profile['@ID']), addresses });
    }
  }

  /** The earliest dated entry event is the listing date (later events record amendments). */
  private entry(profileId: string, xml: string): void {
    const entry = asNode(asNode(parser.parse(xml)).SanctionsEntry);
    for (const event of list(entry.EntryEvent)) {
      const date = ymd(event.Date);
      const known = this.listedAt.get(profileId);
      if (date && (!known || date < known)) this.listedAt.set(profileId, date);
    }
  }
}

/** Parses a whole document held in memory, decoding a Buffer slice by slice so no full-size string is built. */
export function parseSdnAdvanced(input: string | Buffer): SdnAdvancedResult {
  const scanner = new SdnAdvancedScanner();
  if (typeof input === 'string') {
    for (let i = 0; i < input.length; i += SLICE_BYTES) scanner.push(input.slice(i, i + SLICE_BYTES));
  } else {
    const decoder = new StringDecoder('utf8');
    for (let i = 0; i < input.length; i += SLICE_BYTES) scanner.push(decoder.write(input.subarray(i, i + SLICE_BYTES)));
    scanner.push(decoder.end());
  }
  return scanner.finish();
}
