// Live sanctions sources against a local HTTP server serving the real OFAC files (the bundled sdn.csv and
// alt.csv): conditional refreshes answered 304, a changed file swapped in, a failing source keeping the last
// good list (also for a new instance, for both lists), revalidation by date where a source sends no ETag,
// SANCTIONS_MAX_AGE_HOURS failing closed, and a name-list change re-screening verified operators in the
// background until assess denies the newly listed one.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createLogger } from '../../server/logger';
import { MemoryPubSub } from '../../server/stores/kv';
import { WalletSanctionsService } from '../../server/sanctions/walletSanctions';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { claimWallet, evmAddress } from './seed';
import { completeKyc, createSession, SESSION_TABLES } from '../sessions/support';
import { eventually } from '../support/eventually';

const DATA = path.resolve(__dirname, '../../server/sanctions/data');
// OFAC's file ends with a DOS end-of-file character (0x1a); dropped so a test can append listings after it.
const REAL_SDN = zlib
  .gunzipSync(fs.readFileSync(path.join(DATA, 'sdn.csv.gz')))
  .toString('utf8')
  .replaceAll('\x1a', '');
const REAL_ALT = zlib.gunzipSync(fs.readFileSync(path.join(DATA, 'alt.csv.gz'))).toString('utf8');
const LAZARUS_ETH = '0x098B716B8Aaf21512996dC57EB0615e2383E2f96';

// Parsing and indexing the full real list takes seconds on a shared machine.
jest.setTimeout(120_000);

