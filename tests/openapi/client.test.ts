// An integrator's path: generate TypeScript types from /openapi.json with openapi-typescript, type-check a small
// client against them, run it against a real server, and type-check the real responses it received against the
// generated types (an object literal with a field the types do not declare fails to compile).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import ts from 'typescript';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { ASSESS_TABLES } from '../assess/seed';

jest.setTimeout(120_000);

function typeCheck(dir: string, files: string[]): string[] {
  const program = ts.createProgram(
    files.map((f) => path.join(dir, f)),
    {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      lib: ['lib.es2022.d.ts'],
      types: ['node'],
      typeRoots: [path.resolve(__dirname, '../../node_modules/@types')],
      skipLibCheck: true,
    },
  );
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => `${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe('a client generated from /openapi.json', () => {
  let h: Harness;
  let server: http.Server;
  let base: string;
  let dir: string;

  beforeAll(async () => {
    h = await createHarness();
    await resetTables(h.deps, ASSESS_TABLES);
    server = http.createServer(h.app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-client-'));
    fs.writeFileSync(path.join(dir, 'openapi.json'), await (await fetch(`${base}/openapi.json`)).text());
    await promisify(execFile)(process.execPath, [
      path.resolve(__dirname, '../../node_modules/openapi-typescript/bin/cli.js'),
      path.join(dir, 'openapi.json'),
      '-o',
      path.join(dir, 'kya-api.d.ts'),
    ]);
    fs.copyFileSync(path.join(__dirname, 'client/client.ts'), path.join(dir, 'client.ts'));
  });
  afterAll(async () => {
    server?.close();
    await h?.close();
  });

  it('type-checks the client against the generated types', () => {
    expect(typeCheck(dir, ['client.ts'])).toEqual([]);
  });

  it('runs against the server, and every response it receives type-checks against the generated types', async () => {
    const js = ts.transpileModule(fs.readFileSync(path.join(dir, 'client.ts'), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    });
    fs.writeFileSync(path.join(dir, 'client.js'), js.outputText);
    type Call = Promise<{ ok: boolean; status: number; body: any }>;
    type Client = Record<'assess' | 'createSession' | 'captureWallet', (body: unknown) => Call> &
      Record<'pollSession', (id: string, secret: string) => Call> &
      Record<'listCredentials' | 'health', () => Call> &
      Record<'reputation', (address: string) => Call>;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loads the client compiled above at run time, from a temporary directory
    const { KyaClient } = require(path.join(dir, 'client.js')) as { KyaClient: new (base: string, apiKey?: string) => Client };
    const { apiKey } = await createMerchant(h.deps, { tier: 'paid' });
    const kya = new KyaClient(base, apiKey);

    const allowed = await kya.assess({ address: '0x0000000000000000000000000000000000000001', test: true, policy: { require_kyc: true } });
    const invalid = await kya.assess({ operator_token: 'not-a-credential' });
    const session = await kya.createSession({ product_name: 'Field guide' });
    expect(session.ok).toBe(true);
    const poll = session.ok ? await kya.pollSession(session.body.session_id, session.body.poll_secret) : null;
    const capture = await kya.captureWallet({ operator_token: 'opc_' + 'x'.repeat(30), wallet_address: '0x1234', network: 'evm' });
    const unknown = await kya.reputation('0x' + '7'.repeat(40));
    const health = await kya.health();
    const unauthenticated = await new KyaClient(base).listCredentials();

    expect([allowed, invalid, poll!, capture, unknown, health, unauthenticated].map((r) => [r.ok, r.status])).toEqual([
      [true, 200],
      [false, 400],
      [true, 200],
      [false, 400],
      [false, 404],
      [true, 200],
      [false, 401],
    ]);

    const literal = (v: unknown) => JSON.stringify(v, null, 2);
    const samples = [
      `import type { BodyOf, ApiError } from './client';`,
      `export const allowed: BodyOf<'/v1/assess', 'post', 200> = ${literal(allowed.body)};`,
      `export const invalid: BodyOf<'/v1/assess', 'post', 400> = ${literal(invalid.body)};`,
      `export const session: BodyOf<'/v1/sessions', 'post', 200> = ${literal(session.body)};`,
      `export const poll: BodyOf<'/v1/sessions/{id}', 'get', 200> = ${literal(poll!.body)};`,
      `export const capture: BodyOf<'/v1/credentials/wallets', 'post', 400> = ${literal(capture.body)};`,
      `export const unknown: BodyOf<'/v1/reputation/{address}', 'get', 404> = ${literal(unknown.body)};`,
      `export const health: BodyOf<'/healthz', 'get', 200> = ${literal(health.body)};`,
      `export const unauthenticated: ApiError = ${literal(unauthenticated.body)};`,
    ];
    fs.writeFileSync(path.join(dir, 'responses.ts'), samples.join('\n'));
    expect(typeCheck(dir, ['responses.ts'])).toEqual([]);

    // The check can fail: a field the description does not declare does not compile.
    fs.writeFileSync(
      path.join(dir, 'drifted.ts'),
      `import type { BodyOf } from './client';\nexport const x: BodyOf<'/healthz', 'get', 200> = { status: 'ok', uptime: 1 };\n`,
    );
    expect(typeCheck(dir, ['drifted.ts'])).toEqual([expect.stringContaining("'uptime' does not exist")]);
  });
});
