import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jaroWinkler, nameScore, normaliseName } from '../../server/screening/match';
import { fetchNameList, parsePlainList, qualifiersFromRemarks, type FetchedNameList } from '../../server/screening/nameList';
import { runAdmin } from '../../server/cli/admin';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { completeKyc, createSession, FIXTURES, SCREENING_ENV, SESSION_TABLES } from './support';

describe('name matching', () => {
  it('computes Jaro-Winkler like the reference values', () => {
    expect(jaroWinkler('MARTHA', 'MARHTA')).toBeCloseTo(0.9611, 4);
    expect(jaroWinkler('DWAYNE', 'DUANE')).toBeCloseTo(0.84, 2);
    expect(jaroWinkler('DIXON', 'DICKSONX')).toBeCloseTo(0.8133, 4);
    expect(jaroWinkler('ABC', 'XYZ')).toBe(0);
  });

  it('normalises case, accents and punctuation and ignores token order', () => {
    expect(normaliseName("  José  O'Brien-Núñez ")).toBe('JOSE OBRIEN NUNEZ');
    expect(nameScore(normaliseName('Vorontsov Dmitri Aleksandrovich'), 'DMITRI ALEKSANDROVICH VORONTSOV')).toBe(1);
    expect(nameScore(normaliseName('Dmitri Vorontsov'), 'VORONTSOV DMITRI ALEKSANDROVICH')).toBeCloseTo(0.96, 5); // no patronymic
    expect(nameScore(normaliseName('Dmitry Vorontsow'), 'DMITRI ALEKSANDROVICH VORONTSOV')).toBeGreaterThanOrEqual(0.85);
    expect(nameScore(normaliseName('Alice Example'), 'DMITRI ALEKSANDROVICH VORONTSOV')).toBeLessThan(0.7);
  });

  it('reads DOB years and nationality qualifiers from SDN remarks', () => {
    expect(qualifiersFromRemarks('DOB 14 Mar 1971; POB Perm, Russia; nationality Russia; Gender Male.')).toEqual({ dobYears: [1971], countries: ['RU'] });
    expect(qualifiersFromRemarks('DOB 1980 to 1982; citizen Korea, North.')).toEqual({ dobYears: [1980, 1981, 1982], countries: ['KP'] });
  });

  it('loads SDN.CSV with ALT.CSV aliases, and plain lists', async () => {
    const list = (await fetchNameList({ source: path.join(FIXTURES, 'SDN.CSV'), altSource: path.join(FIXTURES, 'ALT.CSV') }, null)) as FetchedNameList;
    expect(list.entries).toHaveLength(5);
    expect(list.entries.find((e) => e.uid === '2674')).toMatchObject({ dobYears: [1965], countries: ['NG'], names: expect.arrayContaining(['EMEKA ADEYEMI']) });
    const plain = parsePlainList(fs.readFileSync(path.join(FIXTURES, 'names.txt'), 'utf8'));
    expect(plain[0]).toMatchObject({
      name: 'Marguerite Delacroix-Villeneuve',
      dobYears: [1958],
      countries: ['FR'],
      names: expect.arrayContaining(['MARGOT VILLENEUVE']),
    });
  });
});

describe('screening at KYC time and re-screening', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ env: SCREENING_ENV });
  });
  beforeEach(() => resetTables(h.deps, SESSION_TABLES));
  afterAll(() => h.close());

  const screen = (fullName: string, dobYear: number | null, country: string | null) => h.deps.services.screening.screen({ fullName, dobYear, country });

  it('flags exact, reordered, alias and misspelt matches', () => {
    expect(screen('Dmitri Aleksandrovich Vorontsov', 1971, 'RU')).toMatchObject({ status: 'flagged', best: { uid: '36', score: 1 } });
    expect(screen('Emeka Adeyemi', 1965, 'NG')).toMatchObject({ status: 'flagged', best: { uid: '2674' } });
    expect(screen('Olesia Taranenko', 1990, 'UA')).toMatchObject({ status: 'flagged', best: { uid: '9120' } });
  });

  it('lowers the score for a disjoint DOB year and country (qualifiers)', () => {
    // Listed as "HALVORSEN, Ingrid Marie": the missing middle name costs 0.04, each disjoint qualifier 0.1.
    const both = screen('Ingrid Halvorsen', 1995, 'SE');
    expect(both.status).toBe('clear');
    expect(both).toMatchObject({ band: 'review', best: { uid: '173', score: 0.76, name_score: 0.96, dob: 'mismatch', country: 'mismatch' } });
    expect(screen('Ingrid Halvorsen', 1981, 'NO')).toMatchObject({ status: 'flagged', best: { score: 0.96, dob: 'match', country: 'match' } });
    expect(screen('Ingrid Halvorsen', 1995, 'NO')).toMatchObject({
      status: 'flagged',
      best: {
        uid: '173',
        name: 'HALVORSEN, Ingrid Marie',
        matched_name: 'HALVORSEN INGRID MARIE',
        score: 0.86,
        dob: 'mismatch',
        country: 'match',
        listed_dob_years: [1980, 1981, 1982],
        listed_countries: ['NO'],
      },
    });
  });

  it('clears unrelated names', () => {
    expect(screen('Alice Example', 1990, 'DE')).toMatchObject({ status: 'clear', band: 'none' });
  });

  it('re-screens verified operators against an updated list (npm run admin -- screening rescreen)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-screening-'));
    const listFile = path.join(dir, 'names.txt');
    fs.writeFileSync(listFile, '# empty for now\nSomeone Unrelated Entirely\n');
    const local = await createHarness({ env: { SANCTIONS_NAME_SOURCE: listFile, SANCTIONS_NAME_ALT_SOURCE: '' } });
    try {
      const { apiKey } = await createMerchant(local.deps);
      const s = await createSession(local, apiKey);
      await completeKyc(local, s.session_id, { full_name: 'Carla Newlisted', date_of_birth: '1970-05-05', country: 'ES', document_number: 'ES445566' });
      const session = await local.deps.db('sessions').where({ id: s.session_id }).first();
      expect(session.status).toBe('verified');

      fs.appendFileSync(listFile, 'Carla Newlisted|1970|ES\n');
      const result = (await runAdmin(['screening', 'rescreen'], local.deps)) as { screened: number; flagged: number; flagged_accounts: string[] };
      expect(result).toMatchObject({ screened: 1, flagged: 1, flagged_accounts: [session.operator_account_id] });
      const operator = await local.deps.db('accounts').where({ id: session.operator_account_id }).first();
      expect(operator.sanctions_status).toBe('flagged');
    } finally {
      await local.close();
    }
  });

  it('leaves operators untouched (unscreened once stale) when no list can be loaded', async () => {
    await resetTables(h.deps, ['sanctions_name_lists']); // no last good list persisted by an earlier test
    const local = await createHarness({ env: { SANCTIONS_NAME_SOURCE: '/nonexistent/names.txt' } });
    try {
      const { apiKey } = await createMerchant(local.deps);
      const s = await createSession(local, apiKey);
      await completeKyc(local, s.session_id);
      const session = await local.deps.db('sessions').where({ id: s.session_id }).first();
      const operator = await local.deps.db('accounts').where({ id: session.operator_account_id }).first();
      expect(operator).toMatchObject({ kyc_status: 'verified', sanctions_status: null, sanctions_checked_at: null });
      const result = await runAdmin(['screening', 'rescreen'], local.deps);
      expect(result).toMatchObject({ screened: 0, skipped: 1, list: null });
    } finally {
      await local.close();
    }
  });
});
