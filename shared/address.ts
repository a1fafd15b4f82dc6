// Wallet address parsing and normalisation, used by the server and the gate alike.
// EVM: `0x` + 40 hex in any case (checksum optional), normalised to lowercase.
// Solana: base58, 32–44 characters, must decode to exactly 32 bytes; kept verbatim (base58 is case-sensitive).
import bs58 from 'bs58';
import type { AddressFamily } from './types';

export interface ParsedAddress {
  network: AddressFamily;
  /** Canonical form: lowercase for EVM, verbatim for Solana. */
  address: string;
}

const EVM_RE = /^0x[0-9a-fA-F]{40}$/;
const BASE58_RE = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
export const EVM_ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

export function isEvmAddress(value: string): boolean {
  return EVM_RE.test(value);
}

export function isSolanaAddress(value: string): boolean {
  if (!BASE58_RE.test(value)) return false;
  try {
    return bs58.decode(value).length === 32;
  } catch {
    return false;
  }
}

/** Detects the network from the format; null when the value is neither an EVM nor a Solana address. */
export function parseAddress(value: unknown): ParsedAddress | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  if (isEvmAddress(trimmed)) return { network: 'evm', address: trimmed.toLowerCase() };
  if (isSolanaAddress(trimmed)) return { network: 'solana', address: trimmed };
  return null;
}

/** Parses an address that must belong to `network`; null when malformed for that network. */
export function parseAddressFor(network: AddressFamily, value: unknown): ParsedAddress | null {
  const parsed = parseAddress(value);
  return parsed && parsed.network === network ? parsed : null;
}

/** Canonical form of an address already known to be valid (lowercase EVM, verbatim Solana). */
export function normalizeAddress(value: string): string {
  return parseAddress(value)?.address ?? value.trim();
}
