// Ceilings for bench:assess, on bare node:http (no framework): CEILING_MODE=db answers each POST with one
// indexed operator_wallets row (a prepared statement) and one Redis INCR; CEILING_MODE=memory answers from a
// Map of every wallet loaded at start. Both parse the JSON body and answer JSON, as assess does.
import http from 'node:http';
import Redis from 'ioredis';
import pg from 'pg';

const PORT = Number(process.env.PORT ?? 3313);
const MODE = process.env.CEILING_MODE === 'memory' ? 'memory' : 'db';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const redis = MODE === 'db' ? new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/2') : null;
const owners = new Map<string, string>();

async function answer(body: string): Promise<unknown> {
  const { address } = JSON.parse(body) as { address: string };
  if (MODE === 'memory') return { decision: owners.has(address) ? 'allow' : 'deny', resolved_operator: owners.get(address) ?? address };
  const [row, count] = await Promise.all([
    pool.query<{ account_id: string }>({
      name: 'owner',
      text: 'select account_id from operator_wallets where network = $1 and address = $2',
      values: ['evm', address],
    }),
    redis!.incr('kya:bench:ceiling'),
  ]);
  return { decision: row.rows.length ? 'allow' : 'deny', resolved_operator: row.rows[0]?.account_id ?? address, n: count };
}

async function main() {
  if (MODE === 'memory') {
    const { rows } = await pool.query<{ address: string; account_id: string }>('select address, account_id from operator_wallets');
    for (const r of rows) owners.set(r.address, r.account_id);
  }
  http
    .createServer((req, res) => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
        return;
      }
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        answer(body).then(
          (out) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out)),
          () => res.writeHead(500).end(),
        );
      });
    })
    .listen(PORT, '127.0.0.1');
}

void main();
