// The precomputed security headers are exactly helmet's, on every response.
import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { staticSecurityHeaders } from '../../server/http/securityHeaders';

function appWith(middleware: express.RequestHandler) {
  const app = express();
  app.use(middleware);
  app.get('/x', (_req, res) => {
    res.json({ ok: true });
  });
  return app;
}

function securityHeaders(headers: Record<string, string>) {
  const { date: _date, etag: _etag, 'content-length': _length, ...rest } = headers;
  return rest;
}

describe('static security headers', () => {
  it('sets the same headers as helmet, on every response', async () => {
    const expected = securityHeaders((await request(appWith(helmet())).get('/x')).headers);
    const app = appWith(staticSecurityHeaders());
    for (let i = 0; i < 2; i++) {
      const res = await request(app).get('/x');
      expect(securityHeaders(res.headers as Record<string, string>)).toEqual(expected);
    }
    expect(expected['content-security-policy']).toContain("default-src 'self'");
    expect(expected['x-powered-by']).toBeUndefined();
  });
});
