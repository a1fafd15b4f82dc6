// Outbound fetching of untrusted URLs (registration files, websites): address policy, protocol, DNS pinning,
// size cap, timeout and redirect re-vetting — over real sockets on 127.0.0.1 — plus registration parsing.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FetchRefusedError, SafeHttpFetcher, isPublicAddress } from '../../server/chain/safeFetch';
import { RegistrationResolver, decodeDataUri, parseRegistration } from '../../server/chain/registration';
import { EvidenceCollector } from '../../server/chain/evidence';
import { FakeFetcher } from './support';

const refusal = async (work: Promise<unknown>) => {
  try {
    await work;
  } catch (err) {
    expect(err).toBeInstanceOf(FetchRefusedError);
    return (err as FetchRefusedError).reason;
  }
  throw new Error('expected a refusal');
};

describe('address policy', () => {
  it('allows only public unicast addresses', () => {
    const cases: Array<[string, boolean]> = [
      ['8.8.8.8', true],
      ['1.1.1.1', true],
      ['2606:4700:4700::1111', true],
      ['127.0.0.1', false],
      ['10.1.2.3', false],
      ['172.16.0.1', false],
      ['172.31.255.255', false],
      ['192.168.1.1', false],
      ['169.254.169.254', false],
      ['100.64.0.1', false],
      ['0.0.0.0', false],
      ['224.0.0.1', false],
      ['255.255.255.255', false],
      ['::1', false],
      ['::', false],
      ['fe80::1', false],
      ['fd00::1', false],
      ['fc00::1', false],
      ['ff02::1', false],
      ['::ffff:127.0.0.1', false],
      ['::ffff:7f00:1', false],
      ['::ffff:8.8.8.8', true],
      ['64:ff9b::a00:1', false],
      ['not-an-ip', false],
    ];
    for (const [address, allowed] of cases) expect([address, isPublicAddress(address)]).toEqual([address, allowed]);
  });

  it('judges IPv6 spellings of IPv4 addresses (mapped, NAT64, 6to4, IPv4-compatible) by the IPv4 address', () => {
    const cases: Array<[string, boolean]> = [
      // IPv4-mapped ::ffff:0:0/96 and the translated ::ffff:0:0:0/96
      ['::ffff:10.0.0.1', false],
      ['::ffff:a9fe:a9fe', false],
      ['::ffff:c0a8:101', false],
      ['::ffff:0:7f00:1', false],
      ['::ffff:0:808:808', true],
      // NAT64 64:ff9b::/96 (well-known) and 64:ff9b:1::/48 (local use: always refused)
      ['64:ff9b::7f00:1', false],
      ['64:ff9b::169.254.169.254', false],
      ['64:ff9b::808:808', true],
      ['64:ff9b:1::808:808', false],
      ['64:ff9b:1:ffff::1', false],
      // 6to4 2002::/16: the IPv4 address sits in bits 16-47
      ['2002:7f00:1::1', false],
      ['2002:a00:1::', false],
      ['2002:c0a8:101::1', false],
      ['2002:a9fe:a9fe::', false],
      ['2002:808:808::1', true],
      // ::/96 IPv4-compatible (deprecated): never a destination
      ['::127.0.0.1', false],
      ['::7f00:1', false],
      ['::10.0.0.1', false],
      ['::a00:1', false],
      ['::8.8.8.8', false],
      // Other special-purpose IPv6 ranges
      ['2001::1', false],
      ['2001:db8::1', false],
      ['100::1', false],
      ['fe80::1%eth0', false],
      ['5f00::1', false],
      // Non-canonical IPv4 spellings are not addresses here
      ['0x7f.0.0.1', false],
      ['127.1', false],
      ['2130706433', false],
    ];
    for (const [address, allowed] of cases) expect([address, isPublicAddress(address)]).toEqual([address, allowed]);
  });
});

