// The in-memory wallet-address sanctions list: one Map per address family (`evm` lowercased, `solana` and
// every other family verbatim), so a lookup is O(1). Immutable once built; refreshes swap a whole new list.
import { isEvmAddress, isSolanaAddress } from '../../shared/address';
import type { Validators } from './fetchSource';

export type WalletListFormat = 'sdn_advanced' | 'sdn_xml' | 'sdn_csv' | 'plain';

export interface WalletListEntry {
  /** The currency label the list uses (ETH, XBT, USDT, SOL, …). */
  label: string;
  /** The SDN entry's identity id; one id may cover several addresses. `unknown` for plain lists without ids. */
  sdnUid: string;
  /** ISO date (YYYY-MM-DD) of the listing, when the source gives one. */
  listedAt: string | null;
}

/** One address as a loader found it, before it is filed under a family. */
export interface RawWalletEntry extends WalletListEntry {
  address: string;
}

export interface WalletListMeta {
  source: string;
  format: WalletListFormat;
  /** When this instance (or the one that persisted it) built the list. */
  loadedAt: Date;
  /** Publication date of the list itself, when the source states one. */
  publishedAt: Date | null;
  /** SHA-256 of the source bytes: an unchanged source is not stored again. */
  sha256: string;
  /** HTTP validators (ETag / Last-Modified) of a URL source, for conditional refreshes. */
  validators?: Validators | null;
}

/** Family of an address: EVM by format (whatever the label), Solana by format unless another label claims it. */
export function familyOf(address: string, label: string): string {
  if (isEvmAddress(address)) return 'evm';
  if ((label === 'SOL' || label === '') && isSolanaAddress(address)) return 'solana';
  return label ? label.toLowerCase() : 'other';
}

function keyOf(family: string, address: string): string {
  return family === 'evm' ? address.toLowerCase() : address;
}

export class WalletList {
  private constructor(
    private readonly families: Map<string, Map<string, WalletListEntry>>,
    readonly meta: WalletListMeta,
  ) {}

  static build(entries: Iterable<RawWalletEntry>, meta: WalletListMeta): WalletList {
    const families = new Map<string, Map<string, WalletListEntry>>();
    for (const raw of entries) {
      const address = raw.address.trim();
      if (!address) continue;
      const label = raw.label.trim().toUpperCase();
      const family = familyOf(address, label);
      let map = families.get(family);
      if (!map) families.set(family, (map = new Map<string, WalletListEntry>()));
      const key = keyOf(family, address);
      const existing = map.get(key);
      const entry: WalletListEntry = {
        label: label || (family === 'evm' ? 'ETH' : family === 'solana' ? 'SOL' : 'UNKNOWN'),
        sdnUid: raw.sdnUid || 'unknown',
        listedAt: raw.listedAt,
      };
      if (existing) {
        // The same address is often listed under several labels (ETH, USDT, ARB…) and by several sources
        // (a plain list without ids, SDN.CSV with them): keep the ETH label and whichever uid and date are known.
        map.set(key, {
          label: family === 'evm' && entry.label === 'ETH' ? 'ETH' : existing.label,
          sdnUid: existing.sdnUid !== 'unknown' ? existing.sdnUid : entry.sdnUid,
          listedAt: existing.listedAt ?? entry.listedAt,
        });
        continue;
      }
      map.set(key, entry);
    }
    return new WalletList(families, meta);
  }

  lookup(family: string, address: string): WalletListEntry | null {
    return this.families.get(family)?.get(keyOf(family, address)) ?? null;
  }

  get size(): number {
    let n = 0;
    for (const m of this.families.values()) n += m.size;
    return n;
  }

  counts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [family, m] of [...this.families].sort(([a], [b]) => a.localeCompare(b))) out[family] = m.size;
    return out;
  }

  /** Flat rows for persistence: [family, address, label, sdn_uid, listed_at]. */
  rows(): Array<[string, string, string, string, string | null]> {
    const out: Array<[string, string, string, string, string | null]> = [];
    for (const [family, m] of this.families) for (const [address, e] of m) out.push([family, address, e.label, e.sdnUid, e.listedAt]);
    return out;
  }

  static fromRows(rows: Array<[string, string, string, string, string | null]>, meta: WalletListMeta): WalletList {
    const families = new Map<string, Map<string, WalletListEntry>>();
    for (const [family, address, label, sdnUid, listedAt] of rows) {
      let map = families.get(family);
      if (!map) families.set(family, (map = new Map<string, WalletListEntry>()));
      map.set(keyOf(family, address), { label, sdnUid, listedAt });
    }
    return new WalletList(families, meta);
  }
}
