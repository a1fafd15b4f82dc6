// The gate as a merchant gets it: `npm pack`, install the tarball into an empty project outside the repository
// (frameworks from the registry, nothing else from here), then CommonJS require, ESM import, a strict
// TypeScript check of a merchant file, and one gated request per adapter against a live identity server.
// Also holds the size budgets (`npm run gate:size` prints the same figures).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { resetTables } from '../support/harness';
import { ASSESS_TABLES, createOperator, mintCredential } from '../assess/seed';
import { BUDGET, buildGate, install, installedSize, packGate, tempProject } from '../support/gatePackage';
import { startIdentityServer, type IdentityServer } from './support';

const run = promisify(execFile);
const root = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8'));
const dev = (name: string) => `${name}@${root.devDependencies[name] ?? root.dependencies[name]}`;
const SERVER_ONLY = ['@electric-sql/pglite', 'knex', 'pg', 'ioredis', 'bullmq', 'express', 'ethers', 'pino', 'helmet'];

jest.setTimeout(600_000);

describe('@kya/gate installed from its tarball', () => {
  let packDir: string;
  let project: string;
  let pack: ReturnType<typeof packGate>;

  beforeAll(() => {
    buildGate();
    packDir = tempProject('gate-pack');
    pack = packGate(packDir);
    project = tempProject('merchant', { type: 'commonjs' });
    install(project, [
      pack.tarball,
      dev('express'),
      dev('hono'),
      dev('@hono/node-server'),
      dev('fastify'),
      dev('next'),
      dev('react'),
      dev('react-dom'),
      dev('typescript'),
      dev('@types/express'),
      dev('@types/node'),
    ]);
  });
  afterAll(() => {
    for (const dir of [packDir, project]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stays within the size budgets and ships only the build', () => {
    expect(pack.bytes).toBeLessThanOrEqual(BUDGET.tarballBytes);
    expect(pack.files.every((f) => f === 'package.json' || f.startsWith('dist/'))).toBe(true);
    const installed = installedSize(pack.tarball);
    expect(installed.bytes).toBeLessThanOrEqual(BUDGET.installedBytes);
    expect(installed.packages.filter((p) => SERVER_ONLY.includes(p))).toEqual([]);
  });

  it('loads with CommonJS require, every subpath sharing one core', async () => {
    const script = `
      const gate = require('@kya/gate');
      const subpaths = ['express', 'hono', 'fastify', 'next', 'fetch', 'client'].map((s) => [s, require('@kya/gate/' + s)]);
      const g = gate.createGate({ apiKey: 'as_live_x', baseUrl: 'http://127.0.0.1:9' });
      g.close();
      let error; try { require('@kya/gate/hono').kya({ apiKey: 'as_live_x', baseUrl: 'ftp://x' }); } catch (e) { error = e; }
      console.log(JSON.stringify({
        index: ['createGate', 'conditionalGate', 'getGateResult', 'captureWallet', 'GateOptionsError'].every((k) => k in gate),
        subpaths: Object.fromEntries(subpaths.map(([s, m]) => [s, Object.keys(m).sort()])),
        sharedError: error instanceof gate.GateOptionsError,
      }));`;
    const { stdout } = await run('node', ['-e', script], { cwd: project });
    const out = JSON.parse(stdout);
    expect(out.index).toBe(true);
    expect(out.sharedError).toBe(true);
    expect(out.subpaths.express).toEqual(expect.arrayContaining(['createGate', 'conditionalGate', 'getGateResult', 'captureWallet']));
    expect(out.subpaths.hono).toEqual(expect.arrayContaining(['kya', 'getGateResult']));
    expect(out.subpaths.fastify).toEqual(expect.arrayContaining(['kyaFastify', 'kyaPreHandler', 'getGateResult']));
    expect(out.subpaths.next).toEqual(expect.arrayContaining(['withKya', 'kyaMiddleware', 'getGateResult']));
    expect(out.subpaths.fetch).toEqual(expect.arrayContaining(['createFetchGate', 'getGateResult']));
    expect(out.subpaths.client).toEqual(
      expect.arrayContaining([
        'KyaClient',
        'ApiError',
        'QuotaExceededError',
        'RateLimitedError',
        'TokenExpiredError',
        'InvalidCredentialError',
        'PaymentRequiredError',
        'AccountCancelledError',
      ]),
    );
  });

  it('loads with an ESM import', async () => {
    const script = `
      import { createGate } from '@kya/gate';
      import { kya } from '@kya/gate/hono';
      import { kyaFastify } from '@kya/gate/fastify';
      import { withKya } from '@kya/gate/next';
      import { createFetchGate } from '@kya/gate/fetch';
      import { KyaClient, ApiError, RateLimitedError } from '@kya/gate/client';
      const client = new KyaClient({ apiKey: 'as_live_x', baseUrl: 'http://127.0.0.1:9' });
      client.close();
      console.log(JSON.stringify([createGate, kya, kyaFastify, withKya, createFetchGate].map((f) => typeof f).concat(String(RateLimitedError.prototype instanceof ApiError))));`;
    const { stdout } = await run('node', ['--input-type=module', '-e', script], { cwd: project });
    expect(JSON.parse(stdout)).toEqual(['function', 'function', 'function', 'function', 'function', 'true']);
  });

  it('type-checks a merchant file with strict TypeScript (NodeNext)', async () => {
    fs.writeFileSync(path.join(project, 'merchant.ts'), fs.readFileSync(path.join(__dirname, 'package/merchant.ts.txt')));
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['merchant.ts'],
      }),
    );
    await expect(run(path.join(project, 'node_modules/.bin/tsc'), ['-p', '.'], { cwd: project })).resolves.toMatchObject({ stdout: '' });
    // The check can fail: a wrong option name is a type error.
    fs.writeFileSync(
      path.join(project, 'merchant.ts'),
      `import { createGate } from '@kya/gate';\ncreateGate({ apiKey: 'k', baseUrl: 'u', failopen: true });\n`,
    );
    await expect(run(path.join(project, 'node_modules/.bin/tsc'), ['-p', '.'], { cwd: project })).rejects.toMatchObject({
      stdout: expect.stringContaining("'failopen' does not exist"),
    });
  });

  describe('against a live identity server', () => {
    let id: IdentityServer;
    beforeAll(async () => {
      id = await startIdentityServer();
      await resetTables(
        id.h.deps,
        ASSESS_TABLES.filter((t) => t !== 'accounts'),
      );
    });
    afterAll(() => id.close());

    it('gates one request per adapter: the operator token passes, no identity is denied', async () => {
      const { token } = await mintCredential(id.h.deps, await createOperator(id.h.deps));
      fs.writeFileSync(path.join(project, 'adapters.mjs'), fs.readFileSync(path.join(__dirname, 'package/adapters.mjs.txt')));
      const { stdout } = await run('node', ['adapters.mjs'], {
        cwd: project,
        env: { ...process.env, KYA_BASE_URL: id.baseUrl, KYA_API_KEY: id.apiKey, KYA_TOKEN: token },
      });
      const out = JSON.parse(stdout) as Record<string, { body: { handle: string; viaReq?: string } }>;
      expect(Object.keys(out)).toEqual(['express', 'hono', 'fastify', 'next', 'fetch']);
      for (const result of Object.values(out)) {
        expect(result).toMatchObject({ allowed: 200, body: { handle: expect.stringMatching(/^oph_/) }, denied: 403, code: 'identity_required' });
      }
      expect(out.express.body.viaReq).toBe(out.express.body.handle);
    });
  });
});
