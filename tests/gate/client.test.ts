// The gate's HTTP client against a scripted HTTP server (each test queues the answers it needs): one retry for
// 5xx/429 honouring Retry-After and agent_instructions.action, no retry for quota or contact_merchant,
// keep-alive reuse of one socket; timeouts, resets and oversized answers classified for failOpen. Every test
// runs on both transports (undici on Node.js, node:http on Bun and Deno).
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { IdentityClient, type TransportKind } from '../../middleware/client';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

interface Scripted {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

describe.each<TransportKind>(['undici', 'node-http'])('IdentityClient over %s', (transport) => {
  let server: http.Server;
  let queue: Scripted[] = [];
  let hits: number[] = [];
  let connections = 0;
  let seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }> = [];
  let client: IdentityClient;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits.push(Date.now());
        seen.push({ method: req.method!, url: req.url!, headers: req.headers });
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
    seen = [];
    client?.close();
    client = new IdentityClient({
      baseUrl: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`),
      apiKey: 'as_live_test',
      timeoutMs: 1500,
      userAgent: 'test',
      transport,
    });
  });
  afterEach(() => client.close());

  it('retries a 5xx once after a short backoff and returns the second answer', async () => {
    queue = [
      { status: 502, body: { error: { code: 'api_error', message: 'bad gateway' } } },
      { status: 200, body: { decision: 'allow' } },
    ];
    const out = await client.post('v1/assess', {}, { retry: true });
    expect(out).toMatchObject({ kind: 'ok', status: 200, attempts: 2 });
    expect(hits).toHaveLength(2);
  });

  it('honours Retry-After on a 429 rate_limited before the one retry', async () => {
    queue = [
      { status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, headers: { 'retry-after': '1' } },
      { status: 200, body: { decision: 'allow' } },
    ];
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
    queue = [
      { status: 503, body: { error: { code: 'api_error', message: 'x' }, agent_instructions: { action: 'contact_merchant', steps: [], user_message: '' } } },
    ];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'http_error', attempts: 1 });
    queue = [{ status: 503, body: { error: { code: 'api_error', message: 'x' }, agent_instructions: JSON.stringify({ action: 'contact_merchant' }) } }];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'http_error', attempts: 1 });
    expect(hits).toHaveLength(2);
  });

  it('retries a retry_with_backoff 503 without Retry-After', async () => {
    queue = [
      { status: 503, body: { error: { code: 'api_error', message: 'x' }, agent_instructions: { action: 'retry_with_backoff' } } },
      { status: 200, body: { decision: 'deny' } },
    ];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'ok', body: { decision: 'deny' }, attempts: 2 });
  });

  it('never retries quota_exceeded, 4xx, or when retry is off', async () => {
    queue = [
      {
        status: 429,
        body: { error: { code: 'quota_exceeded', message: 'cap' } },
        headers: { 'x-quota-limit': '20', 'x-quota-used': '20', 'x-quota-reset': '2026-12-01' },
      },
    ];
    expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({
      kind: 'http_error',
      status: 429,
      attempts: 1,
      quota: { limit: 20, used: 20, reset: '2026-12-01' },
    });
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
    for (let i = 0; i < 5; i++) {
      await client.post('v1/assess', {}, { retry: false });
      // undici hands a socket back one event-loop turn after its answer (a call made sooner gets another).
      await nextTurn();
    }
    expect(connections - before).toBe(1);
  });

  it('sends the path under the base URL with the same headers on every call, extra headers riding along', async () => {
    const port = (server.address() as AddressInfo).port;
    const prefixed = new IdentityClient({
      baseUrl: new URL(`http://127.0.0.1:${port}/kya/`),
      apiKey: 'as_live_test',
      timeoutMs: 1500,
      userAgent: 'kya-gate/test',
      transport,
    });
    try {
      await prefixed.post('v1/assess', { a: 1 }, { retry: false });
      await prefixed.request('GET', 'v1/sessions/s%2F1', undefined, { retry: false, headers: { 'x-poll-secret': 'p', 'user-agent': 'ignored' } });
    } finally {
      prefixed.close();
    }
    expect(seen.map((r) => [r.method, r.url])).toEqual([
      ['POST', '/kya/v1/assess'],
      ['GET', '/kya/v1/sessions/s%2F1'],
    ]);
    expect(seen[0].headers).toMatchObject({
      accept: 'application/json',
      'user-agent': 'kya-gate/test',
      'x-api-key': 'as_live_test',
      'content-type': 'application/json',
      'content-length': '7',
    });
    expect(seen[1].headers).toMatchObject({ accept: 'application/json', 'user-agent': 'kya-gate/test', 'x-api-key': 'as_live_test', 'x-poll-secret': 'p' });
    expect(seen[1].headers['content-type']).toBeUndefined();
  });

  it('still answers after close(): the next call opens a new socket', async () => {
    await client.post('v1/assess', {}, { retry: false });
    client.close();
    expect(await client.post('v1/assess', {}, { retry: false })).toMatchObject({ kind: 'ok', status: 200 });
  });
});

