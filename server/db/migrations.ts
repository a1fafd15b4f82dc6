// A knex MigrationSource over the top-level migrations/ folder. It loads each file with `require`, so the
// same code path works under tsx (npm start, CLI) and under jest's transform, without knex's own loader.
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';

interface MigrationModule {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

export const MIGRATIONS_DIR = path.resolve(__dirname, '../../migrations');

export function migrationSource(dir: string = MIGRATIONS_DIR): Knex.MigrationSource<string> {
  return {
    async getMigrations() {
      return fs
        .readdirSync(dir)
        .filter((f) => /^\d{4}_[a-z0-9_]+\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'))
        .sort();
    },
    getMigrationName(file) {
      return file.replace(/\.(ts|js)$/, '.ts');
    },
    async getMigration(file) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- a migration file named at run time (.ts under tsx, .js when built)
      return require(path.join(dir, file)) as MigrationModule;
    },
  };
}
