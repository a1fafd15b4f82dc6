// Webhook delivery end to end on real PostgreSQL + BullMQ/Redis: events emitted by the real session,
// credential and re-screening flows, signed deliveries, retries with backoff, the attempt log, and the
// address policy in production mode.
import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { verifyWebhook } from '../../middleware';
import { encryptJson } from '../../server/crypto';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { ALICE, FIXTURES, SESSION_TABLES, completeKyc, createSession } from '../sessions/support';
import { verifyAccount } from '../credentials/fixtures';
import { startReceiver, type Receiver } from './receiver';
import { eventually } from '../support/eventually';
import { parseWebhookForm } from '../../server/dashboard/forms';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../shared/webhookSignature';

const TABLES = [...SESSION_TABLES, 'webhook_events'];
const FAST = { WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_SWEEP_SECONDS: '3600' };

async function attemptsOf(h: Harness, endpointId: string) {
  return h.deps
    .db('webhook_attempts as a')
    .join('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .where('d.endpoint_id', endpointId)
    .orderBy('a.id', 'asc')
    .select('a.status_code', 'a.error');
}

describe('webhook deliveries', () => {
  let h: Harness;
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    h = await createHarness({ env: FAST });
  });
  beforeEach(() => resetTables(h.deps, TABLES));
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });
  afterAll(() => h.close());

  async function merchantWithEndpoint(statuses: number[], types: WebhookEventType[] = [...WEBHOOK_EVENT_TYPES]) {
    receiver = await startReceiver(statuses);
    const m = await createMerchant(h.deps, { tier: 'enterprise' });
    const { endpoint, secret } = await h.deps.services.webhooks.addEndpoint(m.accountId, { url: receiver.url, eventTypes: types });
    return { ...m, endpoint, secret, receiver };
  }

  it('delivers a signed session.verified event when a session completes, with the event id and type in the body', async () => {
    const m = await merchantWithEndpoint([200]);
    const session = await createSession(h, m.apiKey, { context: 'order-42' });
    await completeKyc(h, session.session_id);
    await m.receiver.waitFor(1);
    const [got] = m.receiver.received;
    const event = verifyWebhook(got.body, got.headers['kya-signature'], m.secret, { toleranceSeconds: 60 });
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_[0-9A-Za-z]+$/),
      type: 'session.verified',
      created: expect.any(Number),
      data: {
        session_id: session.session_id,
        status: 'verified',
        context: 'order-42',
        operator_handle: expect.stringMatching(/^oph_/),
        completed_at: expect.any(String),
      },
    });
    expect(got.headers['kya-event-id']).toBe(event.id);
    expect(got.headers['content-type']).toBe('application/json');
    await eventually(async () => (await h.deps.services.webhooks.deliveries(m.accountId, m.endpoint.id))[0]?.status === 'succeeded', 10_000);
    const [delivery] = await h.deps.services.webhooks.deliveries(m.accountId, m.endpoint.id);
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200, type: 'session.verified' });
  });

  it('retries a receiver that fails twice, then accepts: three attempts logged, the same event id each time', async () => {
    const m = await merchantWithEndpoint([500, 503, 200]);
    const session = await createSession(h, m.apiKey);
    await completeKyc(h, session.session_id, { ...ALICE, document_number: 'FAIL-1' });
    await m.receiver.waitFor(3);
    const ids = m.receiver.received.map((r) => verifyWebhook(r.body, r.headers['kya-signature'] as string, m.secret).id);
    expect(new Set(ids).size).toBe(1);
    expect(JSON.parse(m.receiver.received[0].body).type).toBe('session.failed');
    await eventually(async () => (await h.deps.services.webhooks.deliveries(m.accountId, m.endpoint.id))[0]?.status === 'succeeded', 10_000);
    expect(await attemptsOf(h, m.endpoint.id)).toEqual([
      { status_code: 500, error: 'receiver answered 500' },
      { status_code: 503, error: 'receiver answered 503' },
      { status_code: 200, error: null },
    ]);
    expect((await h.deps.services.webhooks.deliveries(m.accountId, m.endpoint.id))[0]).toMatchObject({ attempts: 3, last_status_code: 200 });
  });

  it('gives a delivery up once its next attempt would fall outside the retry window (WEBHOOK_MAX_AGE_HOURS)', async () => {
    const clock = new TestClock(new Date());
    const timed = await createHarness({ env: { ...FAST, WEBHOOK_RETRY_BASE_MS: '500', WEBHOOK_MAX_AGE_HOURS: '72' }, overrides: { clock } });
    const failing = await startReceiver([500]);
    try {
      const m = await createMerchant(timed.deps, { tier: 'enterprise' });
      const { endpoint } = await timed.deps.services.webhooks.addEndpoint(m.accountId, { url: failing.url, eventTypes: ['session.verified'] });
      await timed.deps.db.transaction((trx) =>
        timed.deps.services.webhooks.emit({ accountId: m.accountId, type: 'session.verified', data: { session_id: 'vs_window' } }, trx),
      );
      await eventually(async () => {
        const [d] = await timed.deps.services.webhooks.deliveries(m.accountId, endpoint.id);
        return d?.status === 'pending' && d.attempts === 1;
      }, 10_000);
      // The first retry is due 500 ms later: by then, three days and a minute have passed on the service's clock.
      clock.advance(72 * 3_600_000 + 60_000);
      await failing.waitFor(2);
      const given = await eventually(async () => {
        const [d] = await timed.deps.services.webhooks.deliveries(m.accountId, endpoint.id);
        return d?.status === 'failed' ? d : null;
      }, 10_000);
      expect(given).toMatchObject({ status: 'failed', attempts: 2, last_status_code: 500 });
      // No attempt after giving up: the next would have been due 1 s later.
      await new Promise((r) => setTimeout(r, 1500));
      expect(failing.received).toHaveLength(2);
    } finally {
      await failing.close();
      await timed.close();
    }
  });

  it('sends only the event types an endpoint chose', async () => {
    const m = await merchantWithEndpoint([200], ['session.flagged']);
    const a = await createSession(h, m.apiKey);
    await completeKyc(h, a.session_id);
    const b = await createSession(h, m.apiKey);
    await completeKyc(h, b.session_id, { ...ALICE, full_name: 'Bob Example', document_number: 'FLAG-1' });
    // Deliveries are recorded with the session's outcome: one delivery is all the receiver can ever get.
    expect(await h.deps.services.webhooks.deliveries(m.accountId, m.endpoint.id)).toHaveLength(1);
    await m.receiver.waitFor(1);
    expect(m.receiver.received.map((r) => JSON.parse(r.body).type)).toEqual(['session.flagged']);
    expect(JSON.parse(m.receiver.received[0].body).data.session_id).toBe(b.session_id);
  });

  it('emits session.expired from the sweep for a merchant session nobody looked at', async () => {
    const m = await merchantWithEndpoint([200]);
    const session = await createSession(h, m.apiKey);
    await h.deps
      .db('sessions')
      .where({ id: session.session_id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    await h.deps.services.webhooks.sweep();
    await m.receiver.waitFor(1);
    expect(JSON.parse(m.receiver.received[0].body)).toMatchObject({ type: 'session.expired', data: { session_id: session.session_id, status: 'expired' } });
    expect((await h.deps.db('sessions').where({ id: session.session_id }).first()).status).toBe('expired');
  });

  it('emits credential.revoked when a credential is revoked through the API', async () => {
    const m = await merchantWithEndpoint([200]);
    await verifyAccount(h.deps, m.accountId);
    const minted = (await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ ttl_days: 7 })).body;
    expect((await request(h.app).delete(`/v1/credentials/${minted.id}`).set('X-API-Key', m.apiKey)).status).toBe(200);
    await m.receiver.waitFor(1);
    expect(JSON.parse(m.receiver.received[0].body)).toMatchObject({
      type: 'credential.revoked',
      data: { credential_id: minted.id, revoked_credential_ids: [minted.id] },
    });
  });

  it('records no event when the state change rolls back (the outbox shares its transaction)', async () => {
    const m = await merchantWithEndpoint([200]);
    await expect(
      h.deps.db.transaction(async (trx) => {
        await h.deps.services.webhooks.emit({ accountId: m.accountId, type: 'session.verified', data: { session_id: 'vs_x' } }, trx);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(Number((await h.deps.db('webhook_events').count({ n: '*' }).first())?.n)).toBe(0);
    await h.deps.services.webhooks.sweep();
    await h.deps.jobs.idle();
    expect(m.receiver.received).toEqual([]);
  });

  it('send again delivers the same event a second time', async () => {
    const m = await merchantWithEndpoint([200]);
    await verifyAccount(h.deps, m.accountId);
    const minted = (await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ ttl_days: 7 })).body;
    await request(h.app).delete(`/v1/credentials/${minted.id}`).set('X-API-Key', m.apiKey);
    await m.receiver.waitFor(1);
    await eventually(async () => (await h.deps.services.webhooks.deliveries(m.accountId, m.endpoint.id))[0]?.status === 'succeeded', 10_000);
    const [delivery] = await h.deps.services.webhooks.deliveries(m.accountId, m.endpoint.id);
    const other = await createMerchant(h.deps);
    expect(await h.deps.services.webhooks.resend(other.accountId, delivery.id)).toBe(false);
    expect(await h.deps.services.webhooks.resend(m.accountId, delivery.id)).toBe(true);
    await m.receiver.waitFor(2);
    expect(JSON.parse(m.receiver.received[1].body).id).toBe(JSON.parse(m.receiver.received[0].body).id);
  });

  it('accepts https and localhost http endpoints outside production and refuses the rest', () => {
    const add = (url: string, eventTypes: string | string[] = ['session.verified']) => parseWebhookForm({ url, event_types: eventTypes }, false);
    expect(add('https://example.com/hooks')).toEqual({ ok: true, value: { url: 'https://example.com/hooks', eventTypes: ['session.verified'] } });
    expect(add(' http://localhost:8080/hooks ', 'session.failed')).toEqual({
      ok: true,
      value: { url: 'http://localhost:8080/hooks', eventTypes: ['session.failed'] },
    });
    const https = 'The URL must start with https:// (http:// only for localhost).';
    expect(add('http://example.com/hooks')).toEqual({ ok: false, errors: { url: https } });
    expect(add('ftp://example.com/')).toEqual({ ok: false, errors: { url: https } });
    expect(add('not a url')).toEqual({ ok: false, errors: { url: 'Enter a full URL, for example https://example.com/kya-webhooks.' } });
    expect(add('https://user:pw@example.com/')).toEqual({ ok: false, errors: { url: 'The URL must not contain a user name or password.' } });
    expect(add('https://example.com/', ['session.bogus'])).toEqual({ ok: false, errors: { event_types: 'Choose at least one event type.' } });
    expect(add('', [])).toEqual({
      ok: false,
      errors: { url: 'Enter a full URL, for example https://example.com/kya-webhooks.', event_types: 'Choose at least one event type.' },
    });
  });
});

