// Chains accepted in `chain` (DESIGN.md §3.10).
export const CHAINS = ['base', 'ethereum', 'arbitrum', 'optimism', 'polygon', 'tempo', 'solana'] as const;
export type Chain = (typeof CHAINS)[number];

export function isChain(value: unknown): value is Chain {
  return typeof value === 'string' && (CHAINS as readonly string[]).includes(value);
}
