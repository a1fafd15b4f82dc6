// Repairs package-lock.json after `npm install` on this project's machines. Their registry mirror does not
// carry every platform build of packages that ship native binaries (@swc/core-darwin-*, @msgpackr-extract/
// *-win32-*, …), so npm leaves those optional dependencies out of the lockfile and `npm ci` then refuses it
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
    const meta = JSON.parse(out);
    return Array.isArray(meta) ? meta[meta.length - 1] : meta;
  } catch {
    return null;
  }
}

/** os/cpu/libc from a platform package name such as `@swc/core-linux-arm-gnueabihf` or `…-win32-ia32-msvc`. */
function fromName(name: string, range: string): Info {
  const match = /-(darwin|linux|win32|freebsd|android)-(x64|arm64|arm|ia32|ppc64|s390x|riscv64)(?:-(gnu|musl|gnueabihf|msvc))?$/.exec(name);
  if (!match) throw new Error(`${name}@${range} is not in the registry and its platform cannot be read from its name`);
  const info: Info = { version: range.replace(/^[~^=]/, ''), os: [match[1]], cpu: [match[2]] };
  if (match[3] === 'gnu' || match[3] === 'gnueabihf') info.libc = ['glibc'];
  if (match[3] === 'musl') info.libc = ['musl'];
  return info;
}

const file = path.resolve(__dirname, '../../package-lock.json');
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
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`${added} optional entr${added === 1 ? 'y' : 'ies'} added`);
