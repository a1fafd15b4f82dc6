// EVM signature recovery with @noble/curves + @noble/hashes: EIP-712 typed data (EIP-3009 authorizations)
// and the sender of a signed transaction (legacy/EIP-155 and typed envelopes 1–4). The gate needs only these
// two operations; a full EVM library would multiply the installed size of the package for nothing.
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak_256 } from '@noble/hashes/sha3';

/** An EIP-712 domain: the fields a token's `eip712Domain()` declares. */
export interface TypedDataDomain {
  name?: string | null;
  version?: string | null;
  chainId?: bigint | number | string | null;
  verifyingContract?: string | null;
  salt?: string | null;
}

export type TypedDataField = { name: string; type: string };

const DOMAIN_FIELDS: ReadonlyArray<TypedDataField & { name: keyof TypedDataDomain }> = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
  { name: 'salt', type: 'bytes32' },
];

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;
const encoder = new TextEncoder();

function hexToBytes(hex: string): Uint8Array {
  if (!HEX.test(hex)) throw new TypeError('expected 0x-prefixed hex');
  const out = new Uint8Array((hex.length - 2) / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 + i * 2, 4 + i * 2), 16);
  return out;
}

function bytesToHex(bytes: Uint8Array): string {
  let hex = '0x';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

function word(value: bigint): Uint8Array {
  if (value < 0n || value >= 1n << 256n) throw new RangeError('value does not fit 256 bits');
  return hexToBytes('0x' + value.toString(16).padStart(64, '0'));
}

function bytesToBigInt(bytes: Uint8Array): bigint {
  return bytes.length === 0 ? 0n : BigInt(bytesToHex(bytes));
}

/** One 32-byte slot of EIP-712 `encodeData` for an atomic or dynamic (string/bytes) field. */
function encodeField(type: string, value: unknown): Uint8Array {
  if (type === 'address') {
    if (typeof value !== 'string' || !ADDRESS.test(value)) throw new TypeError('invalid address');
    return concat(new Uint8Array(12), hexToBytes(value));
  }
  if (type === 'string') return keccak_256(encoder.encode(String(value)));
  if (type === 'bytes') return keccak_256(hexToBytes(String(value)));
  if (type === 'bool') return word(value ? 1n : 0n);
  const uint = /^uint(\d*)$/.exec(type);
  if (uint) return word(BigInt(value as string | number | bigint));
  const fixed = /^bytes([1-9]|[12][0-9]|3[0-2])$/.exec(type);
  if (fixed) {
    const bytes = hexToBytes(String(value));
    if (bytes.length !== Number(fixed[1])) throw new TypeError(`invalid ${type}`);
    return concat(bytes, new Uint8Array(32 - bytes.length));
  }
  throw new TypeError(`unsupported EIP-712 field type ${type}`);
}

function hashStruct(name: string, fields: readonly TypedDataField[], value: Record<string, unknown>): Uint8Array {
  const typeHash = keccak_256(encoder.encode(`${name}(${fields.map((f) => `${f.type} ${f.name}`).join(',')})`));
  return keccak_256(concat(typeHash, ...fields.map((f) => encodeField(f.type, value[f.name]))));
}

/** The EIP-712 digest of `message` (one primary type of atomic fields) under `domain`. */
function typedDataDigest(domain: TypedDataDomain, types: Record<string, readonly TypedDataField[]>, message: Record<string, unknown>): Uint8Array {
  const names = Object.keys(types);
  if (names.length !== 1) throw new TypeError('exactly one primary type (of atomic fields) is supported');
  const domainFields = DOMAIN_FIELDS.filter((f) => domain[f.name] !== undefined && domain[f.name] !== null);
  const separator = hashStruct('EIP712Domain', domainFields, domain as Record<string, unknown>);
  return keccak_256(concat(Uint8Array.of(0x19, 0x01), separator, hashStruct(names[0], types[names[0]], message)));
}

function addressOf(point: { toRawBytes(compressed?: boolean): Uint8Array }): string {
  return bytesToHex(keccak_256(point.toRawBytes(false).subarray(1)).subarray(12));
}

/** Recovers the lowercase address that produced `r, s` with recovery bit `yParity` over `digest`. */
function recover(digest: Uint8Array, r: Uint8Array, s: Uint8Array, yParity: number): string {
  // The top bit of s is where EIP-2098 compact signatures store the parity: a set bit is never canonical.
  if (s.length !== 32 || r.length !== 32 || (s[0] & 0x80) !== 0) throw new TypeError('non-canonical signature');
  const signature = secp256k1.Signature.fromCompact(concat(r, s)).addRecoveryBit(yParity);
  return addressOf(signature.recoverPublicKey(digest));
}

/** Splits a 65-byte (r, s, v) or 64-byte EIP-2098 (r, yParityAndS) signature. */
function splitSignature(signature: string): { r: Uint8Array; s: Uint8Array; yParity: number } {
  const bytes = hexToBytes(signature);
  if (bytes.length === 64) {
    const s = bytes.slice(32, 64);
    const yParity = s[0] >> 7;
    s[0] &= 0x7f;
    return { r: bytes.slice(0, 32), s, yParity };
  }
  if (bytes.length !== 65) throw new TypeError('signature must be 64 or 65 bytes');
  const v = bytes[64];
  const yParity = v === 0 || v === 27 ? 0 : v === 1 || v === 28 ? 1 : -1;
  if (yParity < 0) throw new TypeError('invalid signature v');
  return { r: bytes.slice(0, 32), s: bytes.slice(32, 64), yParity };
}

/** The (lowercase) address whose key signed the EIP-712 message; throws when the signature is unusable. */
export function recoverTypedDataSigner(
  domain: TypedDataDomain,
  types: Record<string, readonly TypedDataField[]>,
  message: Record<string, unknown>,
  signature: string,
): string {
  const { r, s, yParity } = splitSignature(signature);
  return recover(typedDataDigest(domain, types, message), r, s, yParity);
}

// ------------------------------------------------------------------------------------------ transactions

interface RlpItem {
  /** The whole encoding of this item (prefix included). */
  raw: Uint8Array;
  /** String payload, or null for a list. */
  bytes: Uint8Array | null;
  items: RlpItem[] | null;
}

function rlpDecode(data: Uint8Array, start = 0, end = data.length): { item: RlpItem; next: number } {
  if (start >= end) throw new RangeError('truncated RLP');
  const b = data[start];
  let offset: number;
  let length: number;
  const readLength = (lengthOfLength: number) => {
    if (start + 1 + lengthOfLength > end) throw new RangeError('truncated RLP');
    return Number(bytesToBigInt(data.subarray(start + 1, start + 1 + lengthOfLength)));
  };
  if (b < 0x80) return { item: { raw: data.subarray(start, start + 1), bytes: data.subarray(start, start + 1), items: null }, next: start + 1 };
  if (b <= 0xb7) [offset, length] = [start + 1, b - 0x80];
  else if (b <= 0xbf) [offset, length] = [start + 1 + (b - 0xb7), readLength(b - 0xb7)];
  else if (b <= 0xf7) [offset, length] = [start + 1, b - 0xc0];
  else [offset, length] = [start + 1 + (b - 0xf7), readLength(b - 0xf7)];
  const next = offset + length;
  if (next > end) throw new RangeError('truncated RLP');
  const raw = data.subarray(start, next);
  if (b < 0xc0) return { item: { raw, bytes: data.subarray(offset, next), items: null }, next };
  const items: RlpItem[] = [];
  for (let at = offset; at < next;) {
    const decoded = rlpDecode(data, at, next);
    items.push(decoded.item);
    at = decoded.next;
  }
  return { item: { raw, bytes: null, items }, next };
}

function rlpLength(length: number, base: number): Uint8Array {
  if (length < 56) return Uint8Array.of(base + length);
  const hex = length.toString(16);
  const bytes = hexToBytes('0x' + (hex.length % 2 ? '0' : '') + hex);
  return concat(Uint8Array.of(base + 55 + bytes.length), bytes);
}

function rlpList(encodedItems: Uint8Array[]): Uint8Array {
  const body = concat(...encodedItems);
  return concat(rlpLength(body.length, 0xc0), body);
}

function rlpInteger(value: bigint): Uint8Array {
  if (value === 0n) return Uint8Array.of(0x80);
  const hex = value.toString(16);
  const bytes = hexToBytes('0x' + (hex.length % 2 ? '0' : '') + hex);
  return bytes.length === 1 && bytes[0] < 0x80 ? bytes : concat(rlpLength(bytes.length, 0x80), bytes);
}

function scalar(item: RlpItem): Uint8Array {
  if (!item.bytes || item.bytes.length > 32) throw new TypeError('invalid signature scalar');
  return concat(new Uint8Array(32 - item.bytes.length), item.bytes);
}

/** Fields before the signature, per typed-transaction envelope (EIP-2930, EIP-1559, EIP-4844, EIP-7702). */
const TYPED_FIELD_COUNT: Readonly<Record<number, number>> = { 1: 8, 2: 9, 3: 11, 4: 10 };

/** The (lowercase) sender of a signed, serialized transaction; null when it is unsigned or undecodable. */
export function transactionSender(serialized: string): string | null {
  try {
    const bytes = hexToBytes(serialized);
    if (bytes.length === 0) return null;
    const type = bytes[0];
    if (type >= 0xc0) {
      const { item, next } = rlpDecode(bytes);
      const fields = item.items;
      if (!fields || next !== bytes.length || fields.length !== 9) return null;
      const v = bytesToBigInt(fields[6].bytes ?? new Uint8Array());
      const base = fields.slice(0, 6).map((f) => f.raw);
      let digest: Uint8Array;
      let yParity: number;
      if (v === 27n || v === 28n) {
        digest = keccak_256(rlpList(base));
        yParity = Number(v - 27n);
      } else if (v >= 35n) {
        // EIP-155: the chain id is folded into v and signed as three trailing fields (chainId, 0, 0).
        const chainId = (v - 35n) / 2n;
        digest = keccak_256(rlpList([...base, rlpInteger(chainId), rlpInteger(0n), rlpInteger(0n)]));
        yParity = Number((v - 35n) % 2n);
      } else return null;
      return recover(digest, scalar(fields[7]), scalar(fields[8]), yParity);
    }
    const count = TYPED_FIELD_COUNT[type];
    if (count === undefined) return null;
    const { item, next } = rlpDecode(bytes, 1);
    if (!item.items || next !== bytes.length) return null;
    // A blob transaction in network form wraps the signed payload with its blobs, commitments and proofs.
    const fields = type === 3 && item.items[0]?.items ? item.items[0].items : item.items;
    if (fields.length !== count + 3) return null;
    const yParity = bytesToBigInt(fields[count].bytes ?? new Uint8Array());
    if (yParity > 1n) return null;
    const digest = keccak_256(concat(Uint8Array.of(type), rlpList(fields.slice(0, count).map((f) => f.raw))));
    return recover(digest, scalar(fields[count + 1]), scalar(fields[count + 2]), Number(yParity));
  } catch {
    return null;
  }
}
