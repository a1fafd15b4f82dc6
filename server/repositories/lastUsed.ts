// Batched `last_used_at` updates shared by the key and credential tables (written behind the request path).
import type { Knex } from 'knex';

/** Moves each row's last_used_at forward to its use time (never backwards), in one statement. */
export async function touchLastUsed(db: Knex, table: 'api_keys' | 'credentials', uses: Array<{ id: string; at: Date }>): Promise<void> {
  if (uses.length === 0) return;
  await db.raw(
    `update ${table} t set last_used_at = greatest(coalesce(t.last_used_at, v.at), v.at)
       from (select unnest(?::uuid[]) as id, unnest(?::timestamptz[]) as at) v where t.id = v.id`,
    [uses.map((u) => u.id), uses.map((u) => u.at.toISOString())],
  );
}
