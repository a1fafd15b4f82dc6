// Seeded fuzzing over every route, through real HTTP against two live instances (sandbox KYC, and Stripe KYC
// with signed webhooks): hostile strings (NUL, lone surrogates, huge, control characters), wrong types, extra
// and misspelt keys, bad encodings and charsets, oversized forms, verify and dashboard form posts with a valid
// CSRF token (and the claim cookie or a signed-in dashboard session), correctly signed Stripe events. No answer may be a 5xx or take over 2 s, and both
// servers must still answer afterwards.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import request from 'supertest';
import { Wallet } from 'ethers';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { signStripePayload } from '../../server/kyc/stripe';
import { SESSION_TABLES } from '../sessions/support';
import { claimCookieFrom, csrfFrom } from '../verify/support';

jest.setTimeout(180_000);

const SEED = 20261122;
const REQUESTS = 3000;
const CONCURRENCY = 4;
const MAX_MS = 2000;
const WEBHOOK_SECRET = 'whsec_fuzz_secret';

interface Spec {
  family: string;
  target: 'a' | 'b';
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Sign the body as Stripe would (done when sending: the signature carries the current time). */
  signStripe?: boolean;
}

interface Pools {
  apiKey: string;
  sandboxSessions: Array<{ id: string; pollSecret: string; cookie: string; token: string }>;
  stripeSessions: Array<{ id: string; cookie: string; token: string }>;
  claim: { id: string; cookie: string; token: string; challengeId: string; message: string };
  stripeReference: string;
  /** A signed-in dashboard session of its own merchant (so rotating that merchant's key spares the API pool). */
  dashboard: { cookie: string; csrf: string };
}

// ---- generators -----------------------------------------------------------------------------------------

