// HTTP client for the identity server: keep-alive sockets, a timeout, and one retry for 5xx/429 that honours
// Retry-After and the server's agent_instructions.action. Never throws: every outcome, including network
// failure, is a value the caller maps to allow/deny/degraded.
//
// Two transports. On Node.js, undici's dispatcher API: a cold gate request (one assess call) costs about half
// the CPU it does through node:http, whose ClientRequest, Agent, header processing and IncomingMessage stream
// dominated the gate's own profile. On Bun and Deno, node:http: Bun replaces the `undici` module with a shim
// whose Pool cannot dispatch.
import http from 'node:http';
import https from 'node:https';
import { Pool, type Dispatcher } from 'undici';
import type { ErrorResponseBody, QuotaInfo } from './wire';

export type CallOutcome<T> =
  | { kind: 'ok'; status: number; body: T; quota: QuotaInfo | null; attempts: number }
  /** A non-2xx answer from the server (after any retry). */
  | { kind: 'http_error'; status: number; body: ErrorResponseBody | null; retryAfterSeconds: number | null; quota: QuotaInfo | null; attempts: number }
  /** Timeout, refused/reset connection, or a response that is not JSON. */
  | { kind: 'network'; reason: 'timeout' | 'unreachable' | 'bad_response'; message: string; attempts: number };

export type TransportKind = 'undici' | 'node-http';

export interface ClientOptions {
  baseUrl: URL;
  apiKey: string;
  /** undici: connecting, waiting for the answer's headers and each pause in its body; node:http: the whole attempt. */
  timeoutMs: number;
  userAgent: string;
  /** Default: `undici` on Node.js, `node-http` on Bun and Deno. */
  transport?: TransportKind;
}

const MAX_RESPONSE_BYTES = 1024 * 1024;
const BASE_BACKOFF_MS = 100;
/** Sockets to the identity server at most (both transports). */
const MAX_CONNECTIONS = 256;

const timeoutMessage = (ms: number) => `identity server did not answer within ${ms} ms`;

class TimeoutError extends Error {
  constructor(ms: number) {
    super(timeoutMessage(ms));
  }
}

type Attempt<T> = CallOutcome<T> & { staleSocket?: boolean };
type Method = 'GET' | 'POST' | 'DELETE';
type Headers = Record<string, string>;

/** One attempt of one call; `path` is absolute (base path included), `headers` complete but for content-length. */
interface Transport {
  send<T>(method: Method, path: string, payload: string | null, headers: Headers, attempts: number): Promise<Attempt<T>>;
  close(): void;
}

/** The outcome of a complete answer (both transports). */
function answerOutcome<T>(status: number, headers: http.IncomingHttpHeaders, text: string, attempts: number): Attempt<T> {
  let parsed: unknown = null;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    parsed = undefined;
  }
  if (status >= 200 && status < 300) {
    if (parsed === undefined || parsed === null || typeof parsed !== 'object') {
      return { kind: 'network', reason: 'bad_response', message: `identity server answered ${status} without a JSON body`, attempts };
    }
    return { kind: 'ok', status, body: parsed as T, quota: parseQuota(headers), attempts };
  }
  const body = parsed && typeof parsed === 'object' && 'error' in parsed ? (parsed as ErrorResponseBody) : null;
  const retryAfter = headers['retry-after'] as string | string[] | undefined;
  return {
    kind: 'http_error',
    status,
    body,
    retryAfterSeconds: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter),
    quota: parseQuota(headers),
    attempts,
  };
}

function parseRetryAfter(value: string | undefined): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function parseQuota(headers: http.IncomingHttpHeaders): QuotaInfo | null {
  const limit = headers['x-quota-limit'];
  const used = headers['x-quota-used'];
  const reset = headers['x-quota-reset'];
  if (limit === undefined && used === undefined && reset === undefined) return null;
  const num = (v: string | string[] | undefined) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : null);
  return { limit: num(limit), used: num(used), reset: typeof reset === 'string' ? reset : null };
}

/** The action of an error's agent_instructions (object or JSON-encoded string), if any. */
export function instructionAction(body: ErrorResponseBody | null): string | null {
  const raw = body?.agent_instructions;
  if (!raw) return null;
  if (typeof raw === 'object') return typeof raw.action === 'string' ? raw.action : null;
  try {
    const parsed = JSON.parse(raw) as { action?: unknown };
    return typeof parsed.action === 'string' ? parsed.action : null;
  } catch {
    return null;
  }
}