/** Serves named files with ETag / Last-Modified, answers 304 to a matching conditional GET, or fails on demand. */
class OfacMirror {
  files = new Map<string, string>();
  failing = false;
  /** Send no ETag, only Last-Modified (as some mirrors do), so a client can only revalidate by date. */
  dateOnly = false;
  requests: Array<{ path: string; conditional: boolean; status: number }> = [];
  private server = http.createServer((req, res) => {
    const body = this.files.get(req.url ?? '');
    const conditional = Boolean(req.headers['if-none-match'] || req.headers['if-modified-since']);
    const answer = (status: number, headers: Record<string, string> = {}, text = '') => {
      this.requests.push({ path: req.url ?? '', conditional, status });
      res.writeHead(status, headers).end(text);
    };
    if (this.failing) return answer(503, {}, 'maintenance');
    if (body === undefined) return answer(404);
    const etag = `"${crypto.createHash('sha1').update(body).digest('hex')}"`;
    const lastModified = this.lastModified.get(req.url ?? '') ?? 'Fri, 03 May 2024 12:00:00 GMT';
    if (this.dateOnly) {
      const since = req.headers['if-modified-since'];
      if (since && Date.parse(since) >= Date.parse(lastModified)) return answer(304, { 'Last-Modified': lastModified });
      return answer(200, { 'Last-Modified': lastModified, 'Content-Type': 'text/csv' }, body);
    }
    if (req.headers['if-none-match'] === etag) return answer(304, { ETag: etag });
    answer(200, { ETag: etag, 'Last-Modified': lastModified, 'Content-Type': 'text/csv' }, body);
  });
  /** Per-path Last-Modified dates (a fixed date otherwise). */
  lastModified = new Map<string, string>();
  url = '';

  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close() {
    this.server.closeAllConnections();
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('wallet list from a live SDN.CSV source', () => {
  let h: Harness;
  const mirror = new OfacMirror();
  const logger = createLogger('silent');
  const clock = new TestClock(new Date('2026-11-01T00:00:00.000Z'));

  beforeAll(async () => {
    await mirror.start();
    h = await createHarness();
  });
  beforeEach(() => resetTables(h.deps, ['sanctions_wallet_lists']));
  afterAll(async () => {
    await h.close();
    await mirror.close();
  });

  const service = (maxAgeHours: number | null = null) =>
    new WalletSanctionsService({
      store: h.deps.repos.walletLists,
      pubsub: new MemoryPubSub(),
      logger,
      now: () => clock.now(),
      source: `${mirror.url}/sdn.csv`,
      format: 'auto',
      refreshSeconds: 3600,
      maxAgeHours,
    });

  it('refreshes with conditional requests, swaps in a changed file, and keeps the last good list through failures', async () => {
    mirror.failing = false;
    mirror.files.set('/sdn.csv', REAL_SDN);
    const s = service();
    await s.start();
    expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '27307', listed_at: null });
    const first = s.status();
    expect(first).toMatchObject({ loaded: true, format: 'sdn_csv', source: `${mirror.url}/sdn.csv`, as_of: '2026-11-01T00:00:00.000Z' });
    expect(first.entries).toBeGreaterThan(250);
    expect(mirror.requests.at(-1)).toEqual({ path: '/sdn.csv', conditional: false, status: 200 });

    // Unchanged upstream: a 304, no parsing, and the fetch-time as_of moves (SDN.CSV states no publication date).
    clock.advance(3_600_000);
    expect(await s.refresh()).toBe('unchanged');
    expect(mirror.requests.at(-1)).toEqual({ path: '/sdn.csv', conditional: true, status: 304 });
    expect(s.status().as_of).toBe('2026-11-01T01:00:00.000Z');

    // OFAC publishes a new entry with a new address.
    const added = evmAddress();
    mirror.files.set(
      '/sdn.csv',
      `${REAL_SDN.trimEnd()}\r\n99001,"NEW LISTING LTD",-0- ,"CYBER2",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,"Digital Currency Address - ETH ${added}; Secondary sanctions risk."\r\n`,
    );
    expect(s.check('evm', added.toLowerCase())).toEqual({ status: 'clear' });
    expect(await s.refresh()).toBe('updated');
    expect(s.check('evm', added.toLowerCase())).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '99001', listed_at: null });
    expect((await h.deps.repos.walletLists.latestInfo())?.entry_count).toBe(first.entries + 1);

    // The source fails: the last good list stays in use here, and a new instance starts with it.
    mirror.failing = true;
    expect(await s.refresh()).toBe('failed');
    expect(s.status().last_refresh_error).toMatch(/answered 503/);
    expect(s.check('evm', added.toLowerCase())).toMatchObject({ sanctioned: true, sdn_uid: '99001' });
    const restarted = service();
    await restarted.start();
    expect(restarted.check('evm', added.toLowerCase())).toMatchObject({ sanctioned: true, sdn_uid: '99001' });
    await Promise.all([s.stop(), restarted.stop()]);
  });

  it('treats a list older than SANCTIONS_MAX_AGE_HOURS as unavailable until the source confirms it again', async () => {
    mirror.failing = false;
    mirror.files.set('/sdn.csv', REAL_SDN);
    const s = service(2);
    await s.start();
    expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toMatchObject({ sanctioned: true });
    expect(s.check('evm', evmAddress())).toEqual({ status: 'clear' });

    mirror.failing = true;
    clock.advance(3 * 3_600_000);
    expect(await s.refresh()).toBe('failed');
    expect(s.check('evm', evmAddress())).toEqual({ status: 'unavailable' });
    expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toEqual({ status: 'unavailable' });
    expect(s.freshness()).toMatchObject({
      list: 'wallets',
      status: 'stale',
      age_seconds: 3 * 3600,
      max_age_hours: 2,
      reason: expect.stringContaining('older than SANCTIONS_MAX_AGE_HOURS=2'),
    });

    mirror.failing = false;
    expect(await s.refresh()).toBe('unchanged'); // a 304 confirms the list is still current
    expect(s.freshness()).toMatchObject({ status: 'ok', age_seconds: 0 });
    expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toMatchObject({ sanctioned: true });
    await s.stop();
  });

  it('reports a stale list in /readyz (degraded, naming the list and why) and /metrics', async () => {
    const stale = await createHarness({ env: { SANCTIONS_MAX_AGE_HOURS: '24', SANCTIONS_NAME_SOURCE: undefined, SANCTIONS_NAME_ALT_SOURCE: undefined } });
    try {
      // The bundled snapshots are from 2024: far older than a day.
      const ready = await request(stale.app).get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ status: 'degraded', failed: ['sanctions_wallets', 'sanctions_names'] });
      expect(ready.body.sanctions.wallets).toMatchObject({ status: 'stale', source: 'bundled', as_of: '2024-09-27T00:00:00.000Z', max_age_hours: 24 });
      expect(ready.body.sanctions.wallets.reason).toMatch(/^the list is \d+ days old \(as of 2024-09-27\), older than SANCTIONS_MAX_AGE_HOURS=24$/);
      expect(ready.body.sanctions.names).toMatchObject({ status: 'stale', source: 'bundled', as_of: '2024-05-03T00:00:00.000Z' });
      const metrics = (await request(stale.app).get('/metrics')).text;
      expect(metrics).toMatch(/^kya_sanctions_list_age_seconds\{list="wallets"\} \d{8,}$/m);
      expect(metrics).toMatch(/^kya_sanctions_list_age_seconds\{list="names"\} \d{8,}$/m);
      expect(metrics).toContain(`kya_sanctions_list_entries{list="wallets"} ${ready.body.sanctions.wallets.entries}`);
      const { apiKey } = await createMerchant(stale.deps);
      const res = await request(stale.app)
        .post('/v1/assess')
        .set('X-API-Key', apiKey)
        .send({ address: evmAddress(), signer: { address: LAZARUS_ETH, network: 'evm' } });
      expect(res.body).toMatchObject({ decision: 'deny', decision_reasons: ['sanctions_check_unavailable'], signer_sanctions: { status: 'unavailable' } });
    } finally {
      await stale.close();
    }
  });
});

