// The served API description: valid OpenAPI 3.1 (checked by a standard validator), covering every API route the
// server mounts, and the drift check's own behaviour (it must reject what the description does not say).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { createHarness, type Harness } from '../support/harness';
import { checkResponse } from '../support/openapi';

describe('GET /openapi.json', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('serves a document that passes the OpenAPI 3.1 schema validator', async () => {
    const res = await request(h.app).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.servers).toEqual([{ url: 'http://kya.test' }]);
    // The validator ships as an ES module only: run its command line, as CI or an integrator would.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kya-openapi-')), 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(res.body));
    const { stdout } = await promisify(execFile)(process.execPath, [require.resolve('@seriousme/openapi-schema-validator/bin/validate-api-cli.js'), file]);
    expect(JSON.parse(stdout)).toEqual({ valid: true });
  });

  it('documents every API route the server mounts, and nothing it does not', async () => {
    const res = await request(h.app).get('/openapi.json');
    const documented = Object.entries(res.body.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    const mounted: string[] = [];
    const walk = (stack: Array<{ route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: unknown[] } }>) => {
      for (const layer of stack) {
        if (layer.route) {
          for (const m of Object.keys(layer.route.methods)) mounted.push(`${m.toUpperCase()} ${layer.route.path.replace(/:(\w+)/g, '{$1}')}`);
        } else if (layer.handle?.stack) walk(layer.handle.stack as never);
      }
    };
    walk((h.app as unknown as { router: { stack: never } }).router.stack);
    // Pages for people (verify flow, this reference), provider webhooks and Prometheus metrics are not the JSON API.
    const api = mounted.filter((r) => /^\w+ \/(v1\/(assess|sessions|credentials|reputation|telemetry)|healthz|readyz)/.test(r)).sort();
    expect(documented).toEqual([...new Set(api)]);
  });

  it('lists every error code with its status for each operation', async () => {
    const res = await request(h.app).get('/openapi.json');
    const assess = res.body.paths['/v1/assess'].post.responses;
    const codes = (status: string) => assess[status].content['application/json'].schema.allOf[1].properties.error.properties.code.enum;
    expect(codes('400')).toEqual(['invalid_identity', 'invalid_address', 'invalid_test_address', 'bad_request']);
    expect(codes('401')).toEqual(['invalid_credential', 'token_expired', 'signup_required']);
    expect(codes('429')).toEqual(['rate_limited', 'quota_exceeded']);
    expect(Object.keys(assess['429'].headers)).toEqual(expect.arrayContaining(['Retry-After', 'X-RateLimit-Limit', 'X-Quota-Reset']));
    expect(res.body.components.securitySchemes).toEqual({
      ApiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-API-Key' }),
      Bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
  });
});

describe('the drift check', () => {
  const ok = { decision: 'allow', decision_reasons: ['no_policy_applied'], identity_method: 'wallet', operator_verification: { level: 'none' } };

  it('accepts a response the description covers', () => {
    expect(checkResponse({ method: 'POST', path: '/v1/assess', status: 200, headers: {}, body: ok })).toEqual([]);
  });

  it('rejects an undocumented field, a wrong type, an undocumented status, code or header', () => {
    expect(checkResponse({ method: 'POST', path: '/v1/assess', status: 200, headers: {}, body: { ...ok, surprise: 1 } })).toEqual([
      expect.stringContaining('must NOT have additional properties'),
    ]);
    expect(checkResponse({ method: 'POST', path: '/v1/assess', status: 200, headers: {}, body: { ...ok, decision: true } })?.[0]).toContain(
      '/decision must be equal to one of the allowed values',
    );
    expect(checkResponse({ method: 'POST', path: '/v1/assess', status: 201, headers: {}, body: ok })).toEqual([
      expect.stringContaining('status not documented'),
    ]);
    expect(checkResponse({ method: 'GET', path: '/v1/credentials', status: 404, headers: {}, body: { error: { code: 'not_found', message: 'x' } } })).toEqual([
      expect.stringContaining('status not documented'),
    ]);
    expect(
      checkResponse({
        method: 'DELETE',
        path: '/v1/credentials/abc',
        status: 404,
        headers: {},
        body: { error: { code: 'unknown_address', message: 'x' } },
      })?.[0],
    ).toContain('/error/code must be equal to one of the allowed values');
    expect(checkResponse({ method: 'GET', path: '/healthz', status: 200, headers: { 'retry-after': '5' }, body: { status: 'ok' } })).toEqual([
      'GET /healthz 200: header retry-after not documented',
    ]);
  });

  it('tells /v1/credentials/wallets from /v1/credentials/{id}, and ignores paths outside the API', () => {
    expect(checkResponse({ method: 'POST', path: '/v1/credentials/wallets', status: 200, headers: {}, body: { associated: true, first_seen: true } })).toEqual(
      [],
    );
    expect(checkResponse({ method: 'GET', path: '/verify/vs_abc', status: 200, headers: {}, body: {} })).toBeNull();
  });
});
