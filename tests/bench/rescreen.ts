// `npm run bench:rescreen`: re-screens 10,000 verified operators (encrypted identities in an embedded
// database on a temporary directory) against the whole bundled name list, as the background job does after a
// list change, and prints the progress lines and the duration. Options: --operators N.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Faker, en, de, fr, es, base } from '@faker-js/faker';
import { loadConfig } from '../../server/config';
import { createDeps } from '../../server/deps';
import { prepareDatabase } from '../../server/bootstrap';
import { encryptJson } from '../../server/crypto';

async function main() {
  const { values } = parseArgs({ options: { operators: { type: 'string', default: '10000' } } });
  const count = Number(values.operators);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-rescreen-bench-'));
  const config = loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'info', DEMO_ACCOUNT: '0' });
  const deps = await createDeps(config);
  try {
    await prepareDatabase(deps);
    await deps.lifecycle.start();
    const fakers = [en, de, fr, es].map((l, i) => {
      const f = new Faker({ locale: [l, en, base] });
      f.seed(100 + i);
      return f;
    });
    const rows = Array.from({ length: count }, (_, i) => {
      const f = fakers[i % fakers.length];
      // One in a thousand is a listed person, so the run also writes flags.
      const fullName = i % 1000 === 0 ? 'Vladimir Vladimirovich Putin' : `${f.person.firstName()} ${f.person.lastName()}`;
      const identity = {
        full_name: fullName,
        date_of_birth: i % 1000 === 0 ? '1952-10-07' : `19${50 + (i % 50)}-01-01`,
        country: i % 1000 === 0 ? 'RU' : 'DE',
      };
      return { kind: 'operator', name: `operator ${i}`, kyc_status: 'verified', pii_encrypted: encryptJson(config.piiKey, identity) };
    });
    const seeded = Date.now();
    await deps.db.batchInsert('accounts', rows, 1000);
    process.stdout.write(`seeded ${count.toLocaleString('en-US')} verified operators in ${Date.now() - seeded} ms\n`);
    const result = await deps.services.screening.rescreenAll({ refresh: false });
    process.stdout.write(
      `rescreened ${result.screened.toLocaleString('en-US')} operators against ${result.list?.entries.toLocaleString('en-US')} listed parties ` +
        `in ${(result.duration_ms / 1000).toFixed(1)} s (${result.flagged} flagged, ${result.skipped} skipped; shared CPU, figures vary with load)\n`,
    );
  } finally {
    await deps.lifecycle.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
