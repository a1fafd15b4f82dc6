// `npm run bench:profile -- <file.cpuprofile> [requests]`: where a V8 CPU profile's time went, as three tables:
// self time by package or file, self time by function, and inclusive time of the server's own functions. With
// `requests` (the number served while profiling), each row also shows µs per request. Profiles come from
// `BENCH_CPU_PROF=<dir> npm run bench:assess` (or any bench that starts servers through startProcess); they
// include each server's start-up (module loading, sanctions list parsing), which the tables do not separate.
import fs from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const ROOT_PREFIX = /.*\/(dist\/)?(server|middleware|shared)\//;

function frameName(frame: CallFrame): string {
  const where = frame.url.replace(/.*node_modules\//, '').replace(ROOT_PREFIX, (m) => m.replace(/.*\/(dist\/)?/, ''));
  if (!frame.url) return frame.functionName || '(anonymous)';
  return `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
}

function packageOf(frame: CallFrame): string {
  if (!frame.url) return frame.functionName; // (garbage collector), (idle), native writev …
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(frame.url);
  if (pkg) return pkg[1];
  return frame.url.replace(ROOT_PREFIX, (m) => m.replace(/.*\/(dist\/)?/, ''));
}

function main() {
  const [file, requestsArg] = process.argv.slice(2);
  if (!file) {
    console.error('usage: npm run bench:profile -- <file.cpuprofile> [requests]');
    process.exit(2);
  }
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const requests = Number(requestsArg ?? 0);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sampled = new Map<number, number>();
  profile.samples.forEach((id, i) => sampled.set(id, (sampled.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

  const selfByPackage = new Map<string, number>();
  const selfByFunction = new Map<string, number>();
  const inclusiveOwn = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  let total = 0;
  for (const [id, us] of sampled) {
    const node = byId.get(id)!;
    total += us;
    add(selfByPackage, packageOf(node.callFrame), us);
    add(selfByFunction, frameName(node.callFrame), us);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)!.callFrame;
      if (!ROOT_PREFIX.test(frame.url)) continue;
      const name = frameName(frame);
      if (!seen.has(name)) add(inclusiveOwn, name, us);
      seen.add(name);
    }
  }
  const idle = selfByPackage.get('(idle)') ?? 0;
  const busy = total - idle;
  const table = (title: string, m: Map<string, number>, rows: number) => {
    console.log(`\n${title}\n`);
    console.log(`| ms | % of busy |${requests ? ' µs/request |' : ''} where |`);
    console.log(`|---:|---:|${requests ? '---:|' : ''}---|`);
    for (const [name, us] of [...m]
      .filter(([n]) => n !== '(idle)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, rows)) {
      const perRequest = requests ? ` ${(us / requests).toFixed(1)} |` : '';
      console.log(`| ${(us / 1000).toFixed(0)} | ${((100 * us) / busy).toFixed(1)} |${perRequest} ${name} |`);
    }
  };
  console.log(
    `${file}: ${(total / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy${requests ? `, ${(busy / requests).toFixed(0)} µs busy per request` : ''}`,
  );
  table('Self time by package or file', selfByPackage, 30);
  table('Self time by function', selfByFunction, 30);
  table("Inclusive time of kya's own functions", inclusiveOwn, 30);
}

main();