describe('name list from live SDN.CSV + ALT.CSV sources', () => {
  const mirror = new OfacMirror();
  let h: Harness;

  beforeAll(async () => {
    await mirror.start();
    mirror.files.set('/sdn.csv', REAL_SDN);
    mirror.files.set('/alt.csv', REAL_ALT);
    h = await createHarness({ env: { SANCTIONS_NAME_SOURCE: `${mirror.url}/sdn.csv`, SANCTIONS_NAME_ALT_SOURCE: `${mirror.url}/alt.csv` } });
  });
  afterAll(async () => {
    await h.close();
    await mirror.close();
  });

  it('refreshes with 304s, and a change that lists a verified operator flags them in the background until assess denies them', async () => {
    await h.deps.services.screening.refresh(); // joins the first fetch when it is still under way
    await resetTables(h.deps, SESSION_TABLES);
    expect(h.deps.services.screening.freshness()).toMatchObject({ status: 'ok', source: `${mirror.url}/sdn.csv` });
    expect(await h.deps.services.screening.refresh()).toBe('unchanged');
    expect(mirror.requests.slice(-2)).toEqual([
      { path: '/sdn.csv', conditional: true, status: 304 },
      { path: '/alt.csv', conditional: true, status: 304 },
    ]);

    const { apiKey } = await createMerchant(h.deps);
    const s = await createSession(h, apiKey);
    await completeKyc(h, s.session_id, { full_name: 'Carla Newlisted', date_of_birth: '1970-05-05', country: 'ES', document_number: 'ES445566' });
    const { operator_account_id: operatorId } = await h.deps.db('sessions').where({ id: s.session_id }).first();
    const before = await h.deps.db('accounts').where({ id: operatorId }).first();
    expect(before).toMatchObject({ kyc_status: 'verified', sanctions_status: 'clear', sanctions_match: null });
    const wallet = evmAddress();
    await claimWallet(h.deps, operatorId, wallet);
    const assess = () =>
      request(h.app)
        .post('/v1/assess')
        .set('X-API-Key', apiKey)
        .send({ address: wallet, policy: { require_sanctions_clear: true } });
    expect((await assess()).body.decision).toBe('allow');

    mirror.files.set(
      '/sdn.csv',
      `${REAL_SDN.trimEnd()}\r\n99002,"NEWLISTED, Carla","individual","SDGT",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,"DOB 05 May 1970; nationality Spain."\r\n`,
    );
    expect(await h.deps.services.screening.refresh()).toBe('updated');
    // The re-screen runs as a background job (BullMQ here): wait for it to reach the operator.
    const after = await eventually(async () => {
      const account = await h.deps.db('accounts').where({ id: operatorId }).first();
      return account.sanctions_status === 'flagged' ? account : null;
    }, 20_000).catch(async (err: Error) => {
      // Says which step stalled when it does: the list in memory, the stored lists, the operator's row.
      const lists = await h.deps.db('sanctions_name_lists').select('id', 'source', 'sha256', 'loaded_at').orderBy('id', 'desc').limit(3);
      const account = await h.deps.db('accounts').where({ id: operatorId }).select('sanctions_status', 'sanctions_checked_at').first();
      throw new Error(
        `${err.message}: screening ${JSON.stringify(h.deps.services.screening.status())}, lists ${JSON.stringify(lists)}, operator ${JSON.stringify(account)}`,
      );
    });
    expect(after.sanctions_status).toBe('flagged');
    expect(after.sanctions_checked_at.getTime()).toBeGreaterThan(before.sanctions_checked_at.getTime());
    expect(after.sanctions_match).toMatchObject({ uid: '99002', name: 'NEWLISTED, Carla', score: 1, dob: 'match', country: 'match' });
    const denied = await assess();
    expect(denied.body.decision).toBe('deny');
    expect(denied.body.decision_reasons).toEqual(['sanctions_flagged']);
  });

  it('keeps the last good name list through a failing source, and a new instance starts with it, never an older one', async () => {
    const listed = { fullName: 'Diego Lastgood', dobYear: 1966, country: 'AR' };
    mirror.files.set(
      '/sdn.csv',
      `${REAL_SDN.trimEnd()}\r\n99003,"LASTGOOD, Diego","individual","SDGT",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,"DOB 1966; nationality Argentina."\r\n`,
    );
    expect(await h.deps.services.screening.refresh()).toBe('updated');
    expect(h.deps.services.screening.screen(listed)).toMatchObject({ status: 'flagged', best: { uid: '99003' } });

    mirror.failing = true;
    try {
      expect(await h.deps.services.screening.refresh()).toBe('failed');
      expect(h.deps.services.screening.status()).toMatchObject({ last_refresh_error: expect.stringMatching(/503/) });
      expect(h.deps.services.screening.screen(listed)).toMatchObject({ status: 'flagged', best: { uid: '99003' } });
      // A new instance while the source is down: the newest stored list, not the bundled snapshot (which lacks 99003).
      const fresh = await createHarness({ env: { SANCTIONS_NAME_SOURCE: `${mirror.url}/sdn.csv`, SANCTIONS_NAME_ALT_SOURCE: `${mirror.url}/alt.csv` } });
      try {
        await fresh.deps.services.screening.refresh();
        expect(fresh.deps.services.screening.screen(listed)).toMatchObject({ status: 'flagged', best: { uid: '99003' } });
        expect(fresh.deps.services.screening.freshness()).toMatchObject({
          source: `${mirror.url}/sdn.csv`,
          entries: h.deps.services.screening.freshness().entries,
        });
      } finally {
        await fresh.close();
      }
    } finally {
      mirror.failing = false;
    }
  });
});

