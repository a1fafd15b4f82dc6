// The gate's HTTP client against a scripted HTTP server (each test queues the answers it needs): one retry for
// 5xx/429 honouring Retry-After and agent_instructions.action, no retry for quota or contact_merchant,
// keep-alive reuse of one socket.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { IdentityClient } from '../../middleware/client';

interface Scripted {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

describe('IdentityClient', () => {
  let server: http.Server;
  let queue: Scripted[] = [];
  let hits: number[] = [];
  let connections = 0;
  let client: IdentityClient;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits.push(Date.now());
        const next = queue.shift() ?? { status: 200, body: { decision: 'allow' } };
        res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
        res.end(JSON.stringify(next.body ?? {}));
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    queue = [];
    hits = [];
    client?.close();
    client = new IdentityClient({ baseUrl: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`), apiKey: 'as_live_test', timeoutMs: 1500, userAgent: 'test' });
  });
  afterEach(() => client.close());

  it('retries a 5xx once after a short backoff and returns the second answer', async () => {
    queue = [{ status: 502, body: { error: { code: 'api_error', message: 'bad gateway' } } }, { status: 200, body: { decision: 'allow' } }];
    const out = await client.post('v1/assess', {}, { retry: true });
    expect(out).toMatchObject({ kind: 'ok', status: 200, attempts: 2 });
    expect(hits).toHaveLength(2);
  });

  it('honours Retry-After on a 429 rate_limited before the one retry', async () => {
    queue = [{ status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, headers: { 'retry-after': '1' } }, { status: 200, body: { decision: 'allow' } }];
    const out = await client.post('v1/assess', {}, { retry: true });
    expect(out.kind).toBe('ok');
    expect(hits[1] - hits[0]).toBeGreaterThanOrEqual(950);
  });

  it('does not retry when Retry-After is longer than the timeout', async () => {
    queue = [{ status: 503, body: { error: { code: 'api_error', message: 'down' } }, headers: { 'retry-after': '5' } }];
    const out = await client.post('v1/assess', {}, { retry: true });
    expect(out).toMatchObject({ kind: 'http_error', status: 503, retryAfterSeconds: 5, attempts: 1 });
    expect(hits).toHaveLength(1);
  });

  it('does not retry when agent_instructions.action is contact_merchant (object or JSON string)', async () => {
    queue = [{ status: 503, body: { error: { code: 'api_error', message: 'x' }, agent_instructions: { action: 'contact_merchant', steps: [], user_message: '' } } }];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'http_error', attempts: 1 });
    queue = [{ status: 503, body: { error: { code: 'api_error', message: 'x' }, agent_instructions: JSON.stringify({ action: 'contact_merchant' }) } }];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'http_error', attempts: 1 });
    expect(hits).toHaveLength(2);
  });

  it('retries a retry_with_backoff 503 without Retry-After', async () => {
    queue = [{ status: 503, body: { error: { code: 'api_error', message: 'x' }, agent_instructions: { action: 'retry_with_backoff' } } }, { status: 200, body: { decision: 'deny' } }];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'ok', body: { decision: 'deny' }, attempts: 2 });
  });

  it('never retries quota_exceeded, 4xx, or when retry is off', async () => {
    queue = [{ status: 429, body: { error: { code: 'quota_exceeded', message: 'cap' } }, headers: { 'x-quota-limit': '20', 'x-quota-used': '20', 'x-quota-reset': '2026-12-01' } }];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'http_error', status: 429, attempts: 1, quota: { limit: 20, used: 20, reset: '2026-12-01' } });
    queue = [{ status: 400, body: { error: { code: 'bad_request', message: 'x' } } }];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'http_error', status: 400, attempts: 1 });
    queue = [{ status: 500, body: { error: { code: 'internal_error', message: 'x' } } }];
    expect(await client.post('v1/credentials/wallets', {}, { retry: false })).toMatchObject({ kind: 'http_error', status: 500, attempts: 1 });
    expect(hits).toHaveLength(3);
  });

  it('reports a 200 without a JSON body as bad_response', async () => {
    queue = [{ status: 200, body: 'not an object' }];
    expect(await client.post('v1/assess', {}, { retry: false })).toMatchObject({ kind: 'network', reason: 'bad_response' });
  });

  it('reuses one keep-alive socket for sequential calls', async () => {
    const before = connections;
    for (let i = 0; i < 5; i++) await client.post('v1/assess', {}, { retry: false });
    expect(connections - before).toBe(1);
  });
});
