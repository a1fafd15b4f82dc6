// The wallet list read from OFAC's sdn_advanced.xml: parsing (uid, label, listing date, publication date),
// format detection, loading from a configured file and from a URL, and an assess with a listed signer.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { ConfigError, loadConfig } from '../../server/config';
import { createLogger } from '../../server/logger';
import { MemoryPubSub } from '../../server/stores/kv';
import { detectFormat, parseSdnAdvancedXml, parseSdnXml, parseWalletList } from '../../server/sanctions/walletParsers';
import { SdnAdvancedScanner } from '../../server/sanctions/sdnAdvanced';
import { WalletList } from '../../server/sanctions/walletList';
import { WalletSanctionsService } from '../../server/sanctions/walletSanctions';
import { loadSource, type LoadedSource } from '../../server/sanctions/walletSource';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { evmAddress } from './seed';

const FIXTURE = path.resolve(__dirname, '../fixtures/sanctions/sdn_advanced.xml');
const XML = fs.readFileSync(FIXTURE, 'utf8');
const CURRENT_NS = 'https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/ADVANCED_XML';
const LAZARUS_ETH = '0x098B716B8Aaf21512996dC57EB0615e2383E2f96';
const LAZARUS_ETH_2 = '0xa0e1c89Ef1a489c9C7dE96311eD5Ce5D32c20E4B';
const GARANTEX_ETH = '0x7FF9cFad3877F21d41Da833E2F775dB0569eE3D9';
const HANAFIN_USDT = '0x38735f03b30FbC022DdD06ABED01F0Ca823C6a94';
const SOL = 'J7TvRgtuArQ3MbapunQNC8tV1u5C2UnL5U6Yqhu3gHeR';

const EXPECTED = [
  { address: LAZARUS_ETH, label: 'ETH', sdnUid: '27307', listedAt: '2019-09-13' },
  { address: LAZARUS_ETH_2, label: 'ETH', sdnUid: '27307', listedAt: '2019-09-13' },
  { address: '3Lpoy53K625zVeE47ZasiG5jGkAxJ27kh1', label: 'XBT', sdnUid: '36025', listedAt: '2022-04-05' },
  { address: GARANTEX_ETH, label: 'ETH', sdnUid: '36025', listedAt: '2022-04-05' },
  { address: '3E6ZCKRrsdPc35chA9Eftp1h3DLW18NFNV', label: 'USDT', sdnUid: '36025', listedAt: '2022-04-05' },
  { address: HANAFIN_USDT, label: 'USDT', sdnUid: '43085', listedAt: '2023-11-02' },
  { address: 'TVacWx7F5wgMgn49L5frDf9KLgdYy8nPHL', label: 'USDT', sdnUid: '44445', listedAt: '2024-01-22' },
  { address: SOL, label: 'SOL', sdnUid: '44445', listedAt: '2024-01-22' },
];

