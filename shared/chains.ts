// Chains accepted in `chain`; anything else is a 400 naming the field.
export const CHAINS = ['base', 'ethereum', 'arbitrum', 'optimism', 'polygon', 'tempo', 'solana'] as const;
export type Chain = (typeof CHAINS)[number];

export function isChain(value: unknown): value is Chain {
  return typeof value === 'string' && (CHAINS as readonly string[]).includes(value);
}
