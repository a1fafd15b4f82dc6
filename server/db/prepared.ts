// Named prepared statements for hot queries whose planning costs more than their execution. They run through
// knex like any statement (so behind the database circuit and its timeouts); on PostgreSQL the statement gets
// a name, and node-postgres prepares it once per pooled connection and reuses the plan.
import type { Knex } from 'knex';

/**
 * Runs statements written with knex `?` placeholders. On PostgreSQL each distinct text becomes a named
 * prepared statement; elsewhere (PGlite) it runs as a plain statement. Keep the number of distinct texts
 * small: each is a name.
 */
export class PreparedStatements {
  /** Statement text → prepared statement name. */
  private readonly names = new Map<string, string>();
  private readonly named: boolean;

  constructor(
    private readonly db: Knex,
    private readonly prefix: string,
  ) {
    this.named = (db.client as { config: { client: unknown } }).config.client === 'pg';
  }

  async query<R>(sql: string, bindings: Knex.RawBinding[], trx?: Knex.Transaction): Promise<R[]> {
    const statement = (trx ?? this.db).raw<{ rows: R[] }>(sql, bindings);
    if (!this.named) return (await statement).rows;
    let name = this.names.get(sql);
    if (!name) this.names.set(sql, (name = `${this.prefix}_${this.names.size + 1}`));
    return (await statement.options({ name })).rows;
  }
}
