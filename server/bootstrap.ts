// Preparing a database for serving: embedded mode migrates itself and creates a demo merchant on first
// start; external mode refuses to serve a database whose migrations are behind (run `npm run migrate`).
import type { Deps } from './deps';
import { migrateLatest, pendingMigrations } from './db/knex';

export class MigrationsBehindError extends Error {
  constructor(readonly pending: string[]) {
    super(`Database migrations are behind (${pending.length} pending: ${pending.join(', ')}). Run \`npm run migrate\` first.`);
    this.name = 'MigrationsBehindError';
  }
}

export async function prepareDatabase(deps: Deps): Promise<void> {
  if (deps.config.mode === 'embedded') {
    const applied = await migrateLatest(deps.db);
    if (applied.length) deps.logger.info({ applied }, 'migrations applied');
    return;
  }
  const pending = await pendingMigrations(deps.db);
  if (pending.length) throw new MigrationsBehindError(pending);
}

/** On an empty embedded database: one Paid demo merchant whose API key is printed once. */
export async function ensureDemoAccount(deps: Deps): Promise<{ accountId: string; apiKey: string } | null> {
  if (deps.config.mode !== 'embedded' || !deps.config.demoAccount || deps.config.env === 'production') return null;
  const existing = await deps.repos.accounts.list({ kind: 'merchant' });
  if (existing.length > 0) return null;
  const { account, apiKey } = await deps.services.accounts.create({ name: 'Demo Merchant', tier: 'paid', displayName: 'Demo Merchant' });
  return { accountId: account.id, apiKey };
}
