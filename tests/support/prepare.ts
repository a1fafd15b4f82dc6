// `npm test` step 1 (before jest starts): the same work as jest's globalSetup (PostgreSQL, Redis and Chromium
// present — started or installed when it can —, test database created and migrated), run first so a missing
// prerequisite fails in one clear line per problem instead of inside a jest stack trace. Never skips.
import { ensurePrerequisites } from './globalSetup';
import { CHROMIUM_PATH, TEST_DATABASE_URL, TEST_REDIS_URL } from './env';

ensurePrerequisites({ fresh: false }).then(
  () => {
    const db = new URL(TEST_DATABASE_URL);
    process.stdout.write(`test prerequisites ready: PostgreSQL ${db.host}${db.pathname}, Redis ${new URL(TEST_REDIS_URL).host}, Chromium ${CHROMIUM_PATH}\n`);
  },
  (err: Error) => {
    for (const line of err.message.split('\n')) process.stderr.write(`npm test cannot run: ${line}\n`);
    process.exit(1);
  },
);
