// HTTP client for the identity server: keep-alive sockets, a per-attempt timeout, and one retry for
// 5xx/429 that honours Retry-After and the server's agent_instructions.action. Never throws: every outcome,
// including network failure, is a value the caller maps to allow/deny/degraded.
import http from 'node:http';
import https from 'node:https';
import type { ErrorResponseBody, QuotaInfo } from './wire';

export type CallOutcome<T> =
  | { kind: 'ok'; status: number; body: T; quota: QuotaInfo | null; attempts: number }
  /** A non-2xx answer from the server (after any retry). */
  | { kind: 'http_error'; status: number; body: ErrorResponseBody | null; retryAfterSeconds: number | null; quota: QuotaInfo | null; attempts: number }
  /** Timeout, refused/reset connection, or a response that is not JSON. */
  | { kind: 'network'; reason: 'timeout' | 'unreachable' | 'bad_response'; message: string; attempts: number };

export interface ClientOptions {
  baseUrl: URL;
  apiKey: string;
  timeoutMs: number;
  userAgent: string;
}

const MAX_RESPONSE_BYTES = 1024 * 1024;
const BASE_BACKOFF_MS = 100;

class TimeoutError extends Error {
  constructor(ms: number) {
    super(`identity server did not answer within ${ms} ms`);
  }
}

type Attempt<T> = CallOutcome<T> & { staleSocket?: boolean };

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

export class IdentityClient {
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;

  constructor(private readonly options: ClientOptions) {
    const isHttps = options.baseUrl.protocol === 'https:';
    this.transport = isHttps ? https : http;
    // Keep-alive: the gate sits on every paid request, a fresh TCP (+TLS) handshake each time would dominate.
    this.agent = new (isHttps ? https.Agent : http.Agent)({ keepAlive: true, keepAliveMsecs: 1000, maxSockets: 256, maxFreeSockets: 64 });
  }

  /** POSTs JSON; with `retry`, one more attempt for 5xx/429 (see file header). */
  async post<T>(path: string, body: unknown, { retry }: { retry: boolean }): Promise<CallOutcome<T>> {
    const payload = JSON.stringify(body);
    const first = await this.attempt<T>(path, payload, 1);
    if (!retry) return first;
    const delay = this.retryDelay(first);
    if (delay === null) return first;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    return this.attempt<T>(path, payload, 2);
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

  private attempt<T>(path: string, payload: string, attempts: number): Promise<Attempt<T>> {
    const url = new URL(path.replace(/^\//, ''), this.options.baseUrl);
    return new Promise((resolve) => {
      let settled = false;
      const finish = (outcome: Attempt<T>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const req = this.transport.request(url, {
        method: 'POST',
        agent: this.agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          accept: 'application/json',
          'user-agent': this.options.userAgent,
          'x-api-key': this.options.apiKey,
        },
      });
      const timer = setTimeout(() => req.destroy(new TimeoutError(this.options.timeoutMs)), this.options.timeoutMs);
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
        res.on('end', () => {
          let parsed: unknown = null;
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            parsed = text.length > 0 ? JSON.parse(text) : null;
          } catch {
            parsed = undefined;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            if (parsed === undefined || parsed === null || typeof parsed !== 'object') {
              return finish({ kind: 'network', reason: 'bad_response', message: `identity server answered ${status} without a JSON body`, attempts });
            }
            return finish({ kind: 'ok', status, body: parsed as T, quota: parseQuota(res.headers), attempts });
          }
          const body = parsed && typeof parsed === 'object' && 'error' in (parsed as object) ? (parsed as ErrorResponseBody) : null;
          const retryAfter = res.headers['retry-after'];
          finish({ kind: 'http_error', status, body, retryAfterSeconds: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter), quota: parseQuota(res.headers), attempts });
        });
      });
      req.end(payload);
    });
  }

  /** Closes idle keep-alive sockets (tests, graceful shutdown). */
  close(): void {
    this.agent.destroy();
  }
}
