// The error contract: one body shape, malformed JSON → 400 naming `body`, oversized body →
// 413, unknown route → 404, unexpected error → generic 500 without internals; request ids; 400 details.
import request from 'supertest';
import type { Express } from 'express';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { meteredApp } from '../support/meteredApp';
import { createApp } from '../../server/app';

describe('error contract', () => {
  let h: Harness;
  let test: Express;

  beforeAll(async () => {
    h = await createHarness();
    test = meteredApp(h.deps);
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(() => h.close());

  it('answers malformed JSON with 400 bad_request naming body', async () => {
    const res = await request(h.app).post('/v1/assess').set('Content-Type', 'application/json').send('{"address": "0x1",');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'bad_request', message: 'Malformed JSON in request body.', details: [{ field: 'body', message: 'is not valid JSON' }] },
    });
  });

  it('answers a 2 MB body with 413 in the same format', async () => {
    const big = JSON.stringify({ padding: 'x'.repeat(2 * 1024 * 1024) });
    const res = await request(h.app).post('/v1/assess').set('Content-Type', 'application/json').send(big);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      error: { code: 'payload_too_large', message: 'Request body is too large.', details: [{ field: 'body', message: 'exceeds the size limit' }] },
    });
  });

  it('answers unknown routes with 404 not_found, including other API versions', async () => {
    for (const [method, path] of [
      ['get', '/v1/nothing-here'],
      ['post', '/v2/assess'],
      ['delete', '/'],
    ] as const) {
      const res = await request(h.app)[method](path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: 'not_found', message: `No route for ${method.toUpperCase()} ${path}` } });
    }
  });

  it('answers an unexpected error with 500 internal_error and a generic message (no stack, no SQL)', async () => {
    const res = await request(test).get('/t/boom');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: { code: 'internal_error', message: 'An unexpected error occurred.' } });
    expect(res.text).not.toMatch(/secret_table|\/srv\/|at .*\.ts/);
  });

  it('names every offending field of a 400 in details', async () => {
    const { apiKey } = await createMerchant(h.deps);
    const res = await request(test).post('/t/metered').set('X-API-Key', apiKey).send({ ok: 'yes', fail_with: 7 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Invalid request: ok, fail_with',
        details: [
          { field: 'ok', message: 'ok must be a boolean' },
          { field: 'fail_with', message: 'fail_with must be greater than or equal to 400' },
        ],
      },
    });
    const notObject = await request(test).post('/t/metered').set('X-API-Key', apiKey).send([1, 2]);
    expect(notObject.body).toEqual({
      error: { code: 'bad_request', message: 'Invalid request: body', details: [{ field: 'body', message: 'must be a JSON object' }] },
    });
  });

  it('answers a path that is not valid percent-encoding with 400 naming path', async () => {
    const res = await request(test).get('/t/item/%E0%A4%A');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'bad_request', message: 'The request could not be understood.', details: [{ field: 'path', message: 'is malformed' }] },
    });
  });

  it('echoes a well-formed X-Request-Id and generates one otherwise', async () => {
    const given = await request(h.app).get('/healthz').set('X-Request-Id', 'lb-1234abcd');
    expect(given.headers['x-request-id']).toBe('lb-1234abcd');
    const generated = await request(h.app).get('/healthz');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const hostile = await request(h.app).get('/nope').set('X-Request-Id', '<script>alert(1)</script>');
    expect(hostile.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('takes the client address from X-Forwarded-For only when TRUST_PROXY says so', async () => {
    const direct = await request(test).get('/t/ip').set('X-Forwarded-For', '203.0.113.7');
    expect(direct.body.ip).not.toBe('203.0.113.7');
    const behindLb = await createHarness({ env: { TRUST_PROXY: '1' } });
    try {
      expect(createApp(behindLb.deps).get('trust proxy')).toBe(1);
      const res = await request(meteredApp(behindLb.deps)).get('/t/ip').set('X-Forwarded-For', '198.51.100.1, 203.0.113.7');
      expect(res.body.ip).toBe('203.0.113.7');
    } finally {
      await behindLb.close();
    }
  });

  it('sends security headers and no framework banner', async () => {
    const res = await request(h.app).get('/healthz');
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body).toEqual({ status: 'ok' });
  });
});
