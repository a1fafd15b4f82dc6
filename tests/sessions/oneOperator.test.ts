// One person, one operator under concurrency: two instances (two apps on one database) finishing verifications
// of the same person at the same moment end on a single operator account.
import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { createSession, SESSION_TABLES } from './support';
import { csrfFrom } from '../verify/support';

jest.setTimeout(60_000);

describe('one operator per verified person', () => {
  let a: Harness;
  let b: Harness;
  beforeAll(async () => {
    [a, b] = await Promise.all([createHarness(), createHarness()]);
  });
  beforeEach(() => resetTables(a.deps, SESSION_TABLES));
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  /** A session on `h`, with the CSRF pair its verify page handed out, ready to submit the identity form. */
  async function ready(h: Harness, apiKey: string) {
    const s = await createSession(h, apiKey);
    const page = await request(h.app).get(`/verify/${s.session_id}`);
    return { h, id: s.session_id, ...csrfFrom(page) };
  }

  it('10 concurrent pairs of verifications of the same person across two instances give exactly one operator each', async () => {
    const { apiKey } = await createMerchant(a.deps);
    const people = Array.from({ length: 10 }, (_, i) => ({
      full_name: `Pair Person ${String.fromCharCode(65 + i)}`,
      date_of_birth: `1980-01-${String(i + 10)}`,
      country: 'DE',
      document_number: `DOC${1000 + i}`,
    }));
    const pairs = await Promise.all(people.map(async (person) => ({ person, sessions: [await ready(a, apiKey), await ready(b, apiKey)] })));

    const submitted = await Promise.all(
      pairs.flatMap(({ person, sessions }) =>
        sessions.map((s) =>
          request(s.h.app)
            .post(`/verify/${s.id}/identity`)
            .set('Cookie', s.cookie)
            .type('form')
            .send({ csrf: s.token, ...person }),
        ),
      ),
    );
    expect(submitted.map((r) => r.status)).toEqual(Array(20).fill(303));

    for (const { sessions } of pairs) {
      const rows = await a.deps
        .db('sessions')
        .whereIn(
          'id',
          sessions.map((s) => s.id),
        )
        .select('status', 'operator_account_id');
      expect(rows.map((r) => r.status)).toEqual(['verified', 'verified']);
      expect(rows[0].operator_account_id).toBe(rows[1].operator_account_id);
    }
    const operators = await a.deps.db('accounts').where({ kind: 'operator' }).select('identity_fingerprint');
    expect(operators).toHaveLength(10);
    expect(new Set(operators.map((o) => o.identity_fingerprint)).size).toBe(10);
  });
});
