// Times the sdn_advanced.xml wallet parser on a synthetic document the size of OFAC's (PARTIES parties, default
// 20,000, each padded with names, identity documents and features like real ones) and prints time and memory.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseWalletList } from '../../server/sanctions/walletParsers';

const PARTIES = Number(process.env.PARTIES ?? 20_000);
const WITH_ADDRESSES = Math.max(1, Math.round(PARTIES / 50)); // ~400 of ~18,000 real parties list addresses
const NS = 'https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/ADVANCED_XML';
const fixture = fs.readFileSync(path.resolve(__dirname, '../fixtures/sanctions/sdn_advanced.xml'), 'utf8');
const referenceValues = /<ReferenceValueSets>[\s\S]*<\/ReferenceValueSets>/.exec(fixture)![0];

const hex = (n: number) => crypto.randomBytes(n).toString('hex');
const feature = (id: number, type: number, value: string) =>
  `        <Feature ID="${id}" FeatureTypeID="${type}">\n          <FeatureVersion ID="${id}" ReliabilityID="1">\n            <VersionDetail DetailTypeID="1432">${value}</VersionDetail>\n          </FeatureVersion>\n          <IdentityReference IdentityID="${id}" IdentityFeatureLinkTypeID="1" />\n        </Feature>\n`;
const alias = (uid: number, i: number, name: string) =>
  `          <Alias FixedRef="${uid}" AliasTypeID="${i ? 1400 : 1403}" Primary="${i === 0}" LowQuality="false">\n            <DocumentedName ID="${uid * 10 + i}" FixedRef="${uid}" DocNameStatusID="1">\n              <DocumentedNamePart>\n                <NamePartValue NamePartGroupID="${uid * 10 + i}" ScriptID="${i === 1 ? 220 : 215}" ScriptStatusID="1" Acronym="false">${name}</NamePartValue>\n              </DocumentedNamePart>\n            </DocumentedName>\n          </Alias>\n`;

function party(uid: number, addresses: boolean): string {
  const names = [`PARTY ${hex(6).toUpperCase()}`, 'ОБЩЕСТВО С ОГРАНИЧЕННОЙ ОТВЕТСТВЕННОСТЬЮ', ...Array.from({ length: 7 }, () => `AKA ${hex(5)}`)];
  let features = feature(uid * 10, 14, `www.${hex(6)}.example`) + feature(uid * 10 + 1, 224, 'Male');
  if (addresses)
    features += feature(uid * 10 + 2, 345, `0x${hex(20)}`) + feature(uid * 10 + 3, 344, `bc1q${hex(19)}`) + feature(uid * 10 + 4, 887, `0x${hex(20)}`);
  return `    <DistinctParty FixedRef="${uid}">\n      <Profile ID="${uid}" PartySubTypeID="4">\n        <Identity ID="${uid}" FixedRef="${uid}" Primary="true" False="false">\n${names.map((n, i) => alias(uid, i, n)).join('')}        </Identity>\n${features}      </Profile>\n    </DistinctParty>\n`;
}

function entry(uid: number): string {
  return `    <SanctionsEntry ID="${uid}" ProfileID="${uid}" ListID="1550">\n      <EntryEvent ID="${uid}" EntryEventTypeID="1" LegalBasisID="1">\n        <Date CalendarTypeID="1"><Year>2022</Year><Month>4</Month><Day>5</Day></Date>\n      </EntryEvent>\n      <SanctionsMeasure ID="${uid}" SanctionsTypeID="1"><Comment>SDGT</Comment><DatePeriod CalendarTypeID="1" /></SanctionsMeasure>\n    </SanctionsEntry>\n`;
}

function build(file: string): void {
  const parts: string[] = [
    `<?xml version="1.0" encoding="utf-8"?>\n<Sanctions xmlns="${NS}">\n  <DateOfIssue><Year>2024</Year><Month>9</Month><Day>27</Day></DateOfIssue>\n  ${referenceValues}\n  <DistinctParties>\n`,
  ];
  const step = Math.floor(PARTIES / WITH_ADDRESSES);
  for (let uid = 1; uid <= PARTIES; uid++) parts.push(party(uid, uid % step === 0));
  parts.push('  </DistinctParties>\n  <SanctionsEntries>\n');
  for (let uid = 1; uid <= PARTIES; uid++) parts.push(entry(uid));
  parts.push('  </SanctionsEntries>\n</Sanctions>\n');
  fs.writeFileSync(file, parts.join(''));
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
const gc = (globalThis as { gc?: () => void }).gc;

/** Peak resident set since the last reset (Linux: VmHWM; writing 5 to clear_refs resets it). */
function peakRss(): number | null {
  try {
    return Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
  } catch {
    return null;
  }
}
function resetPeak(): void {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // not Linux: the peak then includes building the document
  }
}

/** Parses the file in this process: its memory then counts the document bytes and the parse, nothing else. */
function measure(file: string): void {
  const bytes = fs.readFileSync(file);
  gc?.();
  const before = process.memoryUsage();
  resetPeak();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const parsed = parseWalletList(bytes, 'auto');
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  const peak = peakRss();
  gc?.();
  const after = process.memoryUsage();
  console.log(`sdn_advanced.xml synthetic: ${PARTIES} parties, ${WITH_ADDRESSES} with addresses, ${mb(bytes.length)}`);
  console.log(`parsed: ${parsed.entries.length} addresses, format ${parsed.format}, as_of ${parsed.publishedAt?.toISOString().slice(0, 10)}`);
  console.log(`time: ${wallMs.toFixed(0)} ms wall, ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms CPU`);
  console.log(
    `memory: rss ${mb(before.rss)} before the parse (runtime + the document's bytes)` +
      (peak ? `, peak ${mb(peak)} during it (+${mb(peak - before.rss)})` : '') +
      `; heap ${mb(before.heapUsed)} -> ${mb(after.heapUsed)} retained after a GC`,
  );
}

if (process.argv[2]) measure(process.argv[2]);
else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-sdn-advanced-'));
  const file = path.join(dir, 'sdn_advanced.xml');
  try {
    build(file);
    execFileSync(process.execPath, [...process.execArgv, __filename, file], { stdio: 'inherit', env: process.env });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
