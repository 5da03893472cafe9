/**
 * The `--hosts` section as apps/bench runs it: measure on `databaseUrl`, write `hosts.md` and
 * `hosts.json` into `out`, and return the Markdown file's path.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type HostsBenchOptions, hostsMarkdown, runHostsBench } from './run.js';

export async function writeHostsSection(out: string, options: HostsBenchOptions): Promise<string> {
  const result = await runHostsBench(options);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'hosts.json'), `${JSON.stringify(result, null, 2)}\n`);
  const file = join(out, 'hosts.md');
  writeFileSync(file, hostsMarkdown(result));
  return file;
}
