// Mount-time option validation: defaults, and a clear GateOptionsError naming each bad option.
import { parseOptions, GateOptionsError } from '../../middleware';

const base = { apiKey: 'as_live_key', baseUrl: 'http://127.0.0.1:3000' };

describe('parseOptions', () => {
  it('applies the documented defaults', () => {
    const c = parseOptions(base);
    expect(c).toMatchObject({
      policy: undefined,
      chain: undefined,
      failOpen: false,
      cacheTtlMs: 300_000,
      cacheMaxEntries: 10_000,
      timeoutMs: 3000,
      userAgent: 'kya-gate/0.1.0',
      enforceSignerMatch: true,
      session: null,
      captureOn: 'success',
      degradedHeader: 'X-Gate-Degraded',
      publicOrigin: null,
      trustUnsignedWalletHeader: false,
    });
    expect(c.baseUrl.href).toBe('http://127.0.0.1:3000/');
    expect([...c.signer.evmDomains.keys()]).toEqual(['eip155:8453', 'eip155:84532']);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('keeps the host and origin of publicOrigin (the port too when it is not the default)', () => {
    expect(parseOptions({ ...base, publicOrigin: 'https://Shop.Example.com' }).publicOrigin).toEqual({
      domain: 'shop.example.com',
      origin: 'https://shop.example.com',
    });
    expect(parseOptions({ ...base, publicOrigin: 'http://127.0.0.1:8080/' }).publicOrigin).toEqual({
      domain: '127.0.0.1:8080',
      origin: 'http://127.0.0.1:8080',
    });
  });

  it('maps the policy to the wire names, sorting and de-duplicating country lists', () => {
    const c = parseOptions({ ...base, policy: { requireKyc: true, minAge: 21, blockedJurisdictions: ['KP', 'IR', 'KP'] }, requireSanctionsClear: true });
    expect(c.policy).toEqual({ require_kyc: true, require_sanctions_clear: true, min_age: 21, blocked_jurisdictions: ['IR', 'KP'] });
  });

  it.each([
    [{ apiKey: undefined }, 'apiKey is required (your merchant API key, as_live_…)'],
    [{ baseUrl: 'localhost:3000' }, 'baseUrl must use http or https'],
    [{ baseUrl: 'not a url' }, 'baseUrl must be an absolute http(s) URL (got "not a url")'],
    [{ failopen: true }, 'failopen is not a gate option'],
    [
      { policy: { requireKYC: true } },
      'policy.requireKYC is not a policy option (expected one of requireKyc, requireSanctionsClear, minAge, blockedJurisdictions, allowedJurisdictions)',
    ],
    [{ policy: { minAge: 19 } }, 'policy.minAge must be 18 or 21 (got 19)'],
    [{ policy: { requireKyc: 'yes' } }, 'policy.requireKyc must be true or false (got "yes")'],
    [{ policy: { requireKyc: true }, requireKyc: false }, 'requireKyc is set both at the top level and in policy; set it once'],
    [{ allowedJurisdictions: ['us'] }, 'allowedJurisdictions[0] must be an uppercase ISO 3166-1 alpha-2 code (got "us")'],
    [{ blockedJurisdictions: 'IR' }, 'blockedJurisdictions must be an array of ISO 3166-1 alpha-2 codes such as ["US", "DE"]'],
    [{ chain: 'bitcoin' }, 'chain must be one of base, ethereum, arbitrum, optimism, polygon, tempo, solana (got "bitcoin")'],
    [{ cacheSeconds: -1 }, 'cacheSeconds must be an integer from 0 to 86400 (got -1)'],
    [{ timeoutMs: 0 }, 'timeoutMs must be an integer from 1 to 120000 (got 0)'],
    [{ captureOn: 'always' }, `captureOn must be 'success' or 'manual' (got "always")`],
    [{ degradedHeader: 'Bad Header' }, 'degradedHeader must be a valid header name such as "X-Gate-Degraded" (degraded passes are always marked)'],
    [{ degradedHeader: false }, 'degradedHeader must be a valid header name such as "X-Gate-Degraded" (degraded passes are always marked)'],
    [
      { publicOrigin: 'shop.example.com' },
      'publicOrigin must be the absolute http(s) origin buyers use, such as "https://shop.example.com" (got "shop.example.com")',
    ],
    [
      { publicOrigin: 'https://shop.example.com/store?x=1' },
      'publicOrigin must be the absolute http(s) origin buyers use, such as "https://shop.example.com", without a path, query or credentials (got "https://shop.example.com/store?x=1")',
    ],
    [{ trustUnsignedWalletHeader: 'yes' }, 'trustUnsignedWalletHeader must be true or false (got "yes")'],
    [{ getChain: 'base' }, 'getChain must be a function'],
    [{ createSessionOnMissing: { productName: 'x'.repeat(201) } }, 'createSessionOnMissing.productName must be a string of at most 200 characters'],
    [{ createSessionOnMissing: { onBefore: () => undefined } }, 'createSessionOnMissing.onBefore is not a session option'],
    [
      { x402Assets: [{ network: 'eip155:8453', asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', name: '', version: '2' }] },
      `x402Assets[0].name must be the token's EIP-712 domain name (e.g. "USD Coin")`,
    ],
    [{ logger: console.log }, 'logger must have debug, warn and error methods (pino works)'],
  ])('rejects %j', (override, message) => {
    const run = () => parseOptions({ ...base, ...(override as object) });
    expect(run).toThrow(GateOptionsError);
    expect(run).toThrow(message);
  });
});
