import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { runAdmin } from '../../server/cli/admin';
import { createLogger } from '../../server/logger';
import { MemoryPubSub } from '../../server/stores/kv';
import { detectFormat, parsePlain, parseSdnCsv, parseSdnXml, parseWalletList } from '../../server/sanctions/walletParsers';
import { WalletList } from '../../server/sanctions/walletList';
import { WalletSanctionsService } from '../../server/sanctions/walletSanctions';
import { loadSource, type LoadedSource } from '../../server/sanctions/walletSource';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { evmAddress } from './seed';

const FIXTURES = path.resolve(__dirname, '../fixtures/sanctions');
const read = (f: string) => fs.readFileSync(path.join(FIXTURES, f), 'utf8');
const LAZARUS_ETH = '0x098B716B8Aaf21512996dC57EB0615e2383E2f96';
const GARANTEX_USDT = '0x175d44451403Edf28469dF03A9280c1197ADb92c';
const SOL = 'J7TvRgtuArQ3MbapunQNC8tV1u5C2UnL5U6Yqhu3gHeR';
const TORNADO = '0x8589427373D6D84E98730D7795D8f6f8731FDA16';

function build(text: string, format: 'auto' | 'sdn_xml' | 'sdn_csv' | 'plain' = 'auto', defaultLabel = ''): WalletList {
  const parsed = parseWalletList(text, format, { defaultLabel });
  return WalletList.build(parsed.entries, { source: 't', format: parsed.format, sha256: 'x', publishedAt: parsed.publishedAt, loadedAt: new Date() });
}

describe('wallet sanctions list parsers', () => {
  it('reads digital currency addresses, uids and the publish date from SDN.XML', () => {
    const parsed = parseSdnXml(read('SDN.XML'));
    expect(parsed.publishedAt?.toISOString()).toBe('2024-09-26T00:00:00.000Z');
    expect(parsed.entries).toEqual([
      { address: LAZARUS_ETH, label: 'ETH', sdnUid: '25308', listedAt: null },
      { address: '0xa0e1c89Ef1a489c9C7dE96311eD5Ce5D32c20E4B', label: 'ETH', sdnUid: '25308', listedAt: null },
      { address: '1AjZPMsnmpdK2Rv9KQNfMurTXinscVro9V', label: 'XBT', sdnUid: '25308', listedAt: null },
      { address: GARANTEX_USDT, label: 'USDT', sdnUid: '31497', listedAt: null },
      { address: SOL, label: 'SOL', sdnUid: '31497', listedAt: null },
    ]);
  });

  it('reads addresses from the Remarks column of SDN.CSV (no header, -0- nulls, trailing EOF byte)', () => {
    const parsed = parseSdnCsv(read('SDN.CSV'));
    expect(parsed.entries.map((e) => [e.address, e.label, e.sdnUid])).toEqual([
      [LAZARUS_ETH, 'ETH', '25308'],
      ['0xa0e1c89Ef1a489c9C7dE96311eD5Ce5D32c20E4B', 'ETH', '25308'],
      ['1AjZPMsnmpdK2Rv9KQNfMurTXinscVro9V', 'XBT', '25308'],
      [GARANTEX_USDT, 'USDT', '31497'],
      [SOL, 'SOL', '31497'],
    ]);
  });

  it('reads the plain JSON form with metadata and bare strings', () => {
    const parsed = parsePlain(read('wallets.json'));
    expect(parsed.publishedAt?.toISOString().slice(0, 10)).toBe('2024-09-27');
    expect(parsed.entries[0]).toEqual({ address: TORNADO, label: 'ETH', sdnUid: '32644', listedAt: '2022-08-08' });
    expect(parsed.entries[3]).toEqual({ address: '0x983a81ca6FB1e441266D2FbcB7D8E530AC2E05A2', label: '', sdnUid: '', listedAt: null });
  });

  it('reads plain text with comments, directives and optional columns', () => {
    const parsed = parsePlain(`# label: ETH\n# published_at: 2024-01-31\n\n${TORNADO}\n${SOL} SOL 77 2024-02-01\n`);
    expect(parsed.publishedAt?.toISOString().slice(0, 10)).toBe('2024-01-31');
    expect(parsed.entries).toEqual([
      { address: TORNADO, label: 'ETH', sdnUid: '', listedAt: null },
      { address: SOL, label: 'SOL', sdnUid: '77', listedAt: '2024-02-01' },
    ]);
  });

  it('detects the format from the content', () => {
    expect(detectFormat(read('SDN.XML'))).toBe('sdn_xml');
    expect(detectFormat(read('SDN.CSV'))).toBe('sdn_csv');
    expect(detectFormat(read('wallets.json'))).toBe('plain');
    expect(detectFormat(TORNADO)).toBe('plain');
  });

  it('rejects malformed sources with a clear message', () => {
    expect(() => parsePlain('[1, 2')).toThrow(/plain list JSON is malformed/);
    expect(() => parsePlain('{"foo": 1}')).toThrow(/"entries" or "addresses" array/);
    expect(() => parseSdnXml('<html></html>')).toThrow(/no <sdnList> element/);
    expect(() => parseSdnCsv('ent_num,name\n')).toThrow(/no data rows/);
  });

  it('files addresses by family: EVM lowercased under evm whatever the label, Solana verbatim, others by label', () => {
    const list = build(read('SDN.XML'));
    expect(list.counts()).toEqual({ evm: 3, solana: 1, xbt: 1 });
    expect(list.lookup('evm', LAZARUS_ETH.toLowerCase())).toEqual({ label: 'ETH', sdnUid: '25308', listedAt: null });
    expect(list.lookup('evm', GARANTEX_USDT.toUpperCase().replace('0X', '0x'))).toEqual({ label: 'USDT', sdnUid: '31497', listedAt: null });
    expect(list.lookup('solana', SOL)).toEqual({ label: 'SOL', sdnUid: '31497', listedAt: null });
    expect(list.lookup('solana', SOL.toLowerCase())).toBeNull();
    expect(list.lookup('evm', evmAddress())).toBeNull();
  });

  it('loads a directory of per-label plain lists (the public 0xB10C layout) and prefers the ETH label', async () => {
    const loaded = (await loadSource(path.join(FIXTURES, 'plain'), 'auto')) as LoadedSource;
    const list = WalletList.build(loaded.entries, { source: 'dir', format: loaded.format, sha256: loaded.sha256, publishedAt: null, loadedAt: new Date() });
    // 0x19aa5fe8… is listed under both ETH and USDT.
    expect(list.lookup('evm', '0x19aa5fe80d33a56d56c78e82ea5e50e5d80b4dff')?.label).toBe('ETH');
    expect(list.lookup('evm', '0x175d44451403edf28469df03a9280c1197adb92c')?.label).toBe('USDT');
    expect(list.counts().evm).toBeGreaterThan(150);
    expect(list.counts().xbt).toBeGreaterThan(400);
  });
});

