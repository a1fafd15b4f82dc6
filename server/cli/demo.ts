// `npm run demo`: the embedded server with the walk-through's demo data (docs/quickstart.md). Seeds on the
// first run in a data directory and prints the merchant key, the operator credential and the public demo
// wallet keys; later runs print the public values again (the secrets were shown once).
import { loadConfig, ConfigError } from '../config';
import { start } from '../serve';
import { seedDemo, type DemoValues } from '../demo';

function banner(v: DemoValues, baseUrl: string): string {
  const line = '='.repeat(72);
  const secrets =
    v.apiKey && v.operatorToken
      ? `   export KYA_API_KEY=${v.apiKey}\n   export OPERATOR_TOKEN=${v.operatorToken}\n`
      : '   (merchant key and operator token were shown on the first run; delete the data directory to start over)\n';
  return (
    `\n${line}\n kya demo at ${baseUrl} — walk-through: docs/quickstart.md\n\n${secrets}\n` +
    ` Demo operator (KYC verified) wallets — public demo keys, never fund them:\n` +
    `   operator wallet ${v.operatorWallet.address}  key ${v.operatorWallet.privateKey}\n` +
    `   agent wallet    ${v.agentWallet.address}  key ${v.agentWallet.privateKey}\n` +
    ` Sanctioned signer (OFAC SDN list): ${v.sanctionedSigner}\n${line}\n\n`
  );
}

function main(): void {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
    process.exit(1);
  }
  if (config.mode !== 'embedded') {
    process.stderr.write('npm run demo runs the embedded server only: unset DATABASE_URL to use it.\n');
    process.exit(1);
  }
  start(config, { seed: async (deps) => banner(await seedDemo(deps), config.publicBaseUrl) }).catch((err: Error) => {
    process.stderr.write(`kya demo failed to start: ${err.message}\n`);
    process.exit(1);
  });
}

main();
