// Outbound HTTP for untrusted URLs (agent registration files, agent websites): https only, every hop's host
// resolved first and refused when any address is private, loopback, link-local or otherwise non-public (the
// connection is pinned to the vetted address, so DNS rebinding cannot swap it), bounded time and size.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

export interface FetchOptions {
  /** Response bodies larger than this are refused. */
  maxBytes?: number;
  timeoutMs?: number;
  headers?: Record<string, string>;
}

export interface FetchResult {
  status: number;
  contentType: string | null;
  body: Buffer;
  finalUrl: string;
}

/** The outbound fetcher the chain and reputation code use (tests inject a hand-written fake). */
export interface HttpFetcher {
  fetch(url: string, options?: FetchOptions): Promise<FetchResult>;
}

export type FetchFailure = 'invalid_url' | 'protocol' | 'private_address' | 'dns' | 'timeout' | 'too_large' | 'redirects' | 'network';

export class FetchRefusedError extends Error {
  constructor(readonly reason: FetchFailure, message: string) {
    super(message);
    this.name = 'FetchRefusedError';
  }
}

// Special-purpose ranges (RFC 6890 and friends): nothing an agent's public registration file lives on.
const BLOCKED = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001:db8::', 32], ['2001::', 23], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(prefix, bits, 'ipv6');

/** True for globally routable unicast addresses only. IPv4-mapped/NAT64 IPv6 forms are judged by their IPv4. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  if (family !== 6) return false;
  const lower = address.toLowerCase();
  const embedded = /^(?:::ffff:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (embedded) return isPublicAddress(embedded[1]);
  const mappedHex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (mappedHex) {
    const hi = parseInt(mappedHex[1], 16);
    const lo = parseInt(mappedHex[2], 16);
    return isPublicAddress(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  return !BLOCKED.check(address, 'ipv6');
}

export type LookupAll = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface SafeFetcherOptions {
  /** Default 5000 ms for the whole exchange (connect, headers, body). */
  timeoutMs?: number;
  /** Default 256 KiB. */
  maxBytes?: number;
  /** Default 3. */
  maxRedirects?: number;
  /** Default ['https:']. */
  protocols?: string[];
  /** Default isPublicAddress. Tests of the fetcher itself may allow loopback. */
  isAllowedAddress?: (address: string) => boolean;
  /** Default dns.promises.lookup(host, {all: true}). */
  lookup?: LookupAll;
  userAgent?: string;
}

const defaultLookup: LookupAll = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

export class SafeHttpFetcher implements HttpFetcher {
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxRedirects: number;
  private readonly protocols: string[];
  private readonly isAllowed: (address: string) => boolean;
  private readonly lookup: LookupAll;
  private readonly userAgent: string;

  constructor(options: SafeFetcherOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.maxBytes = options.maxBytes ?? 256 * 1024;
    this.maxRedirects = options.maxRedirects ?? 3;
    this.protocols = options.protocols ?? ['https:'];
    this.isAllowed = options.isAllowedAddress ?? isPublicAddress;
    this.lookup = options.lookup ?? defaultLookup;
    this.userAgent = options.userAgent ?? 'kya-reputation/1 (+https://kya.dev)';
  }

  async fetch(url: string, options: FetchOptions = {}): Promise<FetchResult> {
    const deadline = Date.now() + (options.timeoutMs ?? this.timeoutMs);
    const maxBytes = options.maxBytes ?? this.maxBytes;
    let current = url;
    for (let hop = 0; hop <= this.maxRedirects; hop++) {
      const target = await this.vet(current, deadline);
      const result = await this.request(target, maxBytes, deadline, options.headers ?? {});
      if (result.status >= 300 && result.status < 400 && result.location) {
        current = new URL(result.location, target.url).toString();
        continue;
      }
      return { status: result.status, contentType: result.contentType, body: result.body, finalUrl: target.url.toString() };
    }
    throw new FetchRefusedError('redirects', `more than ${this.maxRedirects} redirects`);
  }

  /** Parses the URL and resolves its host; every resolved address must pass the address policy. */
  private async vet(raw: string, deadline: number): Promise<{ url: URL; address: string; family: number }> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new FetchRefusedError('invalid_url', 'not a valid URL');
    }
    if (!this.protocols.includes(url.protocol)) throw new FetchRefusedError('protocol', `${url.protocol} URLs are not fetched`);
    if (url.username || url.password) throw new FetchRefusedError('invalid_url', 'URLs with credentials are not fetched');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: Array<{ address: string; family: number }>;
    if (net.isIP(host)) {
      addresses = [{ address: host, family: net.isIP(host) }];
    } else {
      try {
        addresses = await withDeadline(this.lookup(host), deadline, 'dns lookup');
      } catch (err) {
        if (err instanceof FetchRefusedError) throw err;
        throw new FetchRefusedError('dns', `cannot resolve ${host}`);
      }
    }
    if (addresses.length === 0) throw new FetchRefusedError('dns', `cannot resolve ${host}`);
    const refused = addresses.find((a) => !this.isAllowed(a.address));
    if (refused) throw new FetchRefusedError('private_address', `${host} resolves to a non-public address`);
    return { url, address: addresses[0].address, family: addresses[0].family };
  }

  private request(target: { url: URL; address: string; family: number }, maxBytes: number, deadline: number, headers: Record<string, string>) {
    return new Promise<{ status: number; contentType: string | null; body: Buffer; location: string | null }>((resolve, reject) => {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return reject(new FetchRefusedError('timeout', 'timed out'));
      const client = target.url.protocol === 'https:' ? https : http;
      // Connect to the address we vetted, whatever the resolver would say now (no rebinding window).
      const pinnedLookup = (_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
        if (opts?.all) cb(null, [{ address: target.address, family: target.family }]);
        else cb(null, target.address, target.family);
      };
      let settled = false;
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(err);
      };
      const req = client.request(
        target.url,
        { method: 'GET', lookup: pinnedLookup as unknown as net.LookupFunction, headers: { 'user-agent': this.userAgent, accept: '*/*', ...headers }, agent: false },
        (res) => {
          const status = res.statusCode ?? 0;
          const location = typeof res.headers.location === 'string' ? res.headers.location : null;
          const declared = Number(res.headers['content-length']);
          if (Number.isFinite(declared) && declared > maxBytes) return fail(new FetchRefusedError('too_large', `response exceeds ${maxBytes} bytes`));
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) return fail(new FetchRefusedError('too_large', `response exceeds ${maxBytes} bytes`));
            chunks.push(chunk);
          });
          res.on('end', () => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            resolve({ status, contentType: (res.headers['content-type'] as string | undefined) ?? null, body: Buffer.concat(chunks), location });
          });
          res.on('error', (err) => fail(new FetchRefusedError('network', err.message)));
        },
      );
      const timer = setTimeout(() => fail(new FetchRefusedError('timeout', 'timed out')), remaining);
      req.on('error', (err) => fail(new FetchRefusedError('network', err.message)));
      req.end();
    });
  }
}

async function withDeadline<T>(work: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<T>((_, reject) => {
        timer = setTimeout(() => reject(new FetchRefusedError('timeout', `${what} timed out`)), Math.max(0, deadline - Date.now()));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
