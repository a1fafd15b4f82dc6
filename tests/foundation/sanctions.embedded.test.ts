// A fresh embedded start (`npm start` on an empty data directory, no sanctions settings) screens signers
// against the bundled OFAC snapshot: an unlisted signer is clear, a listed one is a hit, and the start-up
// banner says which lists are loaded and how old they are.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { baseEnv, killStrayServers, startServer } from '../support/processes';
import { freePort } from '../support/net';
import { evmAddress } from '../assess/seed';

jest.setTimeout(180_000);

describe('fresh embedded start with no sanctions settings', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-sanctions-embedded-'));
  afterAll(() => {
    killStrayServers();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('clears an unlisted signer, denies a listed one, and prints one banner line per list', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = startServer(baseEnv({ NODE_ENV: 'development', DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }));
    try {
      await server.waitFor(/Its API key is shown ONCE/, 150_000);
      const apiKey = server.output().match(/as_live_[0-9A-Za-z]{43}/)![0];
      expect(server.output()).toMatch(/^ sanctions wallets: 637 wallet addresses as of 2024-09-27, \d+ days old; source bundled$/m);
      expect(server.output()).toMatch(/^ sanctions names: \d{5} listed parties as of 2024-05-03, \d+ days old; source bundled$/m);

      const assess = (signer: string) =>
        request(base)
          .post('/v1/assess')
          .set('X-API-Key', apiKey)
          .send({ address: evmAddress(), signer: { address: signer, network: 'evm' } });
      const clear = await assess(evmAddress());
      expect(clear.status).toBe(200);
      expect(clear.body.decision).toBe('allow');
      expect(clear.body.signer_sanctions).toEqual({ status: 'clear' });
      const listed = await assess('0x098B716B8Aaf21512996dC57EB0615e2383E2f96');
      expect(listed.body.decision).toBe('deny');
      expect(listed.body.decision_reasons).toEqual(['sanctions_flagged']);
      expect(listed.body.signer_sanctions).toEqual({ sanctioned: true, ofac_label: 'ETH', sdn_uid: '27307', listed_at: null });
    } finally {
      server.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
  });
});
