// Where the sanctions lists come from by default: the bundled snapshot outside production (no network), OFAC's
// live files in production with the snapshot serving until the first fetch, and a configured source as given.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, OFAC_ALT_CSV_URL, OFAC_SDN_CSV_URL } from '../../server/config';

describe('sanctions list configuration', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-sanctions-config-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const secrets = { SERVER_SECRET: 'x'.repeat(40), PII_ENCRYPTION_KEY: 'ab'.repeat(32), DATA_DIR: dataDir };

  it('uses the bundled snapshot with nothing set outside production, with no age limit and a 0.85 threshold', () => {
    expect(loadConfig({ DATA_DIR: dataDir }).sanctions).toMatchObject({
      walletSource: 'bundled',
      walletSeedBundled: false,
      nameSource: 'bundled',
      nameAltSource: null,
      nameSeedBundled: false,
      refreshSeconds: 3600,
      maxAgeHours: null,
      matchThreshold: 0.85,
    });
  });

  it("defaults to OFAC's published files in production, seeded by the bundled snapshot", () => {
    expect(loadConfig({ ...secrets, NODE_ENV: 'production' }).sanctions).toMatchObject({
      walletSource: OFAC_SDN_CSV_URL,
      walletSeedBundled: true,
      nameSource: OFAC_SDN_CSV_URL,
      nameAltSource: OFAC_ALT_CSV_URL,
      nameSeedBundled: true,
    });
  });

  it('uses a configured source as given, without the bundled seed', () => {
    const c = loadConfig({
      ...secrets,
      NODE_ENV: 'production',
      SANCTIONS_WALLET_SOURCE: '/srv/lists/SDN.XML',
      SANCTIONS_NAME_SOURCE: 'https://lists.example/sdn.csv',
    });
    expect(c.sanctions).toMatchObject({
      walletSource: '/srv/lists/SDN.XML',
      walletSeedBundled: false,
      nameSource: 'https://lists.example/sdn.csv',
      nameAltSource: null,
      nameSeedBundled: false,
    });
  });

  it('rejects a bad max age or threshold naming the variable', () => {
    expect(() => loadConfig({ DATA_DIR: dataDir, SANCTIONS_MAX_AGE_HOURS: '0' })).toThrow(
      new ConfigError('SANCTIONS_MAX_AGE_HOURS', 'must be greater than or equal to 1'),
    );
    expect(() => loadConfig({ DATA_DIR: dataDir, SANCTIONS_MATCH_THRESHOLD: '1.5' })).toThrow(
      new ConfigError('SANCTIONS_MATCH_THRESHOLD', 'must be less than or equal to 1'),
    );
    expect(loadConfig({ DATA_DIR: dataDir, SANCTIONS_MAX_AGE_HOURS: '48' }).sanctions.maxAgeHours).toBe(48);
  });
});
