// Reads a sanctions list over HTTP(S) with conditional requests (If-None-Match / If-Modified-Since), so an
// hourly refresh of an unchanged list costs a 304 and no parsing; bounded in size and time. Also the local-file
// read and the OFAC CSV parse shared by the name and wallet lists.
import fs from 'node:fs/promises';
import { parse } from 'csv-parse/sync';

export interface Validators {
  etag: string | null;
  lastModified: string | null;
}

export type Fetched = { status: 'not_modified' } | { status: 'ok'; body: Buffer; validators: Validators };

// OFAC's sdn_advanced.xml is over 100 MB and growing; anything far beyond it is not a sanctions list.
export const MAX_SOURCE_BYTES = 256 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 30_000;

export function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

export async function fetchConditional(url: string, validators: Validators | null, fetchImpl: typeof fetch = fetch): Promise<Fetched> {
  const headers: Record<string, string> = {};
  if (validators?.etag) headers['If-None-Match'] = validators.etag;
  if (validators?.lastModified) headers['If-Modified-Since'] = validators.lastModified;
  const res = await fetchImpl(url, { headers, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'follow' });
  if (res.status === 304) {
    await res.body?.cancel().catch(() => undefined);
    return { status: 'not_modified' };
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`GET ${url} answered ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > MAX_SOURCE_BYTES) throw new Error(`${url} is larger than ${MAX_SOURCE_BYTES} bytes`);
  const body = Buffer.from(await res.arrayBuffer());
  if (body.length > MAX_SOURCE_BYTES) throw new Error(`${url} is larger than ${MAX_SOURCE_BYTES} bytes`);
  return { status: 'ok', body, validators: { etag: res.headers.get('etag'), lastModified: res.headers.get('last-modified') } };
}

/** Reads a local list file, refusing one larger than MAX_SOURCE_BYTES. */
export async function readLocalSource(file: string): Promise<Buffer> {
  const stat = await fs.stat(file);
  if (stat.size > MAX_SOURCE_BYTES) throw new Error(`${file} is larger than ${MAX_SOURCE_BYTES} bytes`);
  return fs.readFile(file);
}

/** Rows of an OFAC CSV file (SDN.CSV, ALT.CSV; no header). */
export function parseOfacCsv(text: string): string[][] {
  // OFAC files end with a DOS end-of-file byte (0x1A); rows may have fewer columns than the header describes.
  return parse(text.replaceAll('\x1a', ''), { relax_column_count: true, relax_quotes: true, skip_empty_lines: true, trim: true }) as string[][];
}