describe('operator.sanctions_flagged', () => {
  let h: Harness;
  let receiver: Receiver;
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'kya-sdn-'));
  const sdn = path.join(dir, 'SDN.CSV');
  beforeAll(async () => {
    fs.copyFileSync(path.join(FIXTURES, 'SDN.CSV'), sdn);
    h = await createHarness({ env: { ...FAST, SANCTIONS_NAME_SOURCE: sdn, SANCTIONS_NAME_ALT_SOURCE: path.join(FIXTURES, 'ALT.CSV') } });
    await resetTables(h.deps, TABLES);
    receiver = await startReceiver([200]);
  });
  afterAll(async () => {
    await receiver.close();
    await h.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is sent to the merchant whose session verified the operator when re-screening newly flags it, once', async () => {
    const m = await createMerchant(h.deps);
    const { endpoint } = await h.deps.services.webhooks.addEndpoint(m.accountId, { url: receiver.url, eventTypes: ['operator.sanctions_flagged'] });
    const session = await createSession(h, m.apiKey);
    const applied = await completeKyc(h, session.session_id);
    expect(applied.session.status).toBe('verified');
    fs.appendFileSync(sdn, '99001,"EXAMPLE, Alice","individual","SDGT","-0-","-0-","-0-","-0-","-0-","-0-","-0-","DOB 12 Apr 1990; nationality Germany."\n');
    expect((await h.deps.services.screening.rescreenAll()).flagged).toBe(1);
    await receiver.waitFor(1);
    const body = JSON.parse(receiver.received[0].body);
    expect(body).toMatchObject({ type: 'operator.sanctions_flagged', data: { operator_handle: expect.stringMatching(/^oph_/) } });
    // A second re-screen finds the operator already flagged: no second event, so no second delivery.
    await h.deps.services.screening.rescreenAll();
    expect(await h.deps.services.webhooks.deliveries(m.accountId, endpoint.id)).toHaveLength(1);
    expect(receiver.received).toHaveLength(1);
  });
});

