// `npm run migrate`: apply pending migrations to the configured database (PostgreSQL or embedded PGlite).
import { loadConfig } from '../config';
import { createDb, migrateLatest } from '../db/knex';

async function main() {
  const config = loadConfig();
  const db = createDb(config, { unbounded: true });
  try {
    const applied = await migrateLatest(db);
    process.stdout.write(JSON.stringify({ applied, database: config.mode }) + '\n');
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`migrate failed: ${(err as Error).message}\n`);
  process.exit(1);
});