describe('SafeHttpFetcher', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/ok') return res.end(JSON.stringify({ host: req.headers.host }));
      if (req.url === '/big') {
        res.writeHead(200);
        const chunk = Buffer.alloc(64 * 1024, 'a');
        for (let i = 0; i < 8; i++) res.write(chunk);
        return res.end();
      }
      if (req.url === '/slow') return; // never answers
      if (req.url === '/to-private') {
        res.writeHead(302, { location: 'http://10.0.0.1/secret' });
        return res.end();
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  // Loopback allowed only for this test server; everything else keeps the production policy.
  const loopbackFetcher = (options = {}) =>
    new SafeHttpFetcher({
      protocols: ['http:'],
      isAllowedAddress: (a) => a === '127.0.0.1' || isPublicAddress(a),
      timeoutMs: 500,
      maxBytes: 100 * 1024,
      ...options,
    });

  it('refuses private, loopback and link-local targets with the default policy, by literal or by DNS', async () => {
    const fetcher = new SafeHttpFetcher({
      lookup: async (host) =>
        host === 'evil.example'
          ? [
              { address: '93.184.216.34', family: 4 },
              { address: '169.254.169.254', family: 4 },
            ]
          : [{ address: '127.0.0.1', family: 4 }],
    });
    for (const url of [
      'https://127.0.0.1/x',
      'https://[::1]/x',
      'https://10.0.0.8/',
      'https://169.254.169.254/latest/meta-data',
      'https://localhost/',
      'https://evil.example/',
    ]) {
      expect([url, await refusal(fetcher.fetch(url))]).toEqual([url, 'private_address']);
    }
  });

  it('refuses a host whose DNS answer is an IPv6 spelling of a private IPv4 address, before connecting', async () => {
    for (const address of ['::ffff:7f00:1', '::ffff:0:a9fe:a9fe', '64:ff9b::a00:1', '64:ff9b:1::808:808', '2002:c0a8:101::1', '::7f00:1']) {
      const fetcher = new SafeHttpFetcher({ lookup: async () => [{ address, family: 6 }] });
      expect([address, await refusal(fetcher.fetch('https://agent.example/registration.json'))]).toEqual([address, 'private_address']);
    }
  });

  it('refuses non-https URLs and URLs with credentials by default', async () => {
    const fetcher = new SafeHttpFetcher();
    expect(await refusal(fetcher.fetch('http://example.com/'))).toBe('protocol');
    expect(await refusal(fetcher.fetch('file:///etc/passwd'))).toBe('protocol');
    expect(await refusal(fetcher.fetch('https://user:pw@example.com/'))).toBe('invalid_url');
    expect(await refusal(fetcher.fetch('not a url'))).toBe('invalid_url');
  });

  it('connects to the vetted address and keeps the original host name', async () => {
    const fetcher = loopbackFetcher({ lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
    const res = await fetcher.fetch(`http://agent.test:${port}/ok`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ host: `agent.test:${port}` });
  });

  it('stops reading past the size cap', async () => {
    expect(await refusal(loopbackFetcher().fetch(`http://127.0.0.1:${port}/big`))).toBe('too_large');
  });

  it('gives up after the timeout', async () => {
    const started = Date.now();
    expect(await refusal(loopbackFetcher({ timeoutMs: 200 }).fetch(`http://127.0.0.1:${port}/slow`))).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('re-vets every redirect target', async () => {
    expect(await refusal(loopbackFetcher().fetch(`http://127.0.0.1:${port}/to-private`))).toBe('private_address');
  });
});

describe('registration files', () => {
  const doc = {
    name: 'Alpha',
    services: [
      { name: 'A2A', endpoint: 'https://a.example/card.json' },
      { name: 'web', endpoint: 'https://a.example/' },
      { name: 'ENS', endpoint: 'Alpha.eth' },
    ],
    x402Support: true,
    active: false,
  };

  it('decodes base64 and percent-encoded data: URIs and refuses oversized ones', () => {
    expect(JSON.parse(decodeDataUri('data:application/json;base64,' + Buffer.from('{"a":1}').toString('base64'))!.toString())).toEqual({ a: 1 });
    expect(JSON.parse(decodeDataUri('data:application/json,' + encodeURIComponent('{"a":2}'))!.toString())).toEqual({ a: 2 });
    expect(decodeDataUri('data:application/json;base64,' + Buffer.alloc(2000).toString('base64'), 1000)).toBeNull();
    expect(decodeDataUri('data:nocomma')).toBeNull();
  });

  it('reduces a registration file to the facts the scorer uses, ignoring malformed fields', () => {
    expect(
      parseRegistration({ ...doc, services: [...doc.services, { name: 42 }, 'junk', { name: 'source', endpoint: 'https://github.com/acme/alpha' }] }),
    ).toEqual({
      name: 'Alpha',
      description: null,
      services: [...doc.services, { name: 'source', endpoint: 'https://github.com/acme/alpha' }],
      x402_support: true,
      active: false,
      website_url: 'https://a.example/',
      github_url: 'https://github.com/acme/alpha',
      ens_name: 'alpha.eth',
      a2a_endpoint: 'https://a.example/card.json',
      mcp_endpoint: null,
    });
    expect(parseRegistration([1, 2])).toBeNull();
    expect(parseRegistration('x')).toBeNull();
  });

  it('resolves data: inline, https: through the fetcher, and records other schemes as unsupported', async () => {
    const fetcher = new FakeFetcher({ 'https://reg.example/a.json': { body: doc }, 'https://reg.example/missing.json': { status: 404, body: '' } });
    const resolver = new RegistrationResolver(fetcher);
    const inline = await resolver.resolve('data:application/json;base64,' + Buffer.from(JSON.stringify(doc)).toString('base64'));
    expect(inline).toMatchObject({ status: 'ok', kind: 'data_uri', error: null, info: { name: 'Alpha' } });
    expect(await resolver.resolve('https://reg.example/a.json')).toMatchObject({ status: 'ok', kind: 'https', info: { name: 'Alpha' } });
    expect(await resolver.resolve('https://reg.example/missing.json')).toEqual({ status: 'error', kind: 'https', info: null, error: 'HTTP 404' });
    expect(await resolver.resolve('https://nowhere.example/')).toEqual({ status: 'error', kind: 'https', info: null, error: 'cannot resolve host' });
    expect(await resolver.resolve('ipfs://bafy/agent.json')).toEqual({
      status: 'unsupported',
      kind: 'ipfs',
      info: null,
      error: 'ipfs registration URIs are not fetched',
    });
    expect(await resolver.resolve('data:application/json,not-json')).toEqual({
      status: 'error',
      kind: 'data_uri',
      info: null,
      error: 'registration file is not JSON',
    });
    expect(await resolver.resolve(null)).toEqual({ status: 'none', kind: 'none', info: null, error: null });
  });

  it('collects website, agent-card and GitHub evidence, with null/false when a fetch fails', async () => {
    const info = parseRegistration({ ...doc, services: [...doc.services, { name: 'source', endpoint: 'https://github.com/acme/alpha' }] })!;
    const ok = new EvidenceCollector(
      new FakeFetcher({
        'https://a.example/': { body: '<p>Model Context Protocol server; x402 payments</p>' },
        'https://a.example/card.json': { body: { name: 'Alpha', url: 'https://a.example/a2a' } },
        'https://api.github.com/repos/acme/alpha': { body: { stargazers_count: 7 } },
      }),
    );
    expect(await ok.collect(info)).toEqual({
      has_a2a_agent_card: true,
      website_reachable: true,
      website_mentions_mcp: true,
      website_mentions_x402: true,
      github_stars: 7,
    });
    const down = new EvidenceCollector(new FakeFetcher({}));
    expect(await down.collect(info)).toEqual({
      has_a2a_agent_card: false,
      website_reachable: false,
      website_mentions_mcp: null,
      website_mentions_x402: null,
      github_stars: null,
    });
  });
});
