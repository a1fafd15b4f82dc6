// `npm test` step 1 (before jest starts): checks that PostgreSQL and Redis answer, creates the test database
// if missing and migrates it — the same work as jest's globalSetup, run first so a missing service fails in
// one clear line instead of inside a jest stack trace. Never skips: a missing service is a failed run.
import globalSetup from './globalSetup';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from './env';

globalSetup().then(
  () => {
    const db = new URL(TEST_DATABASE_URL);
    process.stdout.write(`test services ready: PostgreSQL ${db.host}${db.pathname}, Redis ${new URL(TEST_REDIS_URL).host}\n`);
  },
  (err: Error) => {
    process.stderr.write(`npm test cannot run: ${err.message}\n`);
    process.exit(1);
  },
);
