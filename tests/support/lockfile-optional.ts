// Repairs package-lock.json after `npm install` from a registry that does not carry every platform build of
// packages that ship native binaries (@swc/core-darwin-*, @msgpackr-extract/*-win32-*, …): npm then leaves those optional dependencies out of the lockfile and `npm ci` then refuses it
// ("Missing: … from lock file"). This adds each missing optional entry — exact version plus os/cpu/libc,
// from the registry when it has the package, else from the platform triple in its name — so `npm ci` knows it
// and skips it on any platform it does not fit (those builds are never downloaded here).
// Run `npm run lockfile:repair` after changing dependencies; `.ci/run` then installs with `npm ci`.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
  dev?: boolean;
  [key: string]: unknown;
}

type Info = Record<string, unknown> & { version: string };

function fromRegistry(name: string, range: string): Info | null {
  try {
    const out = execFileSync('npm', ['view', `${name}@${range}`, 'version', 'dist.integrity', 'os', 'cpu', 'libc', 'license', 'engines', '--json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const meta = JSON.parse(out) as Info | Info[];
    return Array.isArray(meta) ? meta[meta.length - 1] : meta;
  } catch {
    return null;
  }
}

/** os/cpu/libc from a platform package name such as `@swc/core-linux-arm-gnueabihf` or `…-win32-ia32-msvc`. */
function fromName(name: string, range: string): Info {
  const match =
    /-(darwin|linux|win32|freebsd|openbsd|netbsd|android|openharmony|sunos|aix)-(x64|arm64|arm|ia32|ppc64|s390x|riscv64|loong64|mips64el)(?:-(gnu|musl|gnueabihf|musleabihf|msvc|eabi))?$/.exec(
      name,
    );
  if (!match) throw new Error(`${name}@${range} is not in the registry and its platform cannot be read from its name`);
  const info: Info = { version: range.replace(/^[~^=]/, ''), os: [match[1]], cpu: [match[2]] };
  if (match[3] === 'gnu' || match[3] === 'gnueabihf') info.libc = ['glibc'];
  if (match[3] === 'musl' || match[3] === 'musleabihf') info.libc = ['musl'];
  return info;
}

// npm writes package-lock.json with its own key order (json-stringify-nice with npm's preferred keys): at
// every level scalars and arrays before objects, the preferred keys first in their order, the rest by 'en'
// locale compare. Writing anything else makes the next `npm install` reorder keys, so a fresh clone shows a diff.
const NPM_KEY_ORDER = ['name', 'version', 'lockfileVersion', 'resolved', 'integrity', 'requires', 'packages', 'dependencies'];

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function compareKeys(a: string, b: string): number {
  const ia = NPM_KEY_ORDER.indexOf(a);
  const ib = NPM_KEY_ORDER.indexOf(b);
  if (ia >= 0 && ib >= 0) return ia - ib;
  if (ia >= 0) return -1;
  if (ib >= 0) return 1;
  return a.localeCompare(b, 'en');
}

export function stringifyLikeNpm(data: unknown): string {
  const replacer = (_key: string, value: unknown): unknown => {
    if (!isObject(value)) return value;
    const entries = Object.entries(value).sort(([ak, av], [bk, bv]) => (isObject(av) === isObject(bv) ? compareKeys(ak, bk) : isObject(av) ? 1 : -1));
    return Object.fromEntries(entries);
  };
  return JSON.stringify(data, replacer, 2) + '\n';
}

function main(): void {
  const file = path.resolve(process.argv[2] ?? path.join(__dirname, '../../package-lock.json'));
  const lock = JSON.parse(fs.readFileSync(file, 'utf8')) as { packages: Record<string, LockEntry> };
  let added = 0;
  for (const [location, entry] of Object.entries(lock.packages)) {
    for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
      const parent = location ? `${location}/node_modules/${name}` : `node_modules/${name}`;
      if (lock.packages[parent] || lock.packages[`node_modules/${name}`]) continue;
      const info = fromRegistry(name, range) ?? fromName(name, range);
      const record: LockEntry = { version: info.version };
      if (info['dist.integrity']) record.integrity = info['dist.integrity'];
      if (entry.dev) record.dev = true;
      record.optional = true;
      for (const key of ['cpu', 'os', 'libc', 'license', 'engines'] as const) if (info[key] !== undefined) record[key] = info[key];
      lock.packages[`node_modules/${name}`] = record;
      added++;
      console.log(`added ${name}@${info.version}`);
    }
  }
  fs.writeFileSync(file, stringifyLikeNpm(lock));
  console.log(`${added} optional entr${added === 1 ? 'y' : 'ies'} added`);
}

if (require.main === module) main();
