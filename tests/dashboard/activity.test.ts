// The Activity page's operator credentials: what is attributable to a merchant (credentials minted with its own
// API key, and those its verification sessions delivered to operators), with status from credentialStatus(),
// and nothing of other merchants' sessions or of agent-started sessions.
import request from 'supertest';
import { createMerchant, useClockedHarness } from '../support/harness';
import { SESSION_TABLES } from '../sessions/support';
import { DAY_MS, seedRefreshChain, verifyAccount } from '../credentials/fixtures';
import { operatorHandle } from '../../server/crypto';

describe('dashboard activity: operator credentials', () => {
  const { h, clock } = useClockedHarness('2026-05-01T10:00:00.000Z', SESSION_TABLES);

  const mintOwn = async (apiKey: string, body: Record<string, unknown>) =>
    (await request(h.app).post('/v1/credentials').set('X-API-Key', apiKey).send(body).expect(200)).body as { id: string; credential: string; prefix: string };

  async function operator(name: string) {
    return h.deps.repos.accounts.insert({ account: { name, kind: 'operator' } });
  }

  /** A credential delivered by a verification session `merchantId` started, to `operatorId`. */
  async function sessionCredential(merchantId: string, operatorId: string) {
    const { row } = await h.deps.services.sessions.create({ kind: 'merchant', merchantAccountId: merchantId });
    await h.deps.db('sessions').where({ id: row.id }).update({ operator_account_id: operatorId, status: 'consumed' });
    return h.deps.services.credentials.mint({ accountId: operatorId, ttlSeconds: 86_400, source: 'session', sessionId: row.id });
  }

  it('lists the merchant’s own and its sessions’ credentials with operator handle, status and last use, and nothing else', async () => {
    const m = await createMerchant(h.deps);
    const other = await createMerchant(h.deps, { name: 'Someone Else' });
    await verifyAccount(h.deps, m.accountId);
    const alice = await operator('alice');
    const bob = await operator('bob');

    const expiring = await mintOwn(m.apiKey, { label: 'nightly', ttl_days: 1 });
    const bobs = await sessionCredential(m.accountId, bob.id);
    clock.advance(2 * DAY_MS); // `expiring` and bob's are now past their expiry
    const revoked = await mintOwn(m.apiKey, { label: 'old-bot' });
    await request(h.app).delete(`/v1/credentials/${revoked.id}`).set('X-API-Key', m.apiKey).expect(200);
    const alices = await sessionCredential(m.accountId, alice.id);
    const alicesRevoked = await sessionCredential(m.accountId, alice.id);
    await h.deps.services.credentials.revoke({ accountId: alice.id, idOrToken: alicesRevoked.credential.id });
    const live = await mintOwn(m.apiKey, { label: 'ci-bot', ttl_days: 30 });
    // Not the merchant's: another merchant's session, and an agent-started (public) session's refresh chain.
    await sessionCredential(other.accountId, alice.id);
    await seedRefreshChain(h.deps, alice.id, 1);

    clock.advance(60_000);
    expect((await h.deps.services.credentials.resolve(live.credential)).status).toBe('live');
    expect((await h.deps.services.credentials.resolve(alices.token)).status).toBe('live');
    await h.deps.services.credentials.flushTouches();

    const { sessionId } = (await h.deps.services.dashboard.signInWithKey(m.apiKey))!;
    const page = await request(h.app).get('/dashboard/activity').set('Cookie', `kya_dashboard=${sessionId}`);
    expect(page.status).toBe(200);
    const table = /<table id="credentials"[^>]*>([\s\S]*?)<\/table>/.exec(page.text)![1];
    const rows = [...table.matchAll(/<tr><td>([\s\S]*?)<\/td><\/tr>/g)].map((r) => r[1].split('</td><td>').map((cell) => cell.replace(/<[^>]+>/g, '')));
    const handle = (operatorId: string) => operatorHandle(h.deps.config.serverSecret, operatorId, m.accountId);
    const t = (iso: string) => iso.slice(0, 16).replace('T', ' ');
    const created = expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d$/); // the database's own clock
    const at = (ms: number, ttlDays: number) => t(new Date(Date.parse('2026-05-01T10:00:00.000Z') + ms + ttlDays * DAY_MS).toISOString());
    expect(rows).toEqual([
      [`${live.prefix} ci-bot`, live.id.slice(0, 8), 'this account', 'API', 'live', created, at(2 * DAY_MS, 30), '2026-05-03 10:01'],
      [alicesRevoked.credential.prefix, alicesRevoked.credential.id.slice(0, 8), handle(alice.id), 'session', 'expired', created, at(2 * DAY_MS, 1), 'never'],
      [alices.credential.prefix, alices.credential.id.slice(0, 8), handle(alice.id), 'session', 'live', created, at(2 * DAY_MS, 1), '2026-05-03 10:01'],
      [`${revoked.prefix} old-bot`, revoked.id.slice(0, 8), 'this account', 'API', 'revoked', created, expect.any(String), 'never'],
      [bobs.credential.prefix, bobs.credential.id.slice(0, 8), handle(bob.id), 'session', 'expired', created, at(0, 1), 'never'],
      [`${expiring.prefix} nightly`, expiring.id.slice(0, 8), 'this account', 'API', 'expired', created, at(0, 1), 'never'],
    ]);
    expect(page.text).not.toContain(alice.id);
  });

  it('says so when there are no credentials', async () => {
    const m = await createMerchant(h.deps);
    const { sessionId } = (await h.deps.services.dashboard.signInWithKey(m.apiKey))!;
    const page = await request(h.app).get('/dashboard/activity').set('Cookie', `kya_dashboard=${sessionId}`);
    expect(page.text).toContain('Operator credentials</h2>');
    expect(page.text).toContain('No credentials yet.');
  });
});
