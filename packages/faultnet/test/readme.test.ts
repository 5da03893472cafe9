/**
 * The README's TypeScript examples compile against the packages as built: every ```ts block is
 * written to a module of its own under `.cache/readme-blocks/` (git-ignored) and type-checked with the
 * repository's compiler settings. A renamed option or export breaks this test, not a reader's first run.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '..', '..', '..');
const outDir = resolve(import.meta.dirname, '..', '.cache', 'readme-blocks');

/**
 * A ```ts block right after a line `<!-- readme-check: <path> … -->` is a fragment that needs the
 * ORM packages and a schema of the reader's (Prisma's generated client): it is checked by the file
 * named there, as a whole module, instead of here.
 */
const CHECKED_ELSEWHERE = /^<!-- readme-check: (\S+) .*-->$/;

/** The ```ts blocks of `markdown`, with the line each starts on (1-based), and where a block is checked if not here. */
function tsBlocks(markdown: string): { line: number; code: string; checkedIn: string | null }[] {
  const blocks: { line: number; code: string; checkedIn: string | null }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    if (lines[i]?.trim() !== '```ts') continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end]?.trim() !== '```') end += 1;
    const checkedIn = CHECKED_ELSEWHERE.exec(lines[i - 1]?.trim() ?? '')?.[1] ?? null;
    blocks.push({ line: start + 1, code: lines.slice(start, end).join('\n'), checkedIn });
    i = end;
  }
  return blocks;
}

describe('README examples', () => {
  it('every ```ts block of README.md type-checks against the built packages', () => {
    const all = tsBlocks(readFileSync(join(repo, 'README.md'), 'utf8'));
    // A block checked elsewhere must name a file that exists and holds the block's own imports.
    for (const b of all.filter((x) => x.checkedIn !== null)) {
      const other = readFileSync(join(repo, b.checkedIn as string), 'utf8');
      const imports = b.code.split('\n').filter((l) => l.startsWith('import ') && !l.includes('./generated/'));
      expect(imports.length, `README line ${b.line}`).toBeGreaterThan(0);
      for (const line of imports) {
        const from = /from '([^']+)'/.exec(line)?.[1] ?? '';
        // Inside its own package the file imports the ORM entry `@postpone/postgres/<orm>` from its
        // source, `../../src/orm/<orm>.js` (the test sits in packages/postgres/test/orm/).
        const own = /^@postpone\/postgres\/(kysely|drizzle|knex|prisma)$/.exec(from);
        const expected = own ? `'../../src/orm/${own[1]}.js'` : `'${from}'`;
        expect(other, `README line ${b.line}: ${b.checkedIn} imports ${expected}`).toContain(expected);
      }
    }
    const blocks = all.filter((b) => b.checkedIn === null);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    rmSync(outDir, { recursive: true, force: true });
    mkdirSync(outDir, { recursive: true });
    const files = blocks.map((b) => {
      const file = join(outDir, `readme-line-${b.line}.ts`);
      // Each block is a module of its own (top-level await needs one); `export {}` makes it one.
      writeFileSync(file, `${b.code}\nexport {};\n`);
      return file;
    });
    const base = ts.readConfigFile(join(repo, 'tsconfig.base.json'), ts.sys.readFile);
    const parsed = ts.parseJsonConfigFileContent(base.config, ts.sys, repo);
    const program = ts.createProgram(files, { ...parsed.options, noEmit: true, declaration: false, declarationMap: false, sourceMap: false });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file && d.start !== undefined ? `${d.file.fileName.slice(outDir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(problems).toEqual([]);
  }, 60_000);
});
