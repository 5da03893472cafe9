/**
 * Sums up the V8 CPU profiles (`.cpuprofile`, Chrome DevTools format: `nodes` with `callFrame` and
 * `hitCount`-free `samples`/`timeDeltas`) that worker processes wrote under `node --cpu-prof`
 * (`POSTPONE_BENCH_CPU_PROF=dir pnpm bench --only throughput …`): self time per function and per
 * package (the `node_modules/<name>` or `packages/<name>` of its script; `node:` for Node.js's
 * own, `(v8)` for the engine's: GC, program, idle), over every profile of the folder whose file name
 * contains `filter` (all when none).
 *
 *   node apps/bench/dist/report/cpu-profile.js DIR [filter] [top=25]
 *
 * Prints two tables: packages by self time, then the top functions; times in ms and percent of the
 * non-idle total.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The package a script belongs to, from its URL. */
export function packageOf(url: string): string {
  if (url === '') return '(v8)';
  if (url.startsWith('node:')) return 'node:';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(url);
  if (modules) return modules[1] as string;
  const own = /\/(packages|apps)\/([^/]+)\//.exec(url);
  if (own) return `@postpone/${own[2]}`;
  return url;
}

/** Self time in µs per node id of one profile (each sample's delta goes to the node it sampled). */
export function selfTimes(profile: Profile): Map<number, number> {
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] as number;
    self.set(id, (self.get(id) ?? 0) + Math.max(0, profile.timeDeltas[i] ?? 0));
  }
  return self;
}

function main(): void {
  const [dir, filter = '', topText = '25'] = process.argv.slice(2);
  if (dir === undefined) throw new Error('usage: cpu-profile.js DIR [filter] [top]');
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let idle = 0;
  let files = 0;
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && f.includes(filter))) {
    files += 1;
    const profile = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Profile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    for (const [id, us] of selfTimes(profile)) {
      const frame = nodes.get(id)?.callFrame;
      if (frame === undefined) continue;
      if (frame.functionName === '(idle)') {
        idle += us;
        continue;
      }
      const pkg = packageOf(frame.url);
      byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
      const key = `${frame.functionName || '(anonymous)'} ${pkg}${frame.url.startsWith('node:') ? ` ${frame.url}` : ''}:${frame.lineNumber + 1}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    }
  }
  const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
  const row = (label: string, us: number) => `| ${label} | ${(us / 1000).toFixed(0)} | ${((100 * us) / total).toFixed(1)} % |`;
  console.log(`${files} profiles, ${(total / 1000).toFixed(0)} ms busy, ${(idle / 1000).toFixed(0)} ms idle\n`);
  console.log('| package | self ms | share |\n| --- | ---: | ---: |');
  for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(row(pkg, us));
  console.log('\n| function | self ms | share |\n| --- | ---: | ---: |');
  for (const [fn, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(topText))) console.log(row(fn.replaceAll('|', '\\|'), us));
}

main();
