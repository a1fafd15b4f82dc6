// Every relative link in README.md and docs/ resolves: the file exists and, when the link has an anchor, the
// target has a heading with that GitHub-style slug. Nothing is tolerated: a linked document missing from the
// tree fails here, naming the link.
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const FILES = [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** Links outside code: [text](target) and ![alt](target). */
function linksOf(markdown: string): string[] {
  const text = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

describe('documentation links', () => {
  it.each(FILES)('every relative link and anchor in %s resolves', (file) => {
    const source = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const broken: string[] = [];
    for (const link of linksOf(source)) {
      if (/^[a-z]+:/i.test(link)) continue; // http(s), mailto: not checked here
      const [target, anchor] = link.split('#');
      const resolved = target ? path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(target)) : path.join(ROOT, file);
      if (!fs.existsSync(resolved)) {
        broken.push(`${link}: ${path.relative(ROOT, resolved)} does not exist`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !anchorsOf(fs.readFileSync(resolved, 'utf8')).has(anchor)) {
        broken.push(`${link}: no heading #${anchor} in ${path.relative(ROOT, resolved)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README stays short enough to read on a few screens', () => {
    expect(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(300);
  });
});
