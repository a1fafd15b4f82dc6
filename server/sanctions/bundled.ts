// The OFAC snapshots shipped in the repository (server/sanctions/data): the default lists of a fresh install,
// and the starting lists of a production instance until its first successful fetch. Parsed once per process.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { parseSdnCsv as parseWalletCsv, parsePlain } from './walletParsers';
import type { RawWalletEntry } from './walletList';

/** The source name that selects the bundled snapshot (SANCTIONS_WALLET_SOURCE / SANCTIONS_NAME_SOURCE). */
export const BUNDLED = 'bundled';

interface Manifest {
  wallets: { published_at: string };
  sdn: { published_at: string };
  alt: { published_at: string };
}

/** The data directory next to this file, or (when running from a build in dist/) the one in the sources. */
function dataDir(): string {
  const candidates = [path.join(__dirname, 'data'), path.resolve(__dirname, '../../../server/sanctions/data')];
  const found = candidates.find((dir) => fs.existsSync(path.join(dir, 'manifest.json')));
  if (!found) throw new Error(`the bundled sanctions snapshot is missing (looked in ${candidates.join(', ')})`);
  return found;
}

function manifest(dir: string): Manifest {
  return JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Manifest;
}

const day = (iso: string) => new Date(`${iso}T00:00:00.000Z`);

export interface BundledWallets {
  entries: RawWalletEntry[];
  publishedAt: Date;
  sha256: string;
}

export interface BundledNames {
  sdnCsv: string;
  altCsv: string;
  publishedAt: Date;
  sha256: string;
}

let wallets: BundledWallets | null = null;
let names: BundledNames | null = null;

/**
 * Wallet addresses: the per-label plain lists plus the "Digital Currency Address" features of sdn.csv. The
 * sdn.csv entries come first so an address present in both keeps its SDN uid (WalletList.build merges).
 */
export function bundledWallets(): BundledWallets {
  if (wallets) return wallets;
  const dir = dataDir();
  const hash = crypto.createHash('sha256');
  const sdn = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'sdn.csv.gz')));
  hash.update(sdn);
  // Only the few hundred rows with an address matter: skip parsing the other ~14,000 (rows are single lines).
  const rows = sdn
    .toString('utf8')
    .split(/\r?\n/)
    .filter((line) => line.includes('Digital Currency Address'));
  const entries = [...parseWalletCsv(rows.join('\r\n')).entries];
  const walletDir = path.join(dir, 'wallets');
  for (const file of fs
    .readdirSync(walletDir)
    .filter((f) => f.endsWith('.txt'))
    .sort()) {
    const bytes = fs.readFileSync(path.join(walletDir, file));
    hash.update(file).update(bytes);
    entries.push(...parsePlain(bytes.toString('utf8'), /_([A-Z0-9]+)\.txt$/.exec(file)?.[1] ?? '').entries);
  }
  wallets = { entries, publishedAt: day(manifest(dir).wallets.published_at), sha256: hash.digest('hex') };
  return wallets;
}

/** sdn.csv + alt.csv text; the list's as_of is sdn.csv's date (the aliases only add names to its entries). */
export function bundledNames(): BundledNames {
  if (names) return names;
  const dir = dataDir();
  const sdn = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'sdn.csv.gz')));
  const alt = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'alt.csv.gz')));
  const sha256 = crypto.createHash('sha256').update(sdn).update(alt).digest('hex');
  names = { sdnCsv: sdn.toString('utf8'), altCsv: alt.toString('utf8'), publishedAt: day(manifest(dir).sdn.published_at), sha256 };
  return names;
}
