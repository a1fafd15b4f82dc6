// The Next.js middleware helper with real NextRequest / NextResponse objects against a live identity server: a
// denial is returned as the response, an allowed request continues with the verdict forwarded as x-kya-*
// request headers (never the client's own).
import { NextRequest, NextResponse } from 'next/server';
import { resetTables } from '../support/harness';
import { ASSESS_TABLES, createOperator, mintCredential } from '../assess/seed';
import { kyaMiddleware } from '@kya/gate/next';
import { startIdentityServer, type IdentityServer } from './support';

describe('Next.js kyaMiddleware', () => {
  let id: IdentityServer;
  let gate: ReturnType<typeof kyaMiddleware>;
  beforeAll(async () => {
    id = await startIdentityServer();
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
    gate = kyaMiddleware({ apiKey: id.apiKey, baseUrl: id.baseUrl, requireKyc: true });
  });
  afterAll(async () => {
    gate.gate.close();
    await id.close();
  });

  // What a middleware.ts built from the helper does.
  const middleware = async (req: NextRequest) => (await gate(req)) ?? NextResponse.next({ request: { headers: gate.forwardHeaders(req) } });

  it('returns the denial for an agent without identity', async () => {
    const res = await middleware(new NextRequest('http://shop.test/api/buy', { method: 'POST' }));
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ error: { code: 'identity_required' }, decision: 'deny' });
  });

  it('continues an allowed request with the verdict as request headers, dropping forged ones', async () => {
    const { token } = await mintCredential(id.h.deps, await createOperator(id.h.deps));
    const req = new NextRequest('http://shop.test/api/buy', {
      method: 'POST',
      headers: { 'X-Operator-Token': token, 'x-kya-degraded': 'forged', 'x-kya-wallet': '0xforged' },
    });
    const res = await middleware(req);
    expect(res.headers.get('x-middleware-next')).toBe('1');
    const forwarded = gate.forwardHeaders(req);
    expect(forwarded.get('x-kya-decision')).toBe('allow');
    expect(forwarded.get('x-kya-operator-handle')).toMatch(/^oph_/);
    expect(forwarded.get('x-kya-degraded')).toBeNull();
    expect(forwarded.get('x-kya-wallet')).toBeNull();
    // NextResponse.next carries the overridden request headers to the route.
    expect(res.headers.get('x-middleware-request-x-kya-decision')).toBe('allow');
  });
});