describe('a fetched list that could not be stored', () => {
  const mirror = new OfacMirror();
  beforeAll(async () => {
    await mirror.start();
    mirror.files.set('/sdn.csv', REAL_SDN);
    mirror.files.set('/alt.csv', REAL_ALT);
  });
  afterAll(() => mirror.close());

  /** Makes the next `save` of a repository fail as a timed-out statement would. */
  function failNextSave(repo: { save: (...args: never[]) => Promise<number> }) {
    const original = repo.save.bind(repo);
    repo.save = async () => {
      repo.save = original;
      throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    };
  }

  it('is stored, and re-screened against, on the next refresh even though the source answers 304', async () => {
    const h = await createHarness({ env: { SANCTIONS_NAME_SOURCE: `${mirror.url}/sdn.csv`, SANCTIONS_NAME_ALT_SOURCE: `${mirror.url}/alt.csv` } });
    try {
      await h.deps.services.screening.refresh();
      mirror.files.set('/sdn.csv', `${REAL_SDN.trimEnd()}\r\n99005,"UNSTORED, Ines","individual","SDGT",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- \r\n`);
      failNextSave(h.deps.repos.nameLists);
      const queued = jest.spyOn(h.deps.jobs, 'add');
      expect(await h.deps.services.screening.refresh()).toBe('updated');
      expect((await h.deps.repos.nameLists.latestInfo())?.entry_count).not.toBe(h.deps.services.screening.freshness().entries);
      expect(queued).not.toHaveBeenCalled();

      expect(await h.deps.services.screening.refresh()).toBe('unchanged');
      expect(mirror.requests.slice(-2).map((r) => r.status)).toEqual([304, 304]);
      const stored = await h.deps.repos.nameLists.latestInfo();
      expect(stored).toMatchObject({ source: `${mirror.url}/sdn.csv`, entry_count: h.deps.services.screening.freshness().entries });
      expect((await h.deps.repos.nameLists.entries({ id: stored!.id }))!.some((e) => e.uid === '99005')).toBe(true);
      expect(queued).toHaveBeenCalledWith('screening.rescreen', { sha256: stored!.sha256 }, expect.anything());
    } finally {
      mirror.files.set('/sdn.csv', REAL_SDN);
      await h.close();
    }
  });

  it('is stored on the next refresh for the wallet list too', async () => {
    const h = await createHarness();
    try {
      await resetTables(h.deps, ['sanctions_wallet_lists']);
      const s = new WalletSanctionsService({
        store: h.deps.repos.walletLists,
        pubsub: new MemoryPubSub(),
        logger: createLogger('silent'),
        now: () => new Date(),
        source: `${mirror.url}/sdn.csv`,
        format: 'auto',
        refreshSeconds: 3600,
        maxAgeHours: null,
      });
      failNextSave(h.deps.repos.walletLists);
      await s.start();
      expect(s.check('evm', LAZARUS_ETH.toLowerCase())).toMatchObject({ sanctioned: true });
      expect(await h.deps.repos.walletLists.latestInfo()).toBeUndefined();
      expect(await s.refresh()).toBe('unchanged');
      expect(await h.deps.repos.walletLists.latestInfo()).toMatchObject({ source: `${mirror.url}/sdn.csv`, entry_count: s.status().entries });
      await s.stop();
    } finally {
      await h.close();
    }
  });
});