describe('wallet sanctions service', () => {
  let h: Harness;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-sanctions-'));
  const logger = createLogger('silent');

  beforeAll(async () => {
    h = await createHarness();
    await resetTables(h.deps, ['sanctions_wallet_lists']);
  });
  afterAll(async () => {
    await h.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const service = (source: string | null, fetchImpl?: typeof fetch) =>
    new WalletSanctionsService({
      store: h.deps.repos.walletLists,
      pubsub: new MemoryPubSub(),
      logger,
      now: () => new Date(),
      source,
      format: 'auto',
      refreshSeconds: 3600,
      fetchImpl,
    });

  it('answers unavailable while no list is loaded', async () => {
    const s = service(null);
    await s.start();
    expect(s.check('evm', TORNADO.toLowerCase())).toEqual({ status: 'unavailable' });
    await s.stop();
  });

  it('loads its source at start, persists it, and keeps the last good list when a refresh fails', async () => {
    const file = path.join(tmp, 'list.json');
    fs.copyFileSync(path.join(FIXTURES, 'wallets.json'), file);
    const s = service(file);
    await s.start();
    expect(s.check('evm', TORNADO.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '32644', listed_at: '2022-08-08' });
    expect(s.check('solana', SOL)).toMatchObject({ sanctioned: true, ofac_label: 'SOL' });
    expect(s.check('evm', evmAddress())).toEqual({ status: 'clear' });
    expect((await h.deps.repos.walletLists.latestInfo())?.entry_count).toBe(4);

    fs.writeFileSync(file, '{"entries": [');
    expect(await s.refresh()).toBe('failed');
    expect(s.status().last_refresh_error).toMatch(/malformed/);
    expect(s.check('evm', TORNADO.toLowerCase())).toMatchObject({ sanctioned: true });

    fs.writeFileSync(file, '[]');
    expect(await s.refresh()).toBe('failed'); // an empty list is refused, not swapped in
    expect(s.check('evm', TORNADO.toLowerCase())).toMatchObject({ sanctioned: true });

    fs.writeFileSync(file, JSON.stringify([LAZARUS_ETH]));
    expect(await s.refresh()).toBe('updated');
    expect(s.check('evm', TORNADO.toLowerCase())).toEqual({ status: 'clear' });
    expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: 'unknown', listed_at: null });
    expect(await s.refresh()).toBe('unchanged');
    await s.stop();
  });

  it('starts a fresh instance with the last persisted list when its source is unreachable', async () => {
    const s = service('http://127.0.0.1:9/unreachable.json');
    await s.start();
    expect(s.loaded).toBe(true);
    expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toMatchObject({ sanctioned: true });
    expect(await s.refresh()).toBe('failed');
    expect(s.status().last_refresh_error).toEqual(expect.any(String));
    expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toMatchObject({ sanctioned: true });
    await s.stop();
  });

  it('fetches a list from a URL', async () => {
    const server = http.createServer((_req, res) => res.end(read('SDN.CSV')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const s = service(`http://127.0.0.1:${(server.address() as AddressInfo).port}/SDN.CSV`);
      await s.start(); // serves the persisted list at once and fetches in the background
      await s.refresh();
      expect(s.status()).toMatchObject({ format: 'sdn_csv', entries: 5, families: { evm: 3, solana: 1, xbt: 1 } });
      expect(s.check('evm', GARANTEX_USDT.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'USDT', sdn_uid: '31497', listed_at: null });
      await s.stop();
    } finally {
      server.close();
    }
  });

  it('`sanctions load FILE` persists the list and `sanctions status` reports it', async () => {
    const loaded = (await runAdmin(['sanctions', 'load', path.join(FIXTURES, 'SDN.XML')], h.deps)) as Record<string, unknown>;
    expect(loaded).toMatchObject({ loaded: true, format: 'sdn_xml', entries: 5, published_at: '2024-09-26T00:00:00.000Z' });
    const status = (await runAdmin(['sanctions', 'status'], h.deps)) as { persisted: { format: string; entries: number } };
    expect(status.persisted).toMatchObject({ format: 'sdn_xml', entries: 5 });
    // Another instance picks it up from the database.
    const other = service(null);
    await other.start();
    expect(other.check('evm', LAZARUS_ETH.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '25308', listed_at: null });
    await other.stop();
    await expect(runAdmin(['sanctions', 'load', path.join(tmp, 'missing.txt')], h.deps)).rejects.toMatchObject({ code: 'bad_request' });
  });
});

describe('assess without a wallet sanctions list', () => {
  it('fails closed: a signer check denies sanctions_check_unavailable', async () => {
    const h = await createHarness();
    try {
      await resetTables(h.deps, ['sanctions_wallet_lists']);
      const fresh = new WalletSanctionsService({
        store: h.deps.repos.walletLists,
        pubsub: new MemoryPubSub(),
        logger: createLogger('silent'),
        now: () => new Date(),
        source: null,
        format: 'auto',
        refreshSeconds: 3600,
      });
      await fresh.start();
      // Swap in the empty service the way a brand-new deployment without any list would run.
      (h.deps.services.assess as unknown as { d: { sanctions: WalletSanctionsService } }).d.sanctions = fresh;
      const { apiKey } = await createMerchant(h.deps, { tier: 'enterprise' });
      const res = await request(h.app)
        .post('/v1/assess')
        .set('X-API-Key', apiKey)
        .send({ address: evmAddress(), signer: { address: evmAddress(), network: 'evm' } });
      expect(res.body.decision).toBe('deny');
      expect(res.body.decision_reasons).toEqual(['sanctions_check_unavailable']);
      expect(res.body.signer_sanctions).toEqual({ status: 'unavailable' });
      const noSigner = await request(h.app).post('/v1/assess').set('X-API-Key', apiKey).send({ address: evmAddress() });
      expect(noSigner.body.decision).toBe('allow');
    } finally {
      await h.close();
    }
  });
});
