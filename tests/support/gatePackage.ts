// Builds and packs the @kya/gate workspace and installs the tarball into throwaway projects outside the
// repository (the pack-and-install test and `npm run gate:size` share this). npm prefers its local cache.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const GATE_DIR = path.resolve(__dirname, '../../middleware');
export const BUDGET = { tarballBytes: 150 * 1024, installedBytes: 15 * 1024 * 1024 };
export const ADAPTERS = ['express.ts', 'hono.ts', 'fastify.ts', 'next.ts', 'fetch.ts'] as const;

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
}

/** tsup build of middleware/ into middleware/dist. */
export function buildGate(): void {
  execFileSync('npx', ['tsup', '--silent'], { cwd: GATE_DIR, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** `npm pack` into `dir`; returns the tarball path and its size in bytes. */
export function packGate(dir: string): { tarball: string; bytes: number; files: string[] } {
  const [info] = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], GATE_DIR)) as Array<{
    filename: string;
    size: number;
    files: Array<{ path: string }>;
  }>;
  const tarball = path.join(dir, info.filename);
  return { tarball, bytes: fs.statSync(tarball).size, files: info.files.map((f) => f.path) };
}

/** A fresh project directory outside the repository. */
export function tempProject(name: string, extra: Record<string, unknown> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kya-${name}-`));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `kya-${name}`, version: '1.0.0', private: true, ...extra }, null, 2));
  return dir;
}

/** Installs the tarball (and any other registry packages) into `dir`. */
export function install(dir: string, specs: string[], options: { omitDev?: boolean } = {}): void {
  npm(['install', '--prefer-offline', '--ignore-scripts', ...(options.omitDev ? ['--omit=dev'] : []), ...specs], dir);
}

/** Total size of regular files under `dir` (what the install put on disk). */
export function diskBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += diskBytes(full);
    else if (entry.isFile()) total += fs.statSync(full).size;
  }
  return total;
}

/** Installed size of the gate with its production dependencies, in an empty project. */
export function installedSize(tarball: string): { bytes: number; packages: string[] } {
  const dir = tempProject('gate-size');
  try {
    install(dir, [tarball], { omitDev: true });
    const lock = JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const packages = Object.keys(lock.packages)
      .filter((p) => p.startsWith('node_modules/'))
      .map((p) => p.slice('node_modules/'.length));
    return { bytes: diskBytes(path.join(dir, 'node_modules')), packages };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Non-blank lines of each adapter file. */
export function adapterLines(): Record<string, number> {
  return Object.fromEntries(
    ADAPTERS.map((file) => [
      file,
      fs
        .readFileSync(path.join(GATE_DIR, file), 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '').length,
    ]),
  );
}
