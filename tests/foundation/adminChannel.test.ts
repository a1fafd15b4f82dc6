// The admin CLI while an embedded server runs: PGlite is single-process, so the CLI sends its command over the
// server's local admin channel (127.0.0.1, token from DATA_DIR/admin-channel.json, mode 0600) and prints the
// same JSON and exit codes as when it opens the database itself. A wrong token is refused; a token file left
// behind by a server that is gone is ignored and the CLI opens the database directly.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { admin, baseEnv, killStrayServers, run, startServer, type ServerProcess } from '../support/processes';
import { freePort } from '../support/net';

// Each CLI call spawns a real process (tsx start-up ≈ 2 s on a shared 2-core machine).
jest.setTimeout(180_000);

const BAD_TIER = {
  error: { code: 'bad_request', message: 'Invalid request: tier', details: [{ field: 'tier', message: 'tier must be one of free, paid, enterprise' }] },
};

describe('admin CLI next to a running embedded server', () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let channelFile: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-channel-'));
    channelFile = path.join(dataDir, 'admin-channel.json');
    env = baseEnv({ NODE_ENV: 'development', DATA_DIR: dataDir, PORT: String(await freePort()), HOST: '127.0.0.1', DEMO_ACCOUNT: '0', LOG_LEVEL: 'info' });
  });
  afterAll(() => {
    killStrayServers();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  describe('while the server runs', () => {
    let server: ServerProcess;
    let base: string;

    beforeAll(async () => {
      base = `http://127.0.0.1:${env.PORT}`;
      server = startServer(env);
      await server.waitFor(/kya identity server listening/);
    });
    afterAll(async () => {
      server.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      // A clean stop takes the token with it.
      expect(fs.existsSync(channelFile)).toBe(false);
    });

    it('creates an account, prints a login link and lists accounts through the server; the token file is owner-only and never logged', async () => {
      const stat = fs.statSync(channelFile);
      expect(stat.mode & 0o777).toBe(0o600);
      const info = JSON.parse(fs.readFileSync(channelFile, 'utf8')) as { pid: number; port: number; token: string };
      expect(info).toEqual({ pid: server.child.pid, port: expect.any(Number), token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });

      const created = await admin(['account', 'create', '--name', 'Channel Co', '--tier', 'paid'], env);
      expect(created.code).toBe(0);
      const id: string = created.json.account_id;
      expect(created.json).toMatchObject({ api_key: expect.stringMatching(/^as_live_/), account: { id, name: 'Channel Co', tier: 'paid', status: 'active' } });
      // The server created it in its own process: the key works at once.
      expect((await request(base).get('/v1/credentials').set('X-API-Key', created.json.api_key)).status).toBe(200);

      const link = await admin(['account', 'login-link', id], env);
      expect(link.code).toBe(0);
      expect(link.json).toEqual({ url: expect.stringMatching(/\/dashboard\/login\/dl_[0-9A-Za-z]{20,64}$/), expires_at: expect.any(String) });

      const list = await admin(['account', 'list'], env);
      expect(list.code).toBe(0);
      expect(list.json.accounts.map((a: { id: string }) => a.id)).toContain(id);

      // Errors come back exactly as the direct path prints them, with the same exit code.
      const bad = await admin(['account', 'create', '--name', 'X', '--tier', 'gold'], env);
      expect([bad.code, bad.json, bad.stdout]).toEqual([1, BAD_TIER, '']);

      expect(server.output()).toContain('local admin channel listening');
      expect(server.output()).not.toContain(info.token);
    });

    it('refuses a wrong token, over HTTP and from the CLI', async () => {
      const original = fs.readFileSync(channelFile, 'utf8');
      const info = JSON.parse(original) as { pid: number; port: number; token: string };
      const raw = await fetch(`http://127.0.0.1:${info.port}/run`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${info.token.slice(0, -1)}x`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ argv: ['account', 'list'], cwd: '/' }),
      });
      expect(raw.status).toBe(401);
      expect(await raw.json()).toEqual({ error: { code: 'unauthorized', message: `The admin channel refused the token (read it from ${channelFile}).` } });

      fs.writeFileSync(channelFile, JSON.stringify({ ...info, token: 'forged' }), { mode: 0o600 });
      try {
        const refused = await admin(['account', 'list'], env);
        expect([refused.code, refused.json, refused.stdout]).toEqual([
          1,
          { error: { code: 'unauthorized', message: expect.stringContaining('refused the token') } },
          '',
        ]);
      } finally {
        fs.writeFileSync(channelFile, original, { mode: 0o600 });
      }
    });
  });

  describe('with a stale token file and no server', () => {
    it('opens the database directly, whether the file names a dead process or a port nobody listens on', async () => {
      const exited = await run(process.execPath, ['-e', 'console.log(process.pid)'], baseEnv());
      const deadPid = Number(exited.stdout.trim());
      fs.writeFileSync(channelFile, JSON.stringify({ pid: deadPid, port: await freePort(), token: 'left-behind' }), { mode: 0o600 });
      const created = await admin(['account', 'create', '--name', 'Fallback Co', '--tier', 'free'], env);
      expect(created.code).toBe(0);
      expect(created.json.api_key).toMatch(/^as_live_/);

      // A live pid (this test process) but a closed port: the connection is refused, so the file is stale too.
      fs.writeFileSync(channelFile, JSON.stringify({ pid: process.pid, port: await freePort(), token: 'left-behind' }), { mode: 0o600 });
      const list = await admin(['account', 'list'], env);
      expect(list.code).toBe(0);
      expect(list.json.accounts.map((a: { name: string }) => a.name)).toContain('Fallback Co');
    });
  });
});