describe('webhook deliveries in production mode', () => {
  let h: Harness;
  let receiver: Receiver;
  beforeAll(async () => {
    h = await createHarness({ env: { ...FAST, NODE_ENV: 'production', WEBHOOK_RETRY_BASE_MS: '3600000' } });
    await resetTables(h.deps, TABLES);
    receiver = await startReceiver([200]);
  });
  afterAll(async () => {
    await receiver.close();
    await h.close();
  });

  it('refuses localhost and private-address endpoints when they are added', () => {
    const production = h.deps.config.env === 'production';
    const refusals = [
      `https://localhost:${receiver.port}/`,
      `https://127.0.0.1:${receiver.port}/`,
      'https://10.1.2.3/',
      `http://localhost:${receiver.port}/`,
    ].map((url) => parseWebhookForm({ url, event_types: 'session.verified' }, production));
    expect(refusals).toEqual([
      { ok: false, errors: { url: 'The URL must point at a public address.' } },
      { ok: false, errors: { url: 'The URL must point at a public address.' } },
      { ok: false, errors: { url: 'The URL must point at a public address.' } },
      { ok: false, errors: { url: 'The URL must start with https://.' } },
    ]);
    expect(parseWebhookForm({ url: 'https://hooks.example.com/kya', event_types: 'session.verified' }, production).ok).toBe(true);
  });

  it('never connects to a private address, even when a stored endpoint resolves to one, and logs the refusal', async () => {
    const m = await createMerchant(h.deps);
    // A name that passed the check when added but now resolves to loopback (DNS can change under us).
    const endpoint = await h.deps.repos.webhooks.insertEndpoint({
      accountId: m.accountId,
      url: `https://localhost:${receiver.port}/hooks`,
      eventTypes: ['session.verified'],
      secretEncrypted: encryptJson(h.deps.config.piiKey, 'whsec_x'),
    });
    await h.deps.db.transaction((trx) =>
      h.deps.services.webhooks.emit({ accountId: m.accountId, type: 'session.verified', data: { session_id: 'vs_x' } }, trx),
    );
    await eventually(async () => (await attemptsOf(h, endpoint.id)).length === 1, 10_000);
    expect(await attemptsOf(h, endpoint.id)).toEqual([{ status_code: null, error: 'private_address: localhost resolves to a non-public address' }]);
    expect(receiver.received).toEqual([]);
  });
});