/** A raw TCP server scripted per test: `onSocket` decides what each connection gets. */
async function rawServer(onSocket: (socket: net.Socket) => void): Promise<{ baseUrl: URL; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const okAnswer = (body: string) =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n${body}`;

describe.each<TransportKind>(['undici', 'node-http'])('IdentityClient failures over %s', (transport) => {
  const make = (baseUrl: URL, timeoutMs = 1500) => new IdentityClient({ baseUrl, apiKey: 'as_live_test', timeoutMs, userAgent: 'test', transport });

  it('reports a server that accepts but never answers as a timeout after timeoutMs, without retrying', async () => {
    let requests = 0;
    const srv = await rawServer((socket) => socket.on('data', () => requests++));
    const client = make(srv.baseUrl, 200);
    try {
      const started = Date.now();
      const out = await client.post('v1/assess', {}, { retry: true });
      expect(out).toEqual({ kind: 'network', reason: 'timeout', message: 'identity server did not answer within 200 ms', attempts: 1 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      expect(requests).toBe(1);
    } finally {
      client.close();
      await srv.close();
    }
  });

  it('reports a refused connection as unreachable, without retrying', async () => {
    const srv = await rawServer(() => undefined);
    const baseUrl = srv.baseUrl;
    await srv.close();
    const client = make(baseUrl);
    try {
      expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({
        kind: 'network',
        reason: 'unreachable',
        message: 'ECONNREFUSED',
        attempts: 1,
      });
    } finally {
      client.close();
    }
  });

  it('resends at once when the server closed the kept-alive socket before answering', async () => {
    let connection = 0;
    const srv = await rawServer((socket) => {
      const n = ++connection;
      let answered = 0;
      socket.on('data', () => {
        // The first connection answers once, then closes on the next request without answering.
        if (n === 1 && answered === 1) return socket.destroy();
        answered++;
        socket.write(okAnswer(JSON.stringify({ n })));
      });
    });
    const client = make(srv.baseUrl);
    try {
      expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'ok', body: { n: 1 }, attempts: 1 });
      await nextTurn();
      expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({ kind: 'ok', body: { n: 2 }, attempts: 2 });
    } finally {
      client.close();
      await srv.close();
    }
  });

  it('gives up on an answer over 1 MiB as unreachable', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) });
    const srv = await rawServer((socket) => socket.on('data', () => socket.write(okAnswer(big))));
    const client = make(srv.baseUrl);
    try {
      expect(await client.post('v1/assess', {}, { retry: true })).toMatchObject({
        kind: 'network',
        reason: 'unreachable',
        message: 'response too large',
        attempts: 1,
      });
    } finally {
      client.close();
      await srv.close();
    }
  });
});
