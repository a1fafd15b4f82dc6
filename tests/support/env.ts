// Where the tests find PostgreSQL, Redis and Chromium. Defaults match every development and CI machine;
// override with TEST_DATABASE_URL / TEST_REDIS_URL (e.g. a separate database per parallel worker) and
// CHROMIUM_PATH.
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/kya_test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? DEFAULT_CHROMIUM_PATH;
export const TEST_SERVER_SECRET = 'test-server-secret-0123456789abcdef0123456789';
export const TEST_PII_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';
