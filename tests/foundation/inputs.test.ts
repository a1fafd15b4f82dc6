// Inputs that used to answer 500: a NUL character in any stored string (refused centrally, naming the field),
// every body-parser failure (4xx; an HTML page on the verify page), and more fields than a verify form takes.
import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { toApiError } from '../../server/http/errorHandler';
import { findNul } from '../../server/http/inputGuard';
import { csrfFrom } from '../verify/support';

const NUL_MESSAGE = 'must not contain a NUL character (\\u0000)';
const nulError = (field: string) => ({ error: { code: 'bad_request', message: `Invalid request: ${field}`, details: [{ field, message: NUL_MESSAGE }] } });

describe('inputs that cannot be stored or read', () => {
  let h: Harness;
  let apiKey: string;
  beforeAll(async () => {
    h = await createHarness();
    await resetTables(h.deps, ['accounts']);
    ({ apiKey } = await createMerchant(h.deps));
  });
  afterAll(() => h.close());

  const post = (path: string, body: unknown) =>
    request(h.app)
      .post(path)
      .set('X-API-Key', apiKey)
      .send(body as object);

  it.each([
    ['/v1/sessions', { product_name: 'Pro\u0000 plan' }, 'product_name'],
    ['/v1/sessions', { context: 'order \u0000 42' }, 'context'],
    ['/v1/credentials', { label: 'laptop\u0000' }, 'label'],
    [
      '/v1/credentials/wallets',
      { operator_token: 'opc_x', wallet_address: '0x' + '1'.repeat(40), network: 'evm', idempotency_key: 'k\u0000' },
      'idempotency_key',
    ],
    ['/v1/assess', { address: '0x' + '1'.repeat(40), policy: { blocked_jurisdictions: ['US', 'I\u0000R'] } }, 'policy.blocked_jurisdictions[1]'],
    ['/v1/assess', { address: '0x' + '1'.repeat(40), policy: { ['require\u0000kyc']: true } }, 'policy.require\\u0000kyc'],
  ])('refuses a NUL in %s %j with a 400 naming the field', async (path, body, field) => {
    const res = await post(path, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(nulError(field));
  });

  it('refuses a NUL in the path or the query string', async () => {
    const inPath = await request(h.app).delete('/v1/credentials/opc_%00abc').set('X-API-Key', apiKey);
    expect(inPath.status).toBe(400);
    expect(inPath.body).toEqual(nulError('path'));
    const inQuery = await request(h.app)
      .get(`/v1/reputation/0x${'1'.repeat(40)}?chain=base%00`)
      .set('X-API-Key', apiKey);
    expect(inQuery.status).toBe(400);
    expect(inQuery.body).toEqual(nulError('query.chain'));
  });

  it('finds a NUL in a deeply nested body without exhausting the stack', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findNul(deep)).toMatch(/^(\[0\]){200000}$/);
    expect(findNul({ a: [{ b: 'ok' }, { c: 'fine' }] })).toBeNull();
  });

  it.each([
    ['entity.parse.failed', 400],
    ['entity.too.large', 413],
    ['parameters.too.many', 413],
    ['encoding.unsupported', 400],
    ['charset.unsupported', 400],
    ['request.aborted', 400],
    ['request.size.invalid', 400],
    ['entity.verify.failed', 400],
    ['stream.encoding.set', 400],
    ['stream.not.readable', 400],
  ])('maps the body-parser error %s to %i', (type, status) => {
    const err = Object.assign(new Error('x'), { type, status: 500, expose: false });
    expect(toApiError(err).status).toBe(status);
  });

  it('answers an unsupported charset or content encoding on a JSON route with a 4xx JSON body', async () => {
    const charset = await request(h.app).post('/v1/assess').set('X-API-Key', apiKey).set('Content-Type', 'application/json; charset=ebcdic').send('{}');
    expect(charset.status).toBe(400);
    expect(charset.body).toEqual({
      error: { code: 'bad_request', message: 'Request body could not be read.', details: [{ field: 'body', message: 'charset.unsupported' }] },
    });
    const encoding = await request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', apiKey)
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'x-nope')
      .send('{}');
    expect(encoding.status).toBe(400);
    expect(encoding.body.error.details).toEqual([{ field: 'body', message: 'encoding.unsupported' }]);
  });

  describe('verify form posts', () => {
    async function formPage() {
      const { body: s } = await post('/v1/sessions', {});
      const page = await request(h.app).get(`/verify/${s.session_id}`);
      return { id: s.session_id as string, ...csrfFrom(page) };
    }

    it('answers more than 20 form fields with a 413 page, not a 500', async () => {
      const { id, cookie, token } = await formPage();
      const fields = new URLSearchParams({ csrf: token });
      for (let i = 0; i < 25; i++) fields.append(`f${i}`, 'x');
      const res = await request(h.app).post(`/verify/${id}/identity`).set('Cookie', cookie).type('form').send(fields.toString());
      expect(res.status).toBe(413);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.text).toContain('id="request-error"');
      expect(res.text).toContain('larger than this page accepts');
    });

    it('answers an unreadable or NUL-carrying form with a 400 page', async () => {
      const { id, cookie, token } = await formPage();
      const charset = await request(h.app)
        .post(`/verify/${id}/identity`)
        .set('Cookie', cookie)
        .set('Content-Type', 'application/x-www-form-urlencoded; charset=ebcdic')
        .send(`csrf=${token}`);
      expect(charset.status).toBe(400);
      expect(charset.text).toContain('could not be read');
      const nul = await request(h.app)
        .post(`/verify/${id}/identity`)
        .set('Cookie', cookie)
        .type('form')
        .send(`csrf=${encodeURIComponent(token)}&full_name=A%00B&date_of_birth=1990-01-01&country=DE&document_number=X1`);
      expect(nul.status).toBe(400);
      expect(nul.headers['content-type']).toMatch(/^text\/html/);
      expect((await h.deps.db('sessions').where({ id }).first()).status).toBe('pending');
    });
  });

  describe('dashboard form posts', () => {
    async function signedIn() {
      const s = (await h.deps.services.dashboard.signInWithKey(apiKey))!;
      const cookie = `kya_dashboard=${s.sessionId}`;
      const page = await request(h.app).get('/dashboard/settings').set('Cookie', cookie);
      return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page.text)![1] };
    }

    it('answers a NUL in a settings field with a 400 page naming the field, storing nothing', async () => {
      const { cookie, csrf } = await signedIn();
      const before = await h.deps.services.accounts.branding((await h.deps.services.accounts.authenticate(apiKey))!.accountId);
      const res = await request(h.app)
        .post('/dashboard/settings')
        .set('Cookie', cookie)
        .type('form')
        .send(`csrf=${encodeURIComponent(csrf)}&display_name=Acme%00Wines&support_email=help%40acme.example`);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.text).toContain('id="request-error"');
      expect(res.text).toContain('Reload the dashboard page and submit it again. Refused: display_name must not contain a NUL character');
      const after = await h.deps.services.accounts.branding((await h.deps.services.accounts.authenticate(apiKey))!.accountId);
      expect(after).toEqual(before);
    });

    it('answers more fields than a dashboard form takes with a 413 page, not a 500', async () => {
      const { cookie, csrf } = await signedIn();
      const fields = new URLSearchParams({ csrf });
      for (let i = 0; i < 35; i++) fields.append(`f${i}`, 'x');
      const res = await request(h.app).post('/dashboard/settings').set('Cookie', cookie).type('form').send(fields.toString());
      expect(res.status).toBe(413);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('larger than this page accepts. Reload the dashboard page');
    });
  });
});