describe('sdn_advanced.xml parser', () => {
  it('reads every address feature with its party uid, currency label, listing date and the date of issue', () => {
    const parsed = parseSdnAdvancedXml(XML);
    expect(parsed.format).toBe('sdn_advanced');
    expect(parsed.publishedAt?.toISOString()).toBe('2024-09-27T00:00:00.000Z');
    // Non-address features (website, birthdate, gender, location) and the party without addresses give nothing.
    expect(parsed.entries).toEqual(EXPECTED);
  });

  it('gives the same result from bytes, from text, and from a document fed in tiny slices', () => {
    expect(parseWalletList(Buffer.from(XML), 'auto').entries).toEqual(EXPECTED);
    expect(parseWalletList(XML, 'sdn_advanced').entries).toEqual(EXPECTED);
    // Slices split tags, attributes and multi-byte characters; the scanner must not care where.
    const scanner = new SdnAdvancedScanner();
    const withNonLatin = XML.replace('LAZARUS GROUP', 'LAZARUS GROUP — 라자루스');
    for (let i = 0; i < withNonLatin.length; i += 7) scanner.push(withNonLatin.slice(i, i + 7));
    expect(scanner.finish()).toEqual({ entries: EXPECTED, publishedAt: new Date('2024-09-27T00:00:00.000Z'), parties: 5 });
  });

  it('reads the older UN namespace and prefixed element names', () => {
    const older = XML.split(CURRENT_NS).join('http://www.un.org/sanctions/1.0');
    expect(parseSdnAdvancedXml(older).entries).toEqual(EXPECTED);
    const prefixed = XML.replace(/<(\/?)([A-Z][A-Za-z]*)([\s>/])/g, '<$1sdn:$2$3').replace(`xmlns="${CURRENT_NS}"`, `xmlns:sdn="${CURRENT_NS}"`);
    expect(prefixed).toContain('<sdn:DistinctParty FixedRef="27307">');
    expect(parseSdnAdvancedXml(prefixed).entries).toEqual(EXPECTED);
  });

  it('files EVM addresses lowercased under evm whatever the label, and Solana verbatim', () => {
    const parsed = parseSdnAdvancedXml(XML);
    const list = WalletList.build(parsed.entries, { source: 't', format: parsed.format, sha256: 'x', publishedAt: parsed.publishedAt, loadedAt: new Date() });
    expect(list.counts()).toEqual({ evm: 4, solana: 1, usdt: 2, xbt: 1 });
    expect(list.lookup('evm', LAZARUS_ETH_2.toLowerCase())).toEqual({ label: 'ETH', sdnUid: '27307', listedAt: '2019-09-13' });
    expect(list.lookup('evm', HANAFIN_USDT.toUpperCase().replace('0X', '0x'))).toEqual({ label: 'USDT', sdnUid: '43085', listedAt: '2023-11-02' });
    expect(list.lookup('solana', SOL)).toEqual({ label: 'SOL', sdnUid: '44445', listedAt: '2024-01-22' });
    expect(list.lookup('solana', SOL.toLowerCase())).toBeNull();
  });

  it('takes the earliest entry event as the listing date and leaves it null when the entry has none', () => {
    const noEvent = XML.replace(/<SanctionsEntry ID="44445"[\s\S]*?<\/SanctionsEntry>/, '');
    const entries = parseSdnAdvancedXml(noEvent).entries.filter((e) => e.sdnUid === '44445');
    expect(entries.map((e) => e.listedAt)).toEqual([null, null]);
    const amendedFirst = XML.replace('<Year>2019</Year><Month>9</Month><Day>13</Day>', '<Year>2023</Year><Month>1</Month><Day>1</Day>');
    expect(parseSdnAdvancedXml(amendedFirst).entries[0].listedAt).toBe('2022-04-14');
  });

  it('detects sdn_advanced.xml apart from the legacy SDN.XML', () => {
    expect(detectFormat(XML)).toBe('sdn_advanced');
    expect(detectFormat(Buffer.from(XML))).toBe('sdn_advanced');
    expect(detectFormat('<?xml version="1.0"?>\n<sdnList xmlns="http://tempuri.org/sdnList.xsd"><publshInformation/></sdnList>')).toBe('sdn_xml');
    expect(() => parseSdnXml(XML)).toThrow(/use the sdn_advanced format/);
  });

  it('rejects broken or foreign documents with a clear message', () => {
    expect(() => parseSdnAdvancedXml('<sdnList></sdnList>')).toThrow(/no <Sanctions> element/);
    expect(() => parseSdnAdvancedXml(`<Sanctions xmlns="${CURRENT_NS}"><DistinctParties></DistinctParties></Sanctions>`)).toThrow(/no FeatureTypeValues/);
    expect(() => parseSdnAdvancedXml(XML.slice(0, XML.indexOf('</DistinctParty>', XML.indexOf('FixedRef="27307"'))))).toThrow(
      /ends inside a DistinctParty element/,
    );
    expect(() => parseSdnAdvancedXml(XML.slice(0, XML.indexOf('<SanctionsEntries>')))).toThrow(/truncated \(no closing <\/Sanctions>\)/);
    const noParties = XML.replace(/<DistinctParties>[\s\S]*<\/DistinctParties>/, '<DistinctParties />');
    expect(() => parseSdnAdvancedXml(noParties)).toThrow(/no DistinctParty elements/);
  });
});