/** Collects one answer through undici's dispatcher API: no response stream, no promise per phase. */
class UndiciAnswer<T> implements Dispatcher.DispatchHandler {
  private status = 0;
  private headers: http.IncomingHttpHeaders = {};
  private chunks: Buffer[] = [];

  constructor(
    private readonly resolve: (outcome: Attempt<T>) => void,
    private readonly attempts: number,
    private readonly timeoutMs: number,
  ) {}

  // Present so undici uses this (non-deprecated) handler interface.
  onRequestStart(): void {}

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: http.IncomingHttpHeaders): void {
    this.status = statusCode;
    this.headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const text = this.chunks.length === 1 ? this.chunks[0].toString('utf8') : Buffer.concat(this.chunks).toString('utf8');
    this.resolve(answerOutcome<T>(this.status, this.headers, text, this.attempts));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const err = error as NodeJS.ErrnoException & { socket?: { bytesRead?: number } };
    const attempts = this.attempts;
    const code = err.code;
    if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
      return this.resolve({ kind: 'network', reason: 'timeout', message: timeoutMessage(this.timeoutMs), attempts });
    }
    if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return this.resolve({ kind: 'network', reason: 'unreachable', message: 'response too large', attempts });
    // A keep-alive socket the server closed before any answer: it had carried earlier answers (bytes read), or
    // the write met a reset.
    const staleSocket = this.status === 0 && ((code === 'UND_ERR_SOCKET' && (err.socket?.bytesRead ?? 0) > 0) || code === 'ECONNRESET' || code === 'EPIPE');
    this.resolve({ kind: 'network', reason: 'unreachable', message: this.status === 0 ? (code ?? err.message) : 'response aborted', attempts, staleSocket });
  }
}

class UndiciTransport implements Transport {
  private pool: Pool;

  constructor(
    private readonly origin: string,
    private readonly timeoutMs: number,
  ) {
    this.pool = this.newPool();
  }

  private newPool(): Pool {
    // Keep-alive (undici's default): the gate sits on every paid request, a fresh TCP (+TLS) handshake each
    // time would dominate. Undici also retires a socket before the server's Keep-Alive timeout.
    return new Pool(this.origin, {
      connections: MAX_CONNECTIONS,
      pipelining: 1,
      connectTimeout: this.timeoutMs,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      maxResponseSize: MAX_RESPONSE_BYTES,
    });
  }

  send<T>(method: Method, path: string, payload: string | null, headers: Headers, attempts: number): Promise<Attempt<T>> {
    return new Promise((resolve) => {
      this.pool.dispatch({ method, path, headers, body: payload }, new UndiciAnswer<T>(resolve, attempts, this.timeoutMs));
    });
  }

  /** Drops every socket (in-flight calls end unreachable); later calls open new ones, as with node:http. */
  close(): void {
    const old = this.pool;
    this.pool = this.newPool();
    old.destroy().catch(() => undefined);
  }
}

class NodeHttpTransport implements Transport {
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;
  private readonly base: { protocol: string; hostname: string; port: string };

  constructor(
    baseUrl: URL,
    private readonly timeoutMs: number,
  ) {
    const isHttps = baseUrl.protocol === 'https:';
    this.transport = isHttps ? https : http;
    // An IPv6 literal comes bracketed in URL.hostname; http.request wants it bare.
    this.base = { protocol: baseUrl.protocol, hostname: baseUrl.hostname.replace(/^\[(.*)\]$/, '$1'), port: baseUrl.port };
    this.agent = new (isHttps ? https.Agent : http.Agent)({ keepAlive: true, keepAliveMsecs: 1000, maxSockets: MAX_CONNECTIONS, maxFreeSockets: 64 });
  }

  send<T>(method: Method, path: string, payload: string | null, baseHeaders: Headers, attempts: number): Promise<Attempt<T>> {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (outcome: Attempt<T>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const headers: Record<string, string | number> = payload === null ? baseHeaders : { ...baseHeaders, 'content-length': Buffer.byteLength(payload) };
      const req = this.transport.request({ ...this.base, path, method, agent: this.agent, headers });
      const timer = setTimeout(() => req.destroy(new TimeoutError(this.timeoutMs)), this.timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof TimeoutError) return finish({ kind: 'network', reason: 'timeout', message: err.message, attempts });
        const staleSocket = req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
        finish({ kind: 'network', reason: 'unreachable', message: err.code ?? err.message, attempts, staleSocket });
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) req.destroy(new Error('response too large'));
          else chunks.push(chunk);
        });
        res.on('error', () => finish({ kind: 'network', reason: 'unreachable', message: 'response aborted', attempts }));
        res.on('end', () => finish(answerOutcome<T>(res.statusCode ?? 0, res.headers, Buffer.concat(chunks).toString('utf8'), attempts)));
      });
      req.end(payload ?? undefined);
    });
  }

  /** Closes idle keep-alive sockets (tests, graceful shutdown). */
  close(): void {
    this.agent.destroy();
  }
}

