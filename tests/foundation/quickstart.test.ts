// docs/quickstart.md and the README's five-minute tour as a test: a fresh `npm run demo` (new data directory)
// and the example merchant, then every `curl` block of either page that is followed by a JSON block is run
// with bash exactly as written
// (localhost:3000 / :4000 pointed at this test's ports, the printed key and token exported) and its answer
// compared with the documented one. In the documented JSON "…" is a wildcard: a string containing it matches
// any text in its place, the value "…" matches anything, and a "…" key allows keys the page leaves out.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { ROOT, baseEnv, killStrayServers, run, startServer, type ServerProcess } from '../support/processes';
import { freePort } from '../support/net';

jest.setTimeout(180_000);

const DOC = fs.readFileSync(path.join(ROOT, 'docs/quickstart.md'), 'utf8');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

interface Example {
  command: string;
  expected: unknown;
}

/** Each ```sh block whose first line is a curl command, with the ```json block right after it. */
function examples(markdown: string): Example[] {
  const blocks = [...markdown.matchAll(/```(\w*)\n([\s\S]*?)```\s*/g)].map((m) => ({ lang: m[1], body: m[2], end: m.index + m[0].length, start: m.index }));
  const out: Example[] = [];
  for (let i = 0; i + 1 < blocks.length; i++) {
    const [a, b] = [blocks[i], blocks[i + 1]];
    if (a.lang === 'sh' && a.body.startsWith('curl ') && b.lang === 'json' && b.start === a.end)
      out.push({ command: a.body.trim(), expected: JSON.parse(b.body) });
  }
  return out;
}

const ELLIPSIS = '…';

function matches(expected: unknown, actual: unknown, at = '$'): string[] {
  if (expected === ELLIPSIS) return [];
  if (typeof expected === 'string' && expected.includes(ELLIPSIS)) {
    const re = new RegExp(
      `^${expected
        .split(ELLIPSIS)
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[\\s\\S]*')}$`,
    );
    return typeof actual === 'string' && re.test(actual) ? [] : [`${at}: ${JSON.stringify(actual)} does not match ${JSON.stringify(expected)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return [`${at}: ${JSON.stringify(actual)} is not an array of ${expected.length}`];
    return expected.flatMap((e, i) => matches(e, actual[i], `${at}[${i}]`));
  }
  if (expected && typeof expected === 'object') {
    if (!actual || typeof actual !== 'object' || Array.isArray(actual)) return [`${at}: ${JSON.stringify(actual)} is not an object`];
    const exp = expected as Record<string, unknown>;
    const act = actual as Record<string, unknown>;
    const open = ELLIPSIS in exp;
    const problems = Object.keys(exp)
      .filter((k) => k !== ELLIPSIS)
      .flatMap((k) => (k in act ? matches(exp[k], act[k], `${at}.${k}`) : [`${at}.${k}: missing`]));
    if (!open) for (const k of Object.keys(act)) if (!(k in exp)) problems.push(`${at}.${k}: not documented`);
    return problems;
  }
  return Object.is(expected, actual) ? [] : [`${at}: ${JSON.stringify(actual)} instead of ${JSON.stringify(expected)}`];
}

describe('docs/quickstart.md on a fresh demo', () => {
  let demo: ServerProcess;
  let shop: ReturnType<typeof spawn> | null = null;
  let env: NodeJS.ProcessEnv;
  let ports: { api: number; shop: number };
  let banner: string;

  beforeAll(async () => {
    ports = { api: await freePort(), shop: await freePort() };
    const dataDir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'quickstart-'));
    demo = startServer(
      baseEnv({ DATA_DIR: dataDir, PORT: String(ports.api), HOST: '127.0.0.1', PUBLIC_BASE_URL: 'http://localhost:3000' }),
      'server/cli/demo.ts',
    );
    await demo.waitFor(/OPERATOR_TOKEN=opc_\S+[\s\S]*={72}\n/, 120_000);
    banner = demo.output();
    const key = /KYA_API_KEY=(as_live_\S+)/.exec(banner)![1];
    const token = /OPERATOR_TOKEN=(opc_\S+)/.exec(banner)![1];
    env = baseEnv({ KYA_API_KEY: key, OPERATOR_TOKEN: token });
    shop = spawn(process.execPath, ['--import', 'tsx', 'middleware/examples/merchant.ts'], {
      cwd: ROOT,
      env: baseEnv({ KYA_API_KEY: key, KYA_BASE_URL: `http://127.0.0.1:${ports.api}`, PORT: String(ports.shop) }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      shop!.stdout!.on('data', (d: Buffer) => d.toString().includes('example shop on') && resolve());
      shop!.on('exit', (code) => reject(new Error(`example merchant exited with ${code}`)));
    });
  });

  afterAll(async () => {
    shop?.kill('SIGTERM');
    demo?.kill('SIGTERM');
    await demo?.exited;
    killStrayServers();
  });

  test('the banner prints the documented public demo wallets and the sanctioned signer', () => {
    const documented = /```\n(=+\n kya demo[\s\S]*?=+)\n```/.exec(DOC)![1];
    const lines = (text: string) =>
      text
        .split('\n')
        .filter((l) => /wallet|signer|kya demo at/.test(l) && !/^ sanctions /.test(l))
        .map((l) => l.replace(/http:\/\/localhost:\d+/, 'http://localhost:3000'));
    expect(lines(banner)).toEqual(lines(documented));
  });

  test('the walk-through has the examples this test runs', () => {
    expect(examples(DOC).map((e) => /curl -s (?:-X POST )?(\S+)/.exec(e.command)![1])).toEqual([
      'localhost:3000/healthz',
      'localhost:3000/v1/assess',
      'localhost:3000/v1/assess',
      'localhost:3000/v1/reputation/0x4123f7a6a293dbd3e3d04049c8c86e3ddaf64b9f',
      'localhost:3000/v1/reputation/0xadad2744de61efa81f320d0b8fdf4f69ab8bb1b8',
      'localhost:4000/buy/grinder',
      'localhost:4000/buy/grinder',
    ]);
  });

  test('the README has the examples this test runs', () => {
    expect(examples(README).map((e) => /curl -s (?:-X POST )?(\S+)/.exec(e.command)![1])).toEqual([
      'http://localhost:3000/v1/assess',
      'http://localhost:3000/v1/assess',
      'http://localhost:3000/v1/sessions',
    ]);
  });

  const all = [...examples(DOC).map((e, i) => [`quickstart ${i + 1}`, e] as const), ...examples(README).map((e, i) => [`README ${i + 1}`, e] as const)];
  test.each(all.map(([name, e]) => [name, e.command.split('\n')[0], e] as const))('%s answers as documented: %s', async (_name, _title, example) => {
    const command = example.command.replaceAll('localhost:3000', `127.0.0.1:${ports.api}`).replaceAll('localhost:4000', `127.0.0.1:${ports.shop}`);
    const r = await run('bash', ['-c', command], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const problems = matches(example.expected, JSON.parse(r.stdout));
    expect(problems).toEqual([]);
  });
});