const nasty = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.fullUnicodeString({ maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string16bits({ maxLength: 20 }) }, // lone surrogates included
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\u0000',
      'a\u0000b',
      '\ud800',
      'x\udfff',
      '\u202e',
      '𝔘𝔫𝔦',
      'x'.repeat(5000),
      '%00',
      '../../etc/passwd',
      '<script>alert(1)</script>',
      "'; drop table accounts; --",
      `opc_${'a'.repeat(43)}`,
      `vs_${'A'.repeat(32)}`,
      `0x${'1'.repeat(40)}`,
      '0x0000000000000000000000000000000000000000',
      '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
      'evm',
      'solana',
      'base',
      'US',
      'true',
      '-1',
      '1e309',
      '{}',
      '[]',
    ),
  },
);
const scalar = fc.oneof(nasty, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const value = fc.oneof({ weight: 4, arbitrary: scalar }, fc.array(scalar, { maxLength: 4 }), fc.dictionary(nasty, scalar, { maxKeys: 3 }));
/** A printable header value (Node refuses others before sending). */
const headerValue = fc.oneof(fc.string({ maxLength: 60 }), nasty).map((s) => s.replace(/[^\x20-\x7e]/g, '').slice(0, 300));

function body<T extends Record<string, fc.Arbitrary<unknown>>>(fields: T) {
  return fc
    .tuple(fc.record(fields, { requiredKeys: [] }), fc.dictionary(nasty, value, { maxKeys: 2 }), fc.boolean())
    .map(([known, extra, withExtra]) => JSON.stringify(withExtra ? { ...extra, ...known } : known));
}

/** Percent-encodes a path segment, lone surrogates and all (as their UTF-8 replacement), or raw bad escapes. */
const segment = fc.oneof(
  {
    weight: 4,
    arbitrary: nasty.map((s) =>
      [...Buffer.from(s, 'utf8')]
        .map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`))
        .join(''),
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%ff%fe', '%E0%A4%A', '..', '%2e%2e', '%00') },
);

const JSON_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=ebcdic',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '',
];

function requests(p: Pools): fc.Arbitrary<Spec> {
  const key = fc.oneof({ weight: 8, arbitrary: fc.constant(p.apiKey) }, { weight: 1, arbitrary: headerValue }, { weight: 1, arbitrary: fc.constant('') });
  const contentType = fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 2, arbitrary: fc.constantFrom(...JSON_TYPES) });
  const encoding = fc.oneof(
    { weight: 12, arbitrary: fc.constant('') },
    { weight: 1, arbitrary: fc.constantFrom('gzip', 'deflate', 'br', 'x-nope', 'identity') },
  );
  const jsonHeaders = (apiKey: fc.Arbitrary<string> = key) =>
    fc.tuple(apiKey, contentType, encoding).map(([k, ct, enc]) => ({
      ...(k ? { 'x-api-key': k } : {}),
      ...(ct ? { 'content-type': ct } : {}),
      ...(enc ? { 'content-encoding': enc } : {}),
    }));
  const garbage = fc.oneof(
    fc.string16bits({ maxLength: 200 }),
    fc.json(),
    fc.constantFrom('{"a":', '[[[[[[[[', '{"__proto__":{"x":1}}', 'null', '"\\u0000"', '{"address":"\\ud800"}'),
  );
  const post = (family: string, target: 'a' | 'b', path: fc.Arbitrary<string>, payload: fc.Arbitrary<string>, headers = jsonHeaders()) =>
    fc
      .tuple(path, fc.oneof({ weight: 6, arbitrary: payload }, { weight: 1, arbitrary: garbage }), headers)
      .map(([pathValue, b, h]): Spec => ({ family, target, method: 'POST', path: pathValue, headers: h, body: b }));
  const get = (family: string, target: 'a' | 'b', path: fc.Arbitrary<string>, headers: fc.Arbitrary<Record<string, string>> = jsonHeaders()) =>
    fc.tuple(path, headers).map(([pathValue, h]): Spec => ({ family, target, method: 'GET', path: pathValue, headers: h }));

  const address = fc.oneof(
    fc.constantFrom(`0x${'ab'.repeat(20)}`, '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM', Wallet.createRandom().address),
    nasty,
    value,
  );
  const policy = fc.oneof(
    value,
    fc.record(
      {
        require_kyc: fc.oneof(fc.boolean(), value),
        require_sanctions_clear: fc.oneof(fc.boolean(), value),
        min_age: fc.oneof(fc.constantFrom(18, 21), value),
        blocked_jurisdictions: fc.oneof(fc.array(fc.constantFrom('US', 'IR', 'KP', 'de', 'XX'), { maxLength: 5 }), value),
        allowed_jurisdictions: fc.oneof(fc.array(fc.constantFrom('US', 'DE', 'FR'), { maxLength: 5 }), value),
        requireKyc: value,
        min_ag: value,
      },
      { requiredKeys: [] },
    ),
  );
  const signer = fc.oneof(
    value,
    fc.record({ address: fc.oneof(address, fc.constant(null)), network: fc.oneof(fc.constantFrom('evm', 'solana'), nasty) }, { requiredKeys: [] }),
  );
  const sessionId = fc.oneof(fc.constantFrom(...p.sandboxSessions.map((s) => s.id)), segment);
  const anySession = fc.constantFrom(...p.sandboxSessions);

  const verifyPost = (kind: 'identity' | 'wallet') =>
    fc
      .tuple(
        anySession,
        kind === 'identity'
          ? fc.record(
              {
                full_name: fc.oneof(fc.constantFrom('Alice Example', 'Dmitri Vorontsov'), nasty),
                date_of_birth: fc.oneof(fc.constantFrom('1990-04-12', '2090-01-01', '1990-02-30'), nasty),
                country: fc.oneof(fc.constantFrom('DE', 'RU', 'zz'), nasty),
                document_number: fc.oneof(fc.constantFrom('P1234567', 'FAIL-1'), nasty),
              },
              { requiredKeys: [] },
            )
          : fc.record(
              {
                challenge_id: fc.oneof(fc.constant(p.claim.challengeId), fc.uuid(), nasty),
                network: fc.oneof(fc.constantFrom('evm', 'solana'), nasty),
                address: address.map(String),
                signature: fc.oneof(fc.constant(`0x${'1b'.repeat(65)}`), nasty),
              },
              { requiredKeys: [] },
            ),
        fc.integer({ min: 0, max: 30 }), // extra fields: past 20 the form parser refuses
        fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }), // a valid CSRF pair
        fc.oneof({ weight: 8, arbitrary: fc.constant('application/x-www-form-urlencoded') }, { weight: 1, arbitrary: fc.constantFrom(...JSON_TYPES) }),
      )
      .map(([s, fields, extra, validCsrf, ct]): Spec => {
        const target = kind === 'wallet' ? p.claim : s;
        const form = new URLSearchParams();
        form.set('csrf', validCsrf ? target.token : 'forged');
        for (const [k, v] of Object.entries(fields)) form.set(k, String(v));
        for (let i = 0; i < extra; i++) form.append(`x${i}`, 'y');
        const cookie = kind === 'wallet' ? `${p.claim.cookie}` : s.cookie;
        return {
          family: `verify-${kind}`,
          target: 'a',
          method: 'POST',
          path: `/verify/${target.id}/${kind}`,
          headers: { cookie, 'content-type': ct },
          body: form.toString(),
        };
      });

  // The dashboard: every page with hostile query strings, and every form with hostile fields, a valid CSRF token
  // most of the time, and sometimes more fields than the parser takes. Sign-out is left out so the session lives.
  const query = (names: string[]) =>
    fc.tuple(...names.map(() => fc.option(segment))).map((vals) => names.flatMap((n, i) => (vals[i] === null ? [] : [`${n}=${vals[i]}`])).join('&'));
  const dashboardGet = fc
    .tuple(
      fc.constantFrom(
        '/dashboard',
        '/dashboard/keys',
        '/dashboard/settings',
        '/dashboard/activity',
        '/dashboard/activity.csv',
        '/dashboard/webhooks',
        'webhook',
        'login',
      ),
      segment,
      query(['decision', 'reason', 'method', 'from', 'to', 'cursor', 'session_status']),
    )
    .map(([page, seg, q]): Spec => {
      const path = page === 'webhook' ? `/dashboard/webhooks/${seg}` : page === 'login' ? `/dashboard/login/${seg}` : page;
      return { family: 'dashboard-page', target: 'a', method: 'GET', path: q ? `${path}?${q}` : path, headers: { cookie: p.dashboard.cookie } };
    });
  const dashboardPost = fc
    .tuple(
      fc.constantFrom(
        'settings',
        'keys/add',
        'keys/:id/revoke',
        'webhooks',
        'webhooks/:id/roll',
        'webhooks/:id/remove',
        'webhooks/:id/delete',
        'webhooks/deliveries/:id/resend',
        'signin',
        'login',
      ),
      segment,
      fc.record(
        {
          // Valid values most of the time, so that a hostile one in another field reaches the write behind them.
          display_name: fc.oneof(fc.constantFrom('Acme Wines', 'Acme\u0000Wines'), nasty),
          support_email: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('help@acme.example', 'help\u0000@acme.example') }, { weight: 1, arbitrary: nasty }),
          logo_url: fc.oneof(
            { weight: 3, arbitrary: fc.constantFrom('https://acme.example/logo.png', 'https://acme.example/\u0000.png') },
            { weight: 1, arbitrary: nasty },
          ),
          url: fc.oneof(
            fc.constantFrom('https://hooks.acme.example/kya', 'https://hooks.acme.example/\u0000', 'http://127.0.0.1:9/x', 'https://10.0.0.1/x'),
            nasty,
          ),
          events: fc.oneof(fc.constantFrom('session.verified', 'credential.revoked', 'session\u0000.verified'), nasty),
          label: fc.oneof(fc.constantFrom('ci key', 'ci\u0000key'), nasty),
          api_key: fc.oneof(fc.constant('as_live_wrong'), nasty),
          token: nasty,
        },
        { requiredKeys: [] },
      ),
      fc.integer({ min: 0, max: 35 }), // extra fields: past 30 the form parser refuses
      fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      fc.oneof({ weight: 8, arbitrary: fc.constant('application/x-www-form-urlencoded') }, { weight: 1, arbitrary: fc.constantFrom(...JSON_TYPES) }),
    )
    .map(([action, seg, fields, extra, validCsrf, ct]): Spec => {
      const form = new URLSearchParams();
      form.set('csrf', validCsrf ? p.dashboard.csrf : 'forged');
      for (const [k, v] of Object.entries(fields)) form.set(k, String(v));
      for (let i = 0; i < extra; i++) form.append(`x${i}`, 'y');
      return {
        family: 'dashboard-form',
        target: 'a',
        method: 'POST',
        path: `/dashboard/${action.replace(':id', seg)}`,
        headers: { cookie: p.dashboard.cookie, 'content-type': ct },
        body: form.toString(),
      };
    });

  const eventType = fc.oneof(
    fc.constantFrom(
      'identity.verification_session.verified',
      'identity.verification_session.requires_input',
      'identity.verification_session.canceled',
      'identity.verification_session.processing',
    ),
    nasty,
  );
  const webhookBody = fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .record(
          {
            id: fc.oneof(
              fc.string({ minLength: 1, maxLength: 10 }).map((s) => `evt_${s}`),
              nasty,
              fc.constant(`evt_${'x'.repeat(100_000)}`),
              value,
            ),
            type: fc.oneof(eventType, value),
            data: fc.oneof(
              value,
              fc.record(
                {
                  object: fc.oneof(
                    value,
                    fc.record(
                      {
                        id: fc.oneof(fc.constant(p.stripeReference), fc.constant('vs_unknown_1'), nasty, value),
                        object: fc.oneof(fc.constant('identity.verification_session'), nasty),
                      },
                      { requiredKeys: [] },
                    ),
                  ),
                },
                { requiredKeys: [] },
              ),
            ),
          },
          { requiredKeys: [] },
        )
        .map((e) => JSON.stringify(e)),
    },
    { weight: 1, arbitrary: garbage },
  );

  return fc.oneof(
    {
      weight: 14,
      arbitrary: post(
        'assess',
        'a',
        fc.constant('/v1/assess'),
        body({
          address,
          wallet_address: address,
          operator_token: fc.oneof(fc.constant(`opc_${'a'.repeat(43)}`), nasty, value),
          chain: fc.oneof(fc.constantFrom('base', 'solana', 'ethereum'), value),
          policy,
          test: fc.oneof(fc.boolean(), value),
          refresh: value,
          signer,
          resolve_signer: signer,
        }),
      ),
    },
    {
      weight: 2,
      arbitrary: get(
        'assess-verify-link',
        'a',
        segment.map((s) => `/v1/assess/verify/${s}`),
      ),
    },
    { weight: 5, arbitrary: post('sessions', 'a', fc.constant('/v1/sessions'), body({ product_name: value, context: value, issue_refresh_token: value })) },
    {
      weight: 3,
      arbitrary: post(
        'sessions-public',
        'a',
        fc.constant('/v1/sessions/public'),
        body({ product_name: value, context: value }),
        fc.tuple(jsonHeaders(fc.constant('')), fc.option(headerValue)).map(([h, client]) => (client === null ? h : { ...h, 'x-client-id': client })),
      ),
    },
    { weight: 2, arbitrary: post('sessions-refresh', 'a', fc.constant('/v1/sessions/refresh'), body({ refresh_token: value })) },
    {
      weight: 4,
      arbitrary: fc.tuple(sessionId, fc.oneof(fc.constantFrom(...p.sandboxSessions.map((s) => s.pollSecret)), headerValue)).map(([id, secret]): Spec => ({
        family: 'sessions-poll',
        target: 'a',
        method: 'GET',
        path: `/v1/sessions/${id}`,
        headers: { 'x-poll-secret': secret },
      })),
    },
    { weight: 4, arbitrary: post('credentials-create', 'a', fc.constant('/v1/credentials'), body({ label: value, ttl_days: value })) },
    { weight: 2, arbitrary: get('credentials-list', 'a', fc.constant('/v1/credentials')) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(segment, key)
        .map(([id, k]): Spec => ({ family: 'credentials-revoke', target: 'a', method: 'DELETE', path: `/v1/credentials/${id}`, headers: { 'x-api-key': k } })),
    },
    {
      weight: 5,
      arbitrary: post(
        'wallets-capture',
        'a',
        fc.constant('/v1/credentials/wallets'),
        body({ operator_token: value, wallet_address: address, network: fc.oneof(fc.constantFrom('evm', 'solana'), value), idempotency_key: value }),
      ),
    },
    {
      weight: 4,
      arbitrary: get(
        'reputation',
        'a',
        fc
          .tuple(fc.oneof(address.map(String), segment), fc.option(segment))
          .map(([a, chain]) => `/v1/reputation/${encodeURIComponent(a.replace(/[\ud800-\udfff]/g, ''))}${chain === null ? '' : `?chain=${chain}`}`),
      ),
    },
    {
      weight: 2,
      arbitrary: post('telemetry', 'a', fc.constant('/v1/telemetry/signer-match'), body({ kind: value, claimed_wallet: value, signer: value, network: value })),
    },
    {
      weight: 8,
      arbitrary: fc
        .tuple(webhookBody, fc.oneof({ weight: 8, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }))
        .map(([b, signed]): Spec => ({
          family: 'stripe-webhook',
          target: 'b',
          method: 'POST',
          path: '/v1/kyc/stripe/webhook',
          headers: { 'content-type': 'application/json', ...(signed ? {} : { 'stripe-signature': 't=1,v1=00' }) },
          body: b,
          signStripe: signed,
        })),
    },
    {
      weight: 3,
      arbitrary: get(
        'verify-page',
        'a',
        fc.tuple(sessionId, fc.option(fc.constantFrom('linked', '1', ''))).map(([id, w]) => `/verify/${id}${w === null ? '' : `?wallet=${w}`}`),
        fc.constant({}),
      ),
    },
    {
      weight: 2,
      arbitrary: get(
        'verify-return',
        'b',
        fc.tuple(fc.constantFrom(...p.stripeSessions.map((s) => s.id)), segment).map(([id, k]) => `/verify/${id}/return?key=${k}`),
        fc.constant({}),
      ),
    },
    { weight: 6, arbitrary: verifyPost('identity') },
    { weight: 4, arbitrary: verifyPost('wallet') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...p.stripeSessions).map((s): Spec => ({
        family: 'verify-stripe',
        target: 'b',
        method: 'POST',
        path: `/verify/${s.id}/stripe`,
        headers: { cookie: s.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: `csrf=${encodeURIComponent(s.token)}`,
      })),
    },
    { weight: 3, arbitrary: dashboardGet },
    { weight: 4, arbitrary: dashboardPost },
    { weight: 2, arbitrary: get('health', 'a', fc.constantFrom('/healthz', '/readyz', '/metrics', '/openapi.json', '/docs')) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
          fc.array(segment, { minLength: 1, maxLength: 4 }),
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- keeps the tuple type fast-check infers
          fc.constantFrom('a', 'b') as fc.Arbitrary<'a' | 'b'>,
          garbage,
          jsonHeaders(),
        )
        .map(([method, parts, target, b, h]): Spec => ({
          family: 'anything',
          target,
          method,
          path: `/${parts.join('/')}`,
          headers: h,
          body: method === 'GET' || method === 'OPTIONS' ? undefined : b,
        })),
    },
  );
}

// ---- sending --------------------------------------------------------------------------------------------

function send(port: number, agent: http.Agent, spec: Spec): Promise<{ status: number; ms: number }> {
  const payload = spec.body === undefined ? undefined : Buffer.isBuffer(spec.body) ? spec.body : Buffer.from(spec.body, 'utf8');
  const headers: Record<string, string> = { ...spec.headers };
  if (spec.signStripe && payload) headers['stripe-signature'] = signStripePayload(payload.toString('utf8'), WEBHOOK_SECRET, Math.floor(Date.now() / 1000));
  if (payload) headers['content-length'] = String(payload.length);
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: spec.method, path: spec.path, headers, agent, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      res.on('error', () => resolve({ status: -1, ms: performance.now() - started }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: -1, ms: performance.now() - started }));
    req.end(payload);
  });
}

describe('fuzzing every route', () => {
  let a: Harness;
  let b: Harness;
  let fakeStripe: http.Server;
  let serverA: http.Server;
  let serverB: http.Server;

  beforeAll(async () => {
    let created = 0;
    fakeStripe = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        if (req.method === 'POST') {
          created++;
          return res.end(JSON.stringify({ id: `vs_fuzz${created}`, url: `https://verify.stripe.com/start/fuzz${created}` }));
        }
        res.statusCode = 404;
        res.end(JSON.stringify({ error: { message: 'No such verification session' } }));
      });
    });
    await new Promise<void>((r) => fakeStripe.listen(0, '127.0.0.1', r));
    // Generous client limits: the point is to reach the code behind them, not to measure them.
    const env = { AUTH_FAILURES_PER_MINUTE: '1000000', PUBLIC_SESSIONS_PER_IP_PER_HOUR: '1000000', POLL_PER_MINUTE: '1000000' };
    a = await createHarness({ env });
    b = await createHarness({
      env: {
        ...env,
        KYC_PROVIDER: 'stripe',
        STRIPE_SECRET_KEY: 'sk_test_fuzz',
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        STRIPE_API_BASE: `http://127.0.0.1:${(fakeStripe.address() as AddressInfo).port}`,
      },
    });
    await resetTables(a.deps, SESSION_TABLES);
    serverA = http.createServer(a.app as unknown as http.RequestListener);
    serverB = http.createServer(b.app as unknown as http.RequestListener);
    await Promise.all([serverA, serverB].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    for (const s of [serverA, serverB, fakeStripe]) s?.close();
  });

  async function seed(): Promise<Pools> {
    const { apiKey } = await createMerchant(a.deps, { tier: 'enterprise' });
    const open = async (h: Harness) => {
      const { body: s } = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({ product_name: 'Fuzz' });
      const page = await request(h.app).get(`/verify/${s.session_id}`);
      return { id: s.session_id as string, pollSecret: s.poll_secret as string, ...csrfFrom(page) };
    };
    const sandboxSessions = await Promise.all(Array.from({ length: 6 }, () => open(a)));
    const stripeSessions = await Promise.all(Array.from({ length: 3 }, () => open(b)));
    // One session verified in "this" browser, so wallet posts reach the signature check.
    const c = await open(a);
    const verified = await request(a.app)
      .post(`/verify/${c.id}/identity`)
      .set('Cookie', c.cookie)
      .type('form')
      .send({ csrf: c.token, full_name: 'Claire Fuzz', date_of_birth: '1985-05-05', country: 'FR', document_number: 'FR1234' });
    const claimCookie = claimCookieFrom(verified)!;
    const page = await request(a.app).get(`/verify/${c.id}`).set('Cookie', `${c.cookie}; ${claimCookie}`);
    const challengeId = /name="challenge_id" value="([^"]+)"/.exec(page.text)![1];
    await request(b.app)
      .post(`/verify/${stripeSessions[0].id}/stripe`)
      .set('Cookie', stripeSessions[0].cookie)
      .type('form')
      .send({ csrf: stripeSessions[0].token });
    const { kyc_reference } = await a.deps.db('sessions').where({ id: stripeSessions[0].id }).first();
    const dashboardMerchant = await createMerchant(a.deps, { tier: 'enterprise' });
    const signedIn = (await a.deps.services.dashboard.signInWithKey(dashboardMerchant.apiKey))!;
    const dashboardCookie = `kya_dashboard=${signedIn.sessionId}`;
    const settings = await request(a.app).get('/dashboard/settings').set('Cookie', dashboardCookie);
    const dashboardCsrf = /name="csrf" value="([^"]+)"/.exec(settings.text)![1];
    return {
      dashboard: { cookie: dashboardCookie, csrf: dashboardCsrf },
      apiKey,
      sandboxSessions,
      stripeSessions,
      claim: { id: c.id, cookie: `${c.cookie}; ${claimCookie}`, token: c.token, challengeId, message: '' },
      stripeReference: kyc_reference,
    };
  }

  it(`answers ${REQUESTS} seeded hostile requests over every route without a 5xx or a reply slower than ${MAX_MS} ms, and keeps serving`, async () => {
    const pools = await seed();
    const specs = fc.sample(requests(pools), { seed: SEED, numRuns: REQUESTS });
    const ports = { a: (serverA.address() as AddressInfo).port, b: (serverB.address() as AddressInfo).port };
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const failures: Array<{ i: number; family: string; method: string; path: string; status: number; ms: number }> = [];
    const perFamily = new Map<string, number>();
    const timeByFamily = new Map<string, number>();
    const started = Date.now();
    let next = 0;
    let slowest = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < specs.length) {
          const i = next++;
          const spec = specs[i];
          const { status, ms } = await send(ports[spec.target], agent, spec);
          perFamily.set(spec.family, (perFamily.get(spec.family) ?? 0) + 1);
          timeByFamily.set(spec.family, (timeByFamily.get(spec.family) ?? 0) + ms);
          slowest = Math.max(slowest, ms);
          if (status < 100 || status >= 500 || ms > MAX_MS) {
            failures.push({ i, family: spec.family, method: spec.method, path: spec.path.slice(0, 120), status, ms: Math.round(ms) });
          }
        }
      }),
    );
    agent.destroy();
    if (process.env.FUZZ_REPORT) {
      process.stdout.write(
        `fuzz: ${specs.length} requests in ${Date.now() - started} ms, slowest ${Math.round(slowest)} ms\n` +
          `${JSON.stringify(Object.fromEntries([...perFamily].map(([f, n]) => [f, { n, avgMs: Math.round((timeByFamily.get(f) ?? 0) / n) }])))}\n`,
      );
    }

    expect(failures).toEqual([]);
    expect(specs.length).toBeGreaterThanOrEqual(3000);
    for (const family of [
      'assess',
      'sessions',
      'sessions-public',
      'sessions-poll',
      'credentials-create',
      'credentials-revoke',
      'wallets-capture',
      'reputation',
      'stripe-webhook',
      'verify-identity',
      'verify-wallet',
      'verify-page',
      'dashboard-page',
      'dashboard-form',
    ]) {
      expect([family, (perFamily.get(family) ?? 0) >= 50]).toEqual([family, true]);
    }
    // Both instances still answer, including an ordinary authenticated request.
    for (const port of [ports.a, ports.b]) expect((await request(`http://127.0.0.1:${port}`).get('/healthz')).status).toBe(200);
    const ok = await request(`http://127.0.0.1:${ports.a}`)
      .post('/v1/assess')
      .set('X-API-Key', pools.apiKey)
      .send({ address: `0x${'ab'.repeat(20)}` });
    expect(ok.status).toBe(200);
  });
});
