// Outbound HTTP for untrusted URLs (agent registration files, agent websites): https only, every hop's host
// resolved first and refused when any address is private, loopback, link-local or otherwise non-public (the
// connection is pinned to the vetted address, so DNS rebinding cannot swap it), bounded time and size.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

export interface FetchOptions {
  /** Response bodies larger than this are refused. */
  maxBytes?: number;
  timeoutMs?: number;
  headers?: Record<string, string>;
  /** Default GET. */
  method?: 'GET' | 'POST';
  /** Request body (sent with POST). */
  body?: string | Buffer;
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
  constructor(
    readonly reason: FetchFailure,
    message: string,
  ) {
    super(message);
    this.name = 'FetchRefusedError';
  }
}

// Which addresses count as public is ipaddr.js's classification of the IANA special-purpose registries: only
// its `unicast` (global unicast) range is public. IPv6 forms that carry an IPv4 address (IPv4-mapped, the
// RFC 6052 and RFC 6145 translation prefixes, 6to4) are judged by that IPv4 address, so a private IPv4 cannot
// be reached through its IPv6 spelling.
const LOCAL_USE_NAT64 = ipaddr.parseCIDR('64:ff9b:1::/48'); // RFC 8215: the embedding depends on local config
// IPv4-compatible ::a.b.c.d (deprecated, never a real destination). Checked with Node's own parser, because
// ipaddr.js reads `::a.b.c.d` as the IPv4-mapped ::ffff:a.b.c.d.
const IPV4_COMPATIBLE = new net.BlockList();
IPV4_COMPATIBLE.addSubnet('::', 96, 'ipv6');

function embeddedIPv4(address: ipaddr.IPv6, from: number): ipaddr.IPv4 {
  return new ipaddr.IPv4(address.toByteArray().slice(from, from + 4));
}

function isPublicParsed(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.kind() === 'ipv4') return address.range() === 'unicast';
  const v6 = address as ipaddr.IPv6;
  if (v6.match(LOCAL_USE_NAT64)) return false;
  switch (v6.range()) {
    case 'unicast':
      return true;
    case 'ipv4Mapped': // ::ffff:0:0/96
    case 'rfc6145': // ::ffff:0:0:0/96
    case 'rfc6052': // 64:ff9b::/96
      return isPublicParsed(embeddedIPv4(v6, 12));
    case '6to4': // 2002::/16, the IPv4 address in bits 16–47
      return isPublicParsed(embeddedIPv4(v6, 2));
    default:
      return false;
  }
}

/** True for globally routable unicast addresses only; IPv6 forms embedding an IPv4 address are judged by it. */
export function isPublicAddress(address: string): boolean {
  // Only canonical literals (what DNS answers and WHATWG URLs produce): no octal, hex or short IPv4 forms.
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 6 && IPV4_COMPATIBLE.check(address.replace(/%.*$/, ''), 'ipv6')) return false;
  try {
    return isPublicParsed(ipaddr.parse(address));
  } catch {
    return false;
  }
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
      const result = await this.request(target, maxBytes, deadline, options.headers ?? {}, options.method ?? 'GET', options.body);
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

  private request(
    target: { url: URL; address: string; family: number },
    maxBytes: number,
    deadline: number,
    headers: Record<string, string>,
    method: 'GET' | 'POST',
    body?: string | Buffer,
  ) {
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
        { method, lookup: pinnedLookup as unknown as net.LookupFunction, headers: { 'user-agent': this.userAgent, accept: '*/*', ...headers }, agent: false },
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
            resolve({ status, contentType: res.headers['content-type'] ?? null, body: Buffer.concat(chunks), location });
          });
          res.on('error', (err) => fail(new FetchRefusedError('network', err.message)));
        },
      );
      const timer = setTimeout(() => fail(new FetchRefusedError('timeout', 'timed out')), remaining);
      req.on('error', (err) => fail(new FetchRefusedError('network', err.message)));
      req.end(body);
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
