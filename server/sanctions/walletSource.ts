// Reads a wallet sanctions list from its configured source: the bundled snapshot, a file, a directory of list
// files (e.g. one plain list per currency label), or an http(s) URL (conditional GET); bounded in size and time.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseWalletList, type ParsedWalletList } from './walletParsers';
import type { RawWalletEntry, WalletListFormat } from './walletList';
import { BUNDLED, bundledWallets } from './bundled';
import { fetchConditional, isUrl, readLocalSource, type Validators } from './fetchSource';

const LIST_FILE = /\.(txt|json|csv|xml|list)$/i;

export interface LoadedSource {
  format: WalletListFormat;
  entries: RawWalletEntry[];
  publishedAt: Date | null;
  sha256: string;
  /** HTTP validators of a URL source, sent back on the next refresh. */
  validators: Validators | null;
}

/** `sanctioned_addresses_ETH.txt` (the layout of the public per-label lists) → `ETH`. */
export function labelFromName(name: string): string {
  return /(?:^|[_-])([A-Z0-9]{2,6})\.(?:txt|json|list)$/.exec(path.basename(name))?.[1] ?? '';
}

function parseOne(bytes: Buffer, format: WalletListFormat | 'auto', name: string): ParsedWalletList {
  return parseWalletList(bytes, format, { defaultLabel: labelFromName(name) });
}

/**
 * Reads and parses `source`; throws on any failure (the caller keeps its last good list). With `validators`
 * from the previous fetch of a URL, answers `not_modified` when the server says 304.
 */
export async function loadSource(
  source: string,
  format: WalletListFormat | 'auto',
  fetchImpl: typeof fetch = fetch,
  validators: Validators | null = null,
): Promise<LoadedSource | 'not_modified'> {
  const hash = crypto.createHash('sha256');
  if (source === BUNDLED) {
    const bundled = bundledWallets();
    return { format: 'plain', entries: bundled.entries, publishedAt: bundled.publishedAt, sha256: bundled.sha256, validators: null };
  }
  if (isUrl(source)) {
    const fetched = await fetchConditional(source, validators, fetchImpl);
    if (fetched.status === 'not_modified') return 'not_modified';
    hash.update(fetched.body);
    return { ...parseOne(fetched.body, format, new URL(source).pathname), sha256: hash.digest('hex'), validators: fetched.validators };
  }
  const stat = await fs.stat(source);
  if (!stat.isDirectory()) {
    const bytes = await readLocalSource(source);
    hash.update(bytes);
    return { ...parseOne(bytes, format, source), sha256: hash.digest('hex'), validators: null };
  }
  const files = (await fs.readdir(source)).filter((f) => LIST_FILE.test(f)).sort();
  if (files.length === 0) throw new Error(`${source} contains no list files (*.txt, *.json, *.csv, *.xml)`);
  const entries: RawWalletEntry[] = [];
  let publishedAt: Date | null = null;
  const formats = new Set<WalletListFormat>();
  for (const f of files) {
    const bytes = await readLocalSource(path.join(source, f));
    hash.update(f).update(bytes);
    const parsed = parseOne(bytes, format, f);
    formats.add(parsed.format);
    entries.push(...parsed.entries);
    if (parsed.publishedAt && (!publishedAt || parsed.publishedAt > publishedAt)) publishedAt = parsed.publishedAt;
  }
  return { format: formats.size === 1 ? [...formats][0] : 'plain', entries, publishedAt, sha256: hash.digest('hex'), validators: null };
}
