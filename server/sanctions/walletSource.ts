// Reads a wallet sanctions list from its configured source: a file, a directory of list files (e.g. one
// plain list per currency label), or an http(s) URL; bounded in size and time.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseWalletList, type ParsedWalletList } from './walletParsers';
import type { RawWalletEntry, WalletListFormat } from './walletList';

export const MAX_SOURCE_BYTES = 64 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 30_000;
const LIST_FILE = /\.(txt|json|csv|xml|list)$/i;

export interface LoadedSource {
  format: WalletListFormat;
  entries: RawWalletEntry[];
  publishedAt: Date | null;
  sha256: string;
}

/** `sanctioned_addresses_ETH.txt` (the layout of the public per-label lists) → `ETH`. */
export function labelFromName(name: string): string {
  return /(?:^|[_-])([A-Z0-9]{2,6})\.(?:txt|json|list)$/.exec(path.basename(name))?.[1] ?? '';
}

async function readUrl(url: string, fetchImpl: typeof fetch): Promise<Buffer> {
  const res = await fetchImpl(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'follow' });
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > MAX_SOURCE_BYTES) throw new Error(`${url} is larger than ${MAX_SOURCE_BYTES} bytes`);
  const body = Buffer.from(await res.arrayBuffer());
  if (body.length > MAX_SOURCE_BYTES) throw new Error(`${url} is larger than ${MAX_SOURCE_BYTES} bytes`);
  return body;
}

async function readFile(file: string): Promise<Buffer> {
  const stat = await fs.stat(file);
  if (stat.size > MAX_SOURCE_BYTES) throw new Error(`${file} is larger than ${MAX_SOURCE_BYTES} bytes`);
  return fs.readFile(file);
}

function parseOne(bytes: Buffer, format: WalletListFormat | 'auto', name: string): ParsedWalletList {
  return parseWalletList(bytes.toString('utf8'), format, { defaultLabel: labelFromName(name) });
}

/** Reads and parses `source`; throws on any failure (the caller keeps its last good list). */
export async function loadSource(source: string, format: WalletListFormat | 'auto', fetchImpl: typeof fetch = fetch): Promise<LoadedSource> {
  const hash = crypto.createHash('sha256');
  if (/^https?:\/\//i.test(source)) {
    const bytes = await readUrl(source, fetchImpl);
    hash.update(bytes);
    return { ...parseOne(bytes, format, new URL(source).pathname), sha256: hash.digest('hex') };
  }
  const stat = await fs.stat(source);
  if (!stat.isDirectory()) {
    const bytes = await readFile(source);
    hash.update(bytes);
    return { ...parseOne(bytes, format, source), sha256: hash.digest('hex') };
  }
  const files = (await fs.readdir(source)).filter((f) => LIST_FILE.test(f)).sort();
  if (files.length === 0) throw new Error(`${source} contains no list files (*.txt, *.json, *.csv, *.xml)`);
  const entries: RawWalletEntry[] = [];
  let publishedAt: Date | null = null;
  const formats = new Set<WalletListFormat>();
  for (const f of files) {
    const bytes = await readFile(path.join(source, f));
    hash.update(f).update(bytes);
    const parsed = parseOne(bytes, format, f);
    formats.add(parsed.format);
    entries.push(...parsed.entries);
    if (parsed.publishedAt && (!publishedAt || parsed.publishedAt > publishedAt)) publishedAt = parsed.publishedAt;
  }
  return { format: formats.size === 1 ? [...formats][0] : 'plain', entries, publishedAt, sha256: hash.digest('hex') };
}
