// Access logs: one structured line per response above the configured level, with the request id, and never
// a secret (API keys live in headers that are not logged; opc_ credentials in URLs are redacted).
import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';

describe('access logs', () => {
  let h: Harness;
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });

  beforeAll(async () => {
    h = await createHarness({ overrides: { logger: pino({ level: 'info' }, sink) } });
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(() => h.close());
  beforeEach(() => {
    lines.length = 0;
  });

  it('logs a 4xx with its request id, account, method, path and status, and no API key', async () => {
    const { apiKey, accountId } = await createMerchant(h.deps);
    const res = await request(h.app)
      .delete('/v1/credentials/opc_ThisIsASecretCredentialValue0123456789')
      .set('X-API-Key', apiKey)
      .set('X-Request-Id', 'req-0123456789');
    expect(res.status).toBe(404);
    expect(res.headers['x-request-id']).toBe('req-0123456789');
    const line = lines.find((l) => l.msg === 'request completed');
    expect(line).toMatchObject({
      reqId: 'req-0123456789',
      req: { method: 'DELETE', url: '/v1/credentials/opc_[redacted]' },
      res: { statusCode: 404 },
      account: accountId,
    });
    const all = JSON.stringify(lines);
    expect(all).not.toContain('ThisIsASecretCredentialValue');
    expect(all).not.toContain(apiKey);
  });

  it('redacts session ids (the verify link) from access-log URLs, with query strings dropped', async () => {
    const { apiKey } = await createMerchant(h.deps);
    const { body: s } = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({});
    const id = s.session_id as string;
    expect((await request(h.app).get(`/v1/sessions/${id}`).set('X-Poll-Secret', 'wrong')).status).toBe(404);
    expect((await request(h.app).post(`/verify/${id}/identity`).type('form').send({ full_name: 'x' })).status).toBe(403);
    expect((await request(h.app).get(`/verify/${id}/nothing?key=abc`)).status).toBe(404);
    const urls = lines.filter((l) => l.msg === 'request completed').map((l) => (l.req as { url: string }).url);
    expect(urls).toEqual(['/v1/sessions/vs_[redacted]', '/verify/vs_[redacted]/identity', '/verify/vs_[redacted]/nothing']);
    expect(JSON.stringify(lines)).not.toContain(id.slice(3));
  });

  it('writes nothing for a 2xx below the configured level', async () => {
    await request(h.app).get('/healthz').expect(200);
    expect(lines.filter((l) => l.msg === 'request completed')).toEqual([]);
  });

  it('generates a request id when the incoming one is malformed', async () => {
    const res = await request(h.app).get('/healthz').set('X-Request-Id', 'bad id with spaces');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
