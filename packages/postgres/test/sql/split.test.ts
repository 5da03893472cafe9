/**
 * `splitStatements`: a migration script into single statements (one per query, as Citus and the
 * extended protocol need), never splitting inside a string, identifier, comment or dollar body. The
 * last case runs every migration split against a real PostgreSQL and compares the catalog with the
 * same migrations sent whole.
 */
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DEPENDENCY_FLAG_MIGRATION_VERSION, FINISH_HANDOFF_MIGRATION_VERSION, KEY_LIMIT_MIGRATION_VERSION, migrationStatements, migrations, statements } from '../../src/sql/index.js';
import { SqlSplitError, splitStatements } from '../../src/sql/split.js';
import { BATCH_CLOCK_MIGRATION_VERSION } from '../../src/sql/batch-clock-sql.js';
import { KEY_RATE_MIGRATION_VERSION } from '../../src/sql/key-rate-sql.js';

describe('splitStatements', () => {
  it('splits on top-level semicolons, trims, drops empty statements', () => {
    expect(splitStatements('select 1; select 2;\n\n ;select 3')).toEqual(['select 1', 'select 2', 'select 3']);
    expect(splitStatements('')).toEqual([]);
    expect(splitStatements(' ;; -- only a comment\n; /* and another */ ;')).toEqual([]);
  });

  it('keeps semicolons inside strings, E-strings, identifiers and comments', () => {
    expect(splitStatements("select 'a;b', 'it''s;'; select 2")).toEqual(["select 'a;b', 'it''s;'", 'select 2']);
    expect(splitStatements("select E'x\\';y'; select 2")).toEqual(["select E'x\\';y'", 'select 2']);
    // Outside an E-string a backslash is an ordinary character: the string ends at the next quote.
    expect(splitStatements("select 'x\\'; select 2")).toEqual(["select 'x\\'", 'select 2']);
    expect(splitStatements('select 1 as "a;""b"; select 2')).toEqual(['select 1 as "a;""b"', 'select 2']);
    expect(splitStatements('select 1 -- no; split\n; select 2')).toEqual(['select 1 -- no; split', 'select 2']);
    expect(splitStatements('select /* a; /* nested; */ still; */ 1; select 2')).toEqual(['select /* a; /* nested; */ still; */ 1', 'select 2']);
  });

  it('keeps dollar-quoted bodies whole, with or without a tag, and tells them from $1 and a$b', () => {
    const fn = `create function f() returns int language plpgsql as $fn$
begin
  perform 1; -- inner
  return $$x;$$::text::int;
end
$fn$`;
    expect(splitStatements(`${fn};\ndo $$ begin perform 1; end $$;\nselect $1::int, a$b from t`)).toEqual([
      fn,
      'do $$ begin perform 1; end $$',
      'select $1::int, a$b from t',
    ]);
    // A different tag inside does not close the body.
    expect(splitStatements('do $a$ begin raise notice $b$;$b$; end $a$; select 1')).toEqual(['do $a$ begin raise notice $b$;$b$; end $a$', 'select 1']);
  });

  it('throws SqlSplitError with the offset for what never ends, and for BEGIN ATOMIC', () => {
    const cases: Array<[string, number]> = [
      ["select 'abc", 7],
      ['select "abc', 7],
      ['select /* a /* b */ c', 7],
      ['do $x$ begin end $y$', 3],
      ['create function f() returns int begin atomic select 1; end', 32],
    ];
    for (const [sql, offset] of cases) {
      let caught: unknown;
      try {
        splitStatements(sql);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(SqlSplitError);
      expect((caught as SqlSplitError).offset).toBe(offset);
    }
  });

  it('splits every migration into statements that hold no top-level semicolon (counts per version)', () => {
    const counts = migrations('postpone').map((m) => [m.version, splitStatements(m.sql).length]);
    expect(counts).toEqual([
      [1, 4],
      [2, 2],
      [3, 2],
      [4, 5],
      [5, 1],
      [6, 2],
      [7, 3],
      [8, 1],
      [9, 1],
      [10, 4],
      [11, 17],
      [12, 3],
      [13, 2],
      [14, 5],
      [15, 1],
      [16, 1],
      [17, 1],
      [18, 6],
      [KEY_LIMIT_MIGRATION_VERSION, 3],
      [20, 6],
      [21, 6],
      [BATCH_CLOCK_MIGRATION_VERSION, 4],
      [KEY_RATE_MIGRATION_VERSION, 3],
      [DEPENDENCY_FLAG_MIGRATION_VERSION, 6],
      [FINISH_HANDOFF_MIGRATION_VERSION, 9],
    ]);
    for (const m of migrations('postpone')) {
      for (const one of splitStatements(m.sql)) expect(splitStatements(one)).toEqual([one]);
    }
  });
});

describe('migrations split, on a real PostgreSQL', () => {
  const whole = uniqueSchemaName('split_whole');
  const split = uniqueSchemaName('split_each');
  afterAll(async () => {
    await dropSchema(testDatabaseUrl(), whole);
    await dropSchema(testDatabaseUrl(), split);
  });

  /** Columns, constraints and indexes of `schema`'s tables, with the schema name taken out. */
  async function catalog(client: pg.Client, schema: string): Promise<string[]> {
    const { rows } = await client.query<{ line: string }>(
      `select format('col %s.%s %s %s %s', c.table_name, c.column_name, c.data_type, c.is_nullable, coalesce(c.column_default, '')) as line
         from information_schema.columns c where c.table_schema = $1
       union all
       select format('con %s %s', conname, pg_get_constraintdef(oid)) from pg_constraint where connamespace = $1::regnamespace
       union all
       select format('idx %s', indexdef) from pg_indexes where schemaname = $1
       union all
       select format('rel %s %s %s', relname, relkind, coalesce(array_to_string(reloptions, ','), '')) from pg_class where relnamespace = $1::regnamespace
       union all
       select format('fn %s %s', proname, prosrc) from pg_proc where pronamespace = $1::regnamespace
       order by 1`,
      [schema],
    );
    return rows.map((r) => r.line.replaceAll(schema, 'S'));
  }

  it('gives the same catalog as the migrations sent whole (simple query protocol)', async () => {
    const client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    try {
      const dialectDetected = (await client.query(`select count(*)::int as n from pg_extension where extname = 'citus'`)).rows[0].n > 0;
      for (const [schema, each] of [
        [whole, false],
        [split, true],
      ] as const) {
        if (dialectDetected && !each) continue; // Citus refuses the whole texts (42601) once the schema is distributed.
        await client.query('begin');
        await client.query(statements(schema).migrationQuiet);
        await client.query(statements(schema).schemaCreate);
        for (const m of migrations(schema)) {
          // On Citus (where a distributed schema refuses a few of the texts) with the dialect's rewrites.
          if (each) for (const one of migrationStatements(m, schema, dialectDetected ? 'citus' : 'postgres')) await client.query(one);
          else await client.query(m.sql);
        }
        await client.query('commit');
      }
      const b = await catalog(client, split);
      expect(b.length).toBeGreaterThan(40);
      if (!dialectDetected) expect(b).toEqual(await catalog(client, whole));
    } finally {
      await client.end();
    }
  });
});
