/**
 * The built command line (`dist/main.js`) without a database: `--list` names every section and
 * group (also behind the `--` that `pnpm bench` and `pnpm … start --` pass on), and an unknown
 * section is refused before any server starts.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SECTION_GROUPS, SECTIONS } from '../src/report/config.js';
import { describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 30_000 });

describe('postpone-bench', () => {
  it('lists every section and group', () => {
    const r = run('--list');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`sections: ${SECTIONS.join(', ')}`);
    for (const [group, sections] of Object.entries(SECTION_GROUPS)) expect(r.stdout).toContain(`${group}: ${sections.join(', ')}`);
    expect(run('--', '--', '--list').stdout).toBe(r.stdout);
  });

  it('refuses an unknown section before starting a server', () => {
    const r = run('--only', 'nope');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/unknown section "nope"/);
  });
});