describe('wallet sanctions from sdn_advanced.xml', () => {
  let h: Harness;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-sanctions-advanced-'));
  const logger = createLogger('silent');

  beforeAll(async () => {
    h = await createHarness();
  });
  beforeEach(async () => {
    await resetTables(h.deps, ['sanctions_wallet_lists']);
  });
  afterAll(async () => {
    await h.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const service = (source: string, format: 'auto' | 'sdn_advanced' = 'auto') =>
    new WalletSanctionsService({
      store: h.deps.repos.walletLists,
      pubsub: new MemoryPubSub(),
      logger,
      now: () => new Date(),
      source,
      format,
      refreshSeconds: 3600,
    });

  it('accepts SANCTIONS_WALLET_FORMAT=sdn_advanced and names the variable for an unknown format', () => {
    expect(loadConfig({ DATA_DIR: tmp, SANCTIONS_WALLET_SOURCE: FIXTURE, SANCTIONS_WALLET_FORMAT: 'sdn_advanced' }).sanctions).toMatchObject({
      walletSource: FIXTURE,
      walletFormat: 'sdn_advanced',
    });
    expect(() => loadConfig({ DATA_DIR: tmp, SANCTIONS_WALLET_FORMAT: 'advanced' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATA_DIR: tmp, SANCTIONS_WALLET_FORMAT: 'advanced' })).toThrow(/SANCTIONS_WALLET_FORMAT/);
  });

  it('loads a configured file source, persists it with its format, and takes as_of from the date of issue', async () => {
    const loaded = (await loadSource(FIXTURE, 'sdn_advanced')) as LoadedSource;
    expect(loaded).toMatchObject({ format: 'sdn_advanced', publishedAt: new Date('2024-09-27T00:00:00.000Z'), validators: null });
    expect(loaded.entries).toEqual(EXPECTED);

    const s = service(FIXTURE, 'sdn_advanced');
    await s.start();
    expect(s.status()).toMatchObject({
      loaded: true,
      format: 'sdn_advanced',
      entries: 8,
      families: { evm: 4, solana: 1, usdt: 2, xbt: 1 },
      published_at: '2024-09-27T00:00:00.000Z',
      as_of: '2024-09-27T00:00:00.000Z',
    });
    expect(s.check('evm', GARANTEX_ETH.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '36025', listed_at: '2022-04-05' });
    expect(await h.deps.repos.walletLists.latestInfo()).toMatchObject({ format: 'sdn_advanced', entry_count: 8 });
    await s.stop();

    // A new instance with the source unreachable starts from the persisted list, listing dates included.
    const other = service(path.join(tmp, 'missing.xml'));
    await other.start();
    expect(other.check('evm', LAZARUS_ETH.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '27307', listed_at: '2019-09-13' });
    await other.stop();
  });

  it('fetches from a URL with conditional requests, and keeps the last good list when the file turns bad', async () => {
    let body = XML;
    const seen: Array<string | undefined> = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers['if-none-match']);
      const etag = `"${body.length}"`;
      if (req.headers['if-none-match'] === etag) {
        res.statusCode = 304;
        res.end();
        return;
      }
      res.setHeader('ETag', etag);
      res.setHeader('Content-Type', 'application/xml');
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const s = service(`http://127.0.0.1:${(server.address() as AddressInfo).port}/SDN_ADVANCED.XML`);
      await s.start();
      expect(s.status()).toMatchObject({ format: 'sdn_advanced', entries: 8, as_of: '2024-09-27T00:00:00.000Z' });
      expect(s.check('evm', HANAFIN_USDT.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'USDT', sdn_uid: '43085', listed_at: '2023-11-02' });

      expect(await s.refresh()).toBe('unchanged');
      expect(seen).toEqual([undefined, `"${XML.length}"`]);

      body = XML.slice(0, XML.indexOf('<SanctionsEntries>')); // truncated download
      expect(await s.refresh()).toBe('failed');
      expect(s.status().last_refresh_error).toMatch(/sdn_advanced\.xml/);
      expect(s.check('evm', HANAFIN_USDT.toLowerCase())).toMatchObject({ sanctioned: true, sdn_uid: '43085' });
      await s.stop();
    } finally {
      server.close();
    }
  });

  it('denies an assess whose signer is listed in sdn_advanced.xml, with label, uid and listing date', async () => {
    const s = service(FIXTURE);
    await s.start();
    const assess = h.deps.services.assess as unknown as { d: { sanctions: WalletSanctionsService } };
    const previous = assess.d.sanctions;
    assess.d.sanctions = s;
    try {
      const { apiKey } = await createMerchant(h.deps, { tier: 'enterprise' });
      const listed = await request(h.app)
        .post('/v1/assess')
        .set('X-API-Key', apiKey)
        .send({ address: evmAddress(), signer: { address: LAZARUS_ETH_2.toUpperCase().replace('0X', '0x'), network: 'evm' } });
      expect(listed.body.decision).toBe('deny');
      expect(listed.body.decision_reasons).toEqual(['sanctions_flagged']);
      expect(listed.body.signer_sanctions).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '27307', listed_at: '2019-09-13' });

      const clear = await request(h.app)
        .post('/v1/assess')
        .set('X-API-Key', apiKey)
        .send({ address: evmAddress(), signer: { address: evmAddress(), network: 'evm' } });
      expect(clear.body.signer_sanctions).toEqual({ status: 'clear' });
      expect(clear.body.decision_reasons).not.toContain('sanctions_flagged');
    } finally {
      assess.d.sanctions = previous;
      await s.stop();
    }
  });
});
