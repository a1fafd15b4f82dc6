// Microbenchmark of assess request validation (the compiled joi validator on the hot path):
// `npx tsx tests/bench/validate.ts` prints microseconds per parse for three typical bodies.
import { parseAssessRequest } from '../../server/routes/assess';

const BODIES: Array<[string, unknown]> = [
  ['operator_token only', { operator_token: 'opc_' + 'x'.repeat(40) }],
  ['wallet + signer', { address: '0x' + 'ab'.repeat(20), signer: { network: 'evm', address: '0x' + 'cd'.repeat(20) } }],
  [
    'wallet + signer + policy',
    {
      address: '0x' + 'ab'.repeat(20),
      policy: { require_kyc: true, min_age: 21, blocked_jurisdictions: ['IR', 'KP'] },
      signer: { network: 'evm', address: '0x' + 'cd'.repeat(20) },
    },
  ],
];

for (const [name, body] of BODIES) {
  for (let i = 0; i < 20_000; i++) parseAssessRequest(body);
  const started = process.hrtime.bigint();
  const n = 100_000;
  for (let i = 0; i < n; i++) parseAssessRequest(body);
  console.log(`${name}: ${(Number(process.hrtime.bigint() - started) / n / 1000).toFixed(1)} µs per parse`);
}
