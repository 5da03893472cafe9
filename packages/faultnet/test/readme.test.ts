/**
 * The README's and the guides' TypeScript examples compile against the packages as built: every
 * ```ts block of README.md and docs/guides/*.md is written to a module of its own under
 * `.cache/readme-blocks/` (git-ignored) and type-checked with the repository's compiler settings. A
 * renamed option or export breaks this test, not a reader's first run. And every relative link of
 * README.md, docs/*.md and docs/guides/*.md names a file that exists, and a heading or `<a id>` of it
 * when it has a `#fragment` (the docs site, `pnpm docs:build`, checks them again with TypeDoc).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
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

/** The guides: docs/guides/*.md, as repository paths. */
const guides = readdirSync(join(repo, 'docs', 'guides'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/guides/${f}`);

/** GitHub's anchor of a heading: lower case, inline code and links unwrapped, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a markdown file: its headings' (repeats get -1, -2 …) and every `<a id="…">` / `<a name="…">`. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.trimStart().startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1] as string);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] as string);
  }
  return anchors;
}

/** Relative links of a markdown file outside code (fenced blocks and inline code spans), with their line. */
function relativeLinks(markdown: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  let fenced = false;
  for (const [i, line] of markdown.split('\n').entries()) {
    if (line.trimStart().startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const text = line.replace(/`[^`]*`/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] as string;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      links.push({ line: i + 1, target });
    }
  }
  return links;
}

/** Files a link may name that the suite writes during its run (`recordEnv`), so they may be absent before it. */
const WRITTEN_BY_THE_SUITE: ReadonlySet<string> = new Set(['evidence/env.txt']);

describe('README and guides', () => {
  it('every relative link of README.md, docs/*.md and docs/guides/*.md resolves to a file and an anchor in it', () => {
    const docs = readdirSync(join(repo, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`);
    const files = ['README.md', ...docs, ...guides];
    expect(guides).toEqual(expect.arrayContaining(['docs/guides/deploy.md', 'docs/guides/alerting.md']));
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      const markdown = readFileSync(join(repo, file), 'utf8');
      for (const { line, target } of relativeLinks(markdown)) {
        checked += 1;
        const [path = '', fragment] = target.split('#');
        const absolute = path === '' ? join(repo, file) : resolve(repo, dirname(file), decodeURIComponent(path));
        // evidence/env.txt is written by the suite itself, and `.ci/run` deletes it before each pass.
        if (!existsSync(absolute) && !WRITTEN_BY_THE_SUITE.has(relative(repo, absolute))) {
          broken.push(`${file}:${line} ${target}: no file ${relative(repo, absolute)}`);
          continue;
        }
        if (!existsSync(absolute)) continue;
        if (fragment !== undefined && fragment !== '' && absolute.endsWith('.md') && !anchorsOf(readFileSync(absolute, 'utf8')).has(fragment)) {
          broken.push(`${file}:${line} ${target}: no heading or <a id> '${fragment}' in ${relative(repo, absolute)}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it('every ```ts block of README.md and docs/guides/*.md type-checks against the built packages', () => {
    const readme = tsBlocks(readFileSync(join(repo, 'README.md'), 'utf8'));
    const fromGuides = guides.flatMap((g) => tsBlocks(readFileSync(join(repo, g), 'utf8')).map((b) => ({ ...b, name: `${g.slice('docs/guides/'.length, -3)}-line-${b.line}` })));
    expect(fromGuides.length).toBeGreaterThanOrEqual(5);
    const all = [...readme.map((b) => ({ ...b, name: `readme-line-${b.line}` })), ...fromGuides];
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
    expect(blocks.length).toBeGreaterThanOrEqual(9);
    rmSync(outDir, { recursive: true, force: true });
    mkdirSync(outDir, { recursive: true });
    const files = blocks.map((b) => {
      const file = join(outDir, `${b.name}.ts`);
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