describe('a source that revalidates by date only (Last-Modified, no ETag)', () => {
  const mirror = new OfacMirror();
  let h: Harness;

  beforeAll(async () => {
    await mirror.start();
    mirror.dateOnly = true;
    mirror.files.set('/sdn.csv', REAL_SDN);
    h = await createHarness();
  });
  beforeEach(() => resetTables(h.deps, ['sanctions_wallet_lists']));
  afterAll(async () => {
    await h.close();
    await mirror.close();
  });

  it('sends If-Modified-Since, takes a 304 as unchanged, and loads the file again once its date moves', async () => {
    const s = new WalletSanctionsService({
      store: h.deps.repos.walletLists,
      pubsub: new MemoryPubSub(),
      logger: createLogger('silent'),
      now: () => new Date('2026-11-01T00:00:00.000Z'),
      source: `${mirror.url}/sdn.csv`,
      format: 'auto',
      refreshSeconds: 3600,
      maxAgeHours: null,
    });
    await s.start();
    try {
      expect(mirror.requests.at(-1)).toEqual({ path: '/sdn.csv', conditional: false, status: 200 });
      expect(await s.refresh()).toBe('unchanged');
      expect(mirror.requests.at(-1)).toEqual({ path: '/sdn.csv', conditional: true, status: 304 });
      const added = evmAddress();
      mirror.files.set(
        '/sdn.csv',
        `${REAL_SDN.trimEnd()}\r\n99004,"DATED LISTING LTD",-0- ,"CYBER2",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,"Digital Currency Address - ETH ${added}."\r\n`,
      );
      mirror.lastModified.set('/sdn.csv', 'Mon, 02 Nov 2026 09:00:00 GMT');
      expect(await s.refresh()).toBe('updated');
      expect(mirror.requests.at(-1)).toEqual({ path: '/sdn.csv', conditional: true, status: 200 });
      expect(s.check('evm', added.toLowerCase())).toMatchObject({ sanctioned: true, sdn_uid: '99004' });
    } finally {
      await s.stop();
    }
  });
});
