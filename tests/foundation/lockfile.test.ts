// package-lock.json is written in npm's own key order, by npm and by `npm run lockfile:repair` alike, so
// `npm install` on a fresh clone leaves it byte-for-byte unchanged.
import fs from 'node:fs';
import path from 'node:path';
import { stringifyLikeNpm } from '../support/lockfile-optional';
import { ROOT, baseEnv, run } from '../support/processes';

const LOCKFILE = path.join(ROOT, 'package-lock.json');

describe('package-lock.json key order', () => {
  test('the committed lockfile is already in the order npm writes', () => {
    const text = fs.readFileSync(LOCKFILE, 'utf8');
    expect(stringifyLikeNpm(JSON.parse(text))).toBe(text);
  });

  test('an entry written in any order comes out as npm writes it: preferred keys, then scalars by name, then objects', () => {
    const entry = {
      optional: true,
      os: ['darwin'],
      engines: { node: '>=10' },
      dev: true,
      cpu: ['arm64'],
      license: 'MIT',
      integrity: 'sha512-x',
      libc: ['glibc'],
      version: '1.0.0',
    };
    const out = stringifyLikeNpm({
      packages: { 'node_modules/b': entry, '': { name: 'kya' }, 'node_modules/a': { version: '2.0.0' } },
      lockfileVersion: 3,
      name: 'kya',
    });
    const parsed = JSON.parse(out);
    expect(Object.keys(parsed)).toEqual(['name', 'lockfileVersion', 'packages']);
    expect(Object.keys(parsed.packages)).toEqual(['', 'node_modules/a', 'node_modules/b']);
    expect(Object.keys(parsed.packages['node_modules/b'])).toEqual(['version', 'integrity', 'cpu', 'dev', 'libc', 'license', 'optional', 'os', 'engines']);
  });

  test('lockfile:repair on the committed lockfile changes nothing', async () => {
    const copy = path.join(process.env.TMPDIR ?? '/tmp', `lock-${process.pid}.json`);
    fs.copyFileSync(LOCKFILE, copy);
    const r = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['tests/support/lockfile-optional.ts', copy], baseEnv());
    expect(r.stdout).toBe('0 optional entries added\n');
    expect(fs.readFileSync(copy, 'utf8')).toBe(fs.readFileSync(LOCKFILE, 'utf8'));
    fs.rmSync(copy);
  });
});
