// ERC-8004 agent registration files (the agentURI): `data:` URIs are decoded inline, `https:` URIs fetched
// through the SafeHttpFetcher; other schemes (ipfs:, http:) are recorded as unsupported. The JSON is reduced
// to the few facts the scorer uses; anything malformed is ignored field by field, never trusted.
import type { HttpFetcher } from './safeFetch';

export type MetadataKind = 'data_uri' | 'https' | 'ipfs' | 'http' | 'other' | 'none';

export interface RegistrationService {
  name: string;
  endpoint: string;
}

export interface RegistrationInfo {
  name: string | null;
  description: string | null;
  services: RegistrationService[];
  x402_support: boolean;
  active: boolean | null;
  website_url: string | null;
  github_url: string | null;
  ens_name: string | null;
  a2a_endpoint: string | null;
  mcp_endpoint: string | null;
}

export interface ResolvedRegistration {
  status: 'ok' | 'error' | 'unsupported' | 'none';
  kind: MetadataKind;
  info: RegistrationInfo | null;
  error: string | null;
}

export const REGISTRATION_MAX_BYTES = 256 * 1024;

export function metadataKind(uri: string | null | undefined): MetadataKind {
  if (!uri) return 'none';
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri.trim())?.[1]?.toLowerCase();
  if (scheme === 'data') return 'data_uri';
  if (scheme === 'https') return 'https';
  if (scheme === 'ipfs') return 'ipfs';
  if (scheme === 'http') return 'http';
  return 'other';
}

/** Decodes `data:[<mediatype>][;base64],<payload>`; null when malformed or too large. */
export function decodeDataUri(uri: string, maxBytes = REGISTRATION_MAX_BYTES): Buffer | null {
  const match = /^data:([^,]*),(.*)$/is.exec(uri.trim());
  if (!match) return null;
  const isBase64 = /;base64$/i.test(match[1]);
  // Reject before decoding: base64 inflates by 4/3, percent-encoding by up to 3x.
  if (match[2].length > maxBytes * 3) return null;
  let body: Buffer;
  try {
    body = isBase64 ? Buffer.from(match[2], 'base64') : Buffer.from(decodeURIComponent(match[2]), 'utf8');
  } catch {
    return null;
  }
  return body.length > maxBytes ? null : body;
}

const str = (v: unknown, max = 2048): string | null => (typeof v === 'string' && v.trim() && v.length <= max ? v.trim() : null);
const httpsUrl = (v: unknown): string | null => {
  const s = str(v);
  if (!s) return null;
  try {
    const u = new URL(s);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.toString() : null;
  } catch {
    return null;
  }
};
const GITHUB_RE = /^https?:\/\/(?:www\.)?github\.com\/([A-Za-z0-9-]+)(?:\/([A-Za-z0-9._-]+))?/;

/** Reduces a parsed registration file to what the scorer uses. */
export function parseRegistration(json: unknown): RegistrationInfo | null {
  if (!json || typeof json !== 'object' || Array.isArray(json)) return null;
  const doc = json as Record<string, unknown>;
  const rawServices = Array.isArray(doc.services) ? doc.services : Array.isArray(doc.endpoints) ? doc.endpoints : [];
  const services: RegistrationService[] = [];
  for (const s of rawServices.slice(0, 50)) {
    if (!s || typeof s !== 'object') continue;
    const name = str((s as Record<string, unknown>).name, 64);
    const endpoint = str((s as Record<string, unknown>).endpoint);
    if (name && endpoint) services.push({ name, endpoint });
  }
  const byName = (n: string) => services.find((s) => s.name.toLowerCase() === n.toLowerCase())?.endpoint ?? null;
  const website = httpsUrl(byName('web')) ?? httpsUrl(doc.website) ?? httpsUrl(doc.external_url);
  const githubCandidate = [website, ...services.map((s) => s.endpoint)].find((u) => u && GITHUB_RE.test(u)) ?? null;
  const ens = byName('ENS');
  return {
    name: str(doc.name, 200),
    description: str(doc.description, 2000),
    services,
    x402_support: doc.x402Support === true || doc.x402support === true,
    active: typeof doc.active === 'boolean' ? doc.active : null,
    website_url: website && !GITHUB_RE.test(website) ? website : null,
    github_url: githubCandidate ? httpsUrl(githubCandidate) : null,
    ens_name: ens && /^[a-z0-9-]+(\.[a-z0-9-]+)*\.eth$/i.test(ens) ? ens.toLowerCase() : null,
    a2a_endpoint: httpsUrl(byName('A2A')),
    mcp_endpoint: httpsUrl(byName('MCP')),
  };
}

export class RegistrationResolver {
  constructor(
    private readonly fetcher: HttpFetcher,
    private readonly maxBytes = REGISTRATION_MAX_BYTES,
  ) {}

  async resolve(uri: string | null): Promise<ResolvedRegistration> {
    const kind = metadataKind(uri);
    if (kind === 'none') return { status: 'none', kind, info: null, error: null };
    if (kind === 'data_uri') {
      const body = decodeDataUri(uri!, this.maxBytes);
      if (!body) return { status: 'error', kind, info: null, error: 'malformed or oversized data: URI' };
      return this.fromJson(kind, body);
    }
    if (kind === 'https') {
      try {
        const res = await this.fetcher.fetch(uri!, { maxBytes: this.maxBytes, headers: { accept: 'application/json' } });
        if (res.status < 200 || res.status >= 300) return { status: 'error', kind, info: null, error: `HTTP ${res.status}` };
        return this.fromJson(kind, res.body);
      } catch (err) {
        return { status: 'error', kind, info: null, error: (err as Error).message };
      }
    }
    return { status: 'unsupported', kind, info: null, error: `${kind} registration URIs are not fetched` };
  }

  private fromJson(kind: MetadataKind, body: Buffer): ResolvedRegistration {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      return { status: 'error', kind, info: null, error: 'registration file is not JSON' };
    }
    const info = parseRegistration(json);
    if (!info) return { status: 'error', kind, info: null, error: 'registration file is not a JSON object' };
    return { status: 'ok', kind, info, error: null };
  }
}