/** Bun swaps the `undici` module for a shim without a working Pool; Deno's Node compatibility is not undici's target. */
function defaultTransport(): TransportKind {
  const versions = process.versions as NodeJS.ProcessVersions & { bun?: string; deno?: string };
  return versions.bun !== undefined || versions.deno !== undefined ? 'node-http' : 'undici';
}

export class IdentityClient {
  private readonly transport: Transport;
  private readonly basePath: string;
  /** Built once: every call sends the same accept / user-agent / API key (and content-type with a body). */
  private readonly bareHeaders: Headers;
  private readonly jsonHeaders: Headers;

  constructor(private readonly options: ClientOptions) {
    const { baseUrl } = options;
    this.transport =
      (options.transport ?? defaultTransport()) === 'undici'
        ? new UndiciTransport(baseUrl.origin, options.timeoutMs)
        : new NodeHttpTransport(baseUrl, options.timeoutMs);
    this.basePath = baseUrl.pathname.endsWith('/') ? baseUrl.pathname : baseUrl.pathname.replace(/[^/]*$/, '');
    this.bareHeaders = { accept: 'application/json', 'user-agent': options.userAgent };
    if (options.apiKey) this.bareHeaders['x-api-key'] = options.apiKey;
    this.jsonHeaders = { ...this.bareHeaders, 'content-type': 'application/json' };
  }

  /** POSTs JSON; with `retry`, one more attempt for 5xx/429 (see file header). */
  post<T>(path: string, body: unknown, { retry }: { retry: boolean }): Promise<CallOutcome<T>> {
    return this.request<T>('POST', path, body, { retry });
  }

  /** Any method; `body` undefined sends none. Extra headers (e.g. `X-Poll-Secret`) ride along. */
  async request<T>(method: Method, path: string, body: unknown, { retry, headers }: { retry: boolean; headers?: Headers }): Promise<CallOutcome<T>> {
    const payload = body === undefined ? null : JSON.stringify(body);
    // Relative to the base URL's path, as `new URL(path, baseUrl)` would resolve it (paths are pre-encoded).
    const fullPath = this.basePath + (path.startsWith('/') ? path.slice(1) : path);
    const base = payload === null ? this.bareHeaders : this.jsonHeaders;
    const allHeaders = headers ? { ...headers, ...base } : base;
    const first = await this.transport.send<T>(method, fullPath, payload, allHeaders, 1);
    if (!retry) return first;
    const delay = this.retryDelay(first);
    if (delay === null) return first;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    return this.transport.send<T>(method, fullPath, payload, allHeaders, 2);
  }

  /** Milliseconds to wait before the one retry, or null when this outcome must not be retried. */
  private retryDelay(outcome: Attempt<unknown>): number | null {
    // A keep-alive socket the server closed between requests: the request never reached it, resend at once.
    if (outcome.kind === 'network') return outcome.staleSocket ? 0 : null;
    if (outcome.kind !== 'http_error') return null;
    const retryable = outcome.status >= 500 || outcome.status === 429;
    if (!retryable) return null;
    // The cap does not lift by retrying; and contact_merchant means a retry cannot help.
    if (outcome.body?.error?.code === 'quota_exceeded') return null;
    if (instructionAction(outcome.body) === 'contact_merchant') return null;
    const delay = outcome.retryAfterSeconds !== null ? outcome.retryAfterSeconds * 1000 : BASE_BACKOFF_MS + Math.floor(Math.random() * BASE_BACKOFF_MS);
    // Honouring a Retry-After longer than our own timeout would hold the buyer's request for nothing.
    return delay <= this.options.timeoutMs ? delay : null;
  }

  /** Closes the keep-alive sockets (tests, graceful shutdown); a later call opens new ones. */
  close(): void {
    this.transport.close();
  }
}
